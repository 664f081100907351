"""The LeaderWorkerSet integration (upstream's ``pkg/controller/jobs/leaderworkerset``):
``workload.py`` (a Workload per group, the webhooks' rules, the owner rule)."""

from pykueue.jobs.integration import Integration

INTEGRATION = Integration("leaderworkerset.x-k8s.io/leaderworkerset", "leaderworkerset.x-k8s.io", "LeaderWorkerSet",
                          implies=("pod",), serving=True)
