"""The KubeRay integrations (upstream's ``pkg/controller/jobs/{rayjob,raycluster,rayservice}``):
``workload.py`` (the Workloads), ``generic.py`` (the GenericJobs), ``webhook.py``."""

from pykueue.jobs.integration import Integration, Live, Reading, Webhooks, custom_kind_grants
from pykueue.jobs.ray import generic, multikueue, webhook, workload
from pykueue.kube import resources as r

KUBERAY = webhook.KUBERAY
_WEBHOOKS = Webhooks(webhook.default, webhook.hook_create, webhook.hook_update)
_READING = Reading(workload.validate, workload.workloads, workload.template_paths, workload.priority_class_path,
                   queued=workload.is_managed)
INTEGRATIONS = (
    Integration("ray.io/rayjob", r.RAY_JOB, own_controller=KUBERAY, grants=custom_kind_grants(r.RAY_JOB), reading=_READING, webhooks=_WEBHOOKS,
                multikueue=multikueue.RAY_JOB, live=Live(generic.is_managed, generic.wrap, r.RAY_CLUSTER,
                                                         generic.parent_of(generic.RAY_JOB))),
    Integration("ray.io/raycluster", r.RAY_CLUSTER, owns_pods=True, own_controller=KUBERAY,
                grants=custom_kind_grants(r.RAY_CLUSTER), reading=_READING,
                webhooks=_WEBHOOKS, multikueue=multikueue.RAY_CLUSTER, live=Live(generic.is_managed, generic.wrap)),
    Integration("ray.io/rayservice", r.RAY_SERVICE, grants=custom_kind_grants(r.RAY_SERVICE), reading=_READING, webhooks=_WEBHOOKS,
                live=Live(generic.is_managed, generic.wrap, r.RAY_CLUSTER, generic.parent_of(generic.RAY_SERVICE))),
)
