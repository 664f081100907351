"""The LeaderWorkerSet integration (upstream's ``pkg/controller/jobs/leaderworkerset``):
``workload.py`` (a Workload per group, the webhooks' rules, the owner rule)."""

from pykueue.jobs.integration import Integration, Reading
from pykueue.jobs.leaderworkerset import workload

INTEGRATION = Integration("leaderworkerset.x-k8s.io/leaderworkerset", "leaderworkerset.x-k8s.io", "LeaderWorkerSet",
                          implies=("pod",), serving=True, reading=Reading(
                              workload.validate, workload.named_workloads, workload.template_paths,
                              workload.priority_class_path, members=True))
