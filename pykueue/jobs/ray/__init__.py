"""The KubeRay integrations (upstream's ``pkg/controller/jobs/{rayjob,raycluster,rayservice}``):
``workload.py`` (the Workloads), ``generic.py`` (the GenericJobs), ``webhook.py``."""

from pykueue.jobs.integration import Integration, Reading
from pykueue.jobs.ray import workload
from pykueue.kube import resources as r

KUBERAY = "ray.io/kuberay-operator"  # a RayJob's and a RayCluster's own controller (spec.managedBy)
_READING = Reading(workload.validate, workload.workloads, workload.template_paths, workload.priority_class_path,
                   queued=workload.is_managed)
INTEGRATIONS = (
    Integration("ray.io/rayjob", r.RAY_JOB, own_controller=KUBERAY, reading=_READING),
    Integration("ray.io/raycluster", r.RAY_CLUSTER, owns_pods=True, own_controller=KUBERAY, reading=_READING),
    Integration("ray.io/rayservice", r.RAY_SERVICE, reading=_READING),
)
