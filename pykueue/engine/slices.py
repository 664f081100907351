"""Workload slices: how an elastic job grows and shrinks while it runs (upstream's
ElasticJobsViaWorkloadSlices, on by default in v0.18).

A job annotated ``kueue.x-k8s.io/elastic-job: "true"`` is never suspended to change size. Scaling down
shrinks its admitted Workload in place and gives the difference back. Scaling up makes a new Workload
(a slice) that names the admitted one it replaces; the scheduler admits the new slice as if the old
one's quota were already its own (so it needs only the difference, on the flavors the old slice
holds), and at that moment the old slice is finished, reason ``WorkloadSliceReplaced``. A scale-up
that does not fit stays pending while the old slice keeps running.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from pykueue.engine import model
from pykueue.engine.cluster import ClusterQueueState
from pykueue.engine.quota import add_usage, remove_usage
from pykueue.engine.workload import WorkloadInfo

WORKLOAD_SLICE_REPLACED = "WorkloadSliceReplaced"  # the old slice's Finished reason (kueue.WorkloadSliceReplaced)


def replaced_message(new_key: str) -> str:
    return f"Replaced to accommodate a workload ({new_key}) due to workload slice aggregation"


def scaled_down(old: Sequence[tuple[str, int]], new: Sequence[tuple[str, int]]) -> bool:
    """Upstream's ``ScaledDown``: the same pod sets, at least one with fewer pods and none with more."""
    before, after = dict(old), dict(new)
    if before.keys() != after.keys():
        return False
    return any(after[n] < c for n, c in before.items()) and not any(after[n] > c for n, c in before.items())


def counts(pod_sets: Sequence[model.PodSet]) -> list[tuple[str, int]]:
    return [(ps.name, ps.count) for ps in pod_sets]


def replaced_slice(cq: ClusterQueueState, info: WorkloadInfo) -> WorkloadInfo | None:
    """The admitted slice ``info`` would replace in ``cq`` (upstream's ReplacedWorkloadSlice: found only
    among the workloads the same ClusterQueue admitted), or None."""
    key = info.spec.replaces
    if key is None:
        return None
    return cq.admitted.get(key)


def pinned_flavors(old: WorkloadInfo) -> dict[str, dict[str, str]]:
    """Per pod set, the flavor of each resource the old slice holds: a scale-up keeps them."""
    if old.admission is None:
        return {}
    return {psa.name: dict(psa.flavors) for psa in old.admission.pod_set_assignments}


@contextmanager
def hidden(cq: ClusterQueueState, old: WorkloadInfo | None) -> Iterator[None]:
    """The ClusterQueue as if ``old`` held nothing and were no preemption candidate, for the body of
    the ``with`` (the replacement is nominated and checked against it); restored unless the body
    finished ``old`` (replaced: its quota is the new slice's now)."""
    if old is None:
        yield
        return
    usage = old.usage
    cq.remove_admitted(old)
    for fr, v in usage.items():
        remove_usage(cq.node, fr, v)
    try:
        yield
    finally:
        if old.holds_usage and old.key not in cq.admitted:
            for fr, v in usage.items():
                add_usage(cq.node, fr, v)
            cq.add_admitted(old)

