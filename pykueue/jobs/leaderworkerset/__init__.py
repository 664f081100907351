"""The LeaderWorkerSet integration (upstream's ``pkg/controller/jobs/leaderworkerset``):
``workload.py`` (a Workload per group, the webhooks' rules, the owner rule)."""

from pykueue.jobs.integration import Grant, GroupOwner, Integration, Reading, Webhooks
from pykueue.jobs.leaderworkerset import multikueue, webhook, workload
from pykueue.kube import resources as r

INTEGRATION = Integration("leaderworkerset.x-k8s.io/leaderworkerset", r.LEADERWORKERSET,
                          implies=("pod",), serving=True, mutates_on=("CREATE", "UPDATE"), reading=Reading(
                              workload.validate, workload.named_workloads, workload.template_paths,
                              workload.priority_class_path, members=True),
                          webhooks=Webhooks(webhook.default, webhook.validate_create, webhook.validate_update),
                          multikueue=multikueue.ADAPTER,
                          groups=GroupOwner(workload.key_for_pod, workload.reconcile_owner, workload.reconcile_gone,
                                            crd=True),
                          grants=(Grant(("leaderworkersets",), ("list", "watch"), "LeaderWorkerSets "
                                        "(controller/jobs/group_owners.py): an informer, so each group's Workload is "
                                        "made from its LeaderWorkerSet"),))
