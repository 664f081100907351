"""What runs, counted from the cluster rather than from the Workload status the controller writes: a
checker for the promise that a ClusterQueue's jobs never use more than its quota."""

from __future__ import annotations

import json
from typing import Any

from pykueue.quantity import to_canonical
from tests.e2e.conftest import Kueue


def _cpu(pod_spec: dict[str, Any]) -> int:
    """Milli-cpu one pod of this spec requests."""
    return sum(to_canonical("cpu", str(((c.get("resources") or {}).get("requests") or {}).get("cpu", "0")))
               for c in pod_spec.get("containers") or [])


def job_cpu(job: dict[str, Any]) -> int:
    """What a Job runs as a user sees it: its parallelism while unsuspended, and its active pods for as
    long as the Job controller counts any (a suspended Job's pods still run until they stop)."""
    spec, status = job.get("spec") or {}, job.get("status") or {}
    pods = max(0 if spec.get("suspend") else int(spec.get("parallelism", 1)), int(status.get("active") or 0))
    return pods * _cpu((spec.get("template") or {}).get("spec") or {})


def pod_cpu(pods: list[dict[str, Any]]) -> int:
    """What the namespace's Pods run: every Pod released from its gates, not Succeeded or Failed and
    not terminating (the Job controller no longer counts a terminating Pod active, nor does upstream)."""
    total = 0
    for pod in pods:
        spec = pod.get("spec") or {}
        if (spec.get("schedulingGates") or pod["metadata"].get("deletionTimestamp")
                or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")):
            continue
        total += _cpu(spec)
    return total


def running_cpu(kueue: Kueue, namespace: str) -> int:
    """Milli-cpu in use in ``namespace`` by the larger of the two counts (Jobs, Pods)."""
    out = kueue.cluster.kubectl("get", "jobs,pods", "-n", namespace, "-o", "json").stdout
    items = json.loads(out)["items"]
    jobs = [i for i in items if i.get("kind") == "Job"]
    pods = [i for i in items if i.get("kind") == "Pod"]
    return max(sum(job_cpu(j) for j in jobs), pod_cpu(pods))


class Sampler:
    """Samples what runs in one namespace; ``peak`` is the largest sample seen."""

    def __init__(self, kueue: Kueue, namespace: str) -> None:
        self.kueue, self.namespace, self.peak, self.samples = kueue, namespace, 0, 0

    def sample(self) -> int:
        used = running_cpu(self.kueue, self.namespace)
        self.peak = max(self.peak, used)
        self.samples += 1
        return used
