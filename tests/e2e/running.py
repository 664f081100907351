"""What runs, counted from the cluster rather than from the Workload status the controller writes: a
checker for the promise that a ClusterQueue's jobs never use more than its quota."""

from __future__ import annotations

import time
from typing import Any

from pykueue.controller.core.translate import parse_time
from pykueue.quantity import to_canonical
from tests.e2e.conftest import Kueue


def _cpu(pod_spec: dict[str, Any]) -> int:
    """Milli-cpu one pod of this spec requests."""
    return sum(to_canonical("cpu", str(((c.get("resources") or {}).get("requests") or {}).get("cpu", "0")))
               for c in pod_spec.get("containers") or [])


def job_cpu(job: dict[str, Any]) -> int:
    """What a Job runs as a user sees it: its parallelism while unsuspended, and its active and
    terminating pods for as long as the Job controller counts any (a suspended or deleted Job's pods
    run until they have stopped, their grace period included)."""
    spec, status = job.get("spec") or {}, job.get("status") or {}
    pods = max(0 if spec.get("suspend") else int(spec.get("parallelism", 1)),
               int(status.get("active") or 0) + int(status.get("terminating") or 0))
    return pods * _cpu((spec.get("template") or {}).get("spec") or {})


def pod_cpu(pods: list[dict[str, Any]]) -> int:
    """What the namespace's Pods run: every Pod released from its gates and not Succeeded or Failed,
    terminating ones included until their grace period is over (their ``deletionTimestamp``; a kubelet
    has killed them by then, though kwok leaves a finalizer-held Pod Running): the Job controller no
    longer counts a terminating Pod active, but its containers may run on."""
    total, now = 0, time.time()
    for pod in pods:
        spec = pod.get("spec") or {}
        deleting_at = parse_time(pod["metadata"].get("deletionTimestamp"))
        if spec.get("schedulingGates") or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed") \
                or (deleting_at is not None and deleting_at <= now):
            continue
        total += _cpu(spec)
    return total


def running_cpu(kueue: Kueue, namespace: str) -> int:
    """Milli-cpu in use in ``namespace`` by the larger of the two counts: the Jobs' (plus the Pods no Job
    owns), and every Pod's."""
    jobs, pods = kueue.items("jobs", namespace), kueue.items("pods", namespace)
    plain = [p for p in pods if not any(o.get("kind") == "Job" for o in p["metadata"].get("ownerReferences") or [])]
    return max(sum(job_cpu(j) for j in jobs) + pod_cpu(plain), pod_cpu(pods))


class Sampler:
    """Samples what runs in one namespace, or the sum over several (one ClusterQueue's jobs in more than
    one namespace); ``peak`` is the largest sample seen."""

    def __init__(self, kueue: Kueue, namespace: str, *others: str) -> None:
        self.kueue, self.namespace, self.peak, self.samples = kueue, namespace, 0, 0
        self.namespaces = (namespace, *others)

    def sample(self) -> int:
        used = sum(running_cpu(self.kueue, namespace) for namespace in self.namespaces)
        self.peak = max(self.peak, used)
        self.samples += 1
        return used
