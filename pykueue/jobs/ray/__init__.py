"""The KubeRay integrations (upstream's ``pkg/controller/jobs/{rayjob,raycluster,rayservice}``):
``workload.py`` (the Workloads), ``generic.py`` (the GenericJobs), ``webhook.py``."""

from pykueue.jobs.integration import Integration, Reading
from pykueue.jobs.ray import workload

_READING = Reading(workload.validate, workload.workloads, workload.template_paths, workload.priority_class_path)
INTEGRATIONS = (
    Integration("ray.io/rayjob", "ray.io", "RayJob", reading=_READING),
    Integration("ray.io/raycluster", "ray.io", "RayCluster", owns_pods=True, reading=_READING),
    Integration("ray.io/rayservice", "ray.io", "RayService", reading=_READING),
)
