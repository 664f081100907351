"""The StatefulSet integration (upstream's ``pkg/controller/jobs/statefulset``): ``workload.py``
(its Workload and the owner rule), ``webhook.py``; its Pods are one pod group of the pod integration."""

from pykueue.jobs.integration import Grant, GroupOwner, Integration, Reading
from pykueue.jobs.pod import serving
from pykueue.jobs.statefulset import multikueue, webhook, workload
from pykueue.kube import resources as r

INTEGRATION = Integration("statefulset", r.STATEFULSET, implies=("pod",), owns_pods=True, serving=True,
                          mutates_on=("CREATE", "UPDATE"),
                          reading=Reading(serving.validate, workload.workloads, workload.template_paths),
                          webhooks=serving.webhooks(webhook.statefulset_defaults, webhook.validate_statefulset_update),
                          pod_marks=workload.pod_marks,
                          groups=GroupOwner(workload.key_for_pod, workload.reconcile_owner, workload.reconcile_gone),
                          grants=(Grant(("statefulsets",), ("list", "watch"), "StatefulSets (controller/jobs/group_owners.py): "
                                        "an informer, so each one's Workload is made from it, named with its UID and "
                                        "owned by it while it has replicas"),),
                          multikueue=multikueue.ADAPTER)
