"""A configuration that would preempt back and forth forever stops with an error instead of hanging.

Ten queues share a cohort with ``withinClusterQueue: LowerPriority`` and ``reclaimWithinCohort: Any``.
A priority-20 workload evicts lower ones in its own queue and borrows the little that is free; a
priority-10 workload in another queue, now under its nominal quota, reclaims that borrowed quota by
evicting it (Any ignores priority); the evicted one comes back the same way elsewhere in the cohort.
With evictions taking effect at once, the cycle never ends within one instant.
"""

from __future__ import annotations

import random

import pytest

from pykueue.engine import model as m
from pykueue.engine.engine import Engine
from pykueue.engine.events import EngineError
from pykueue.engine.model import US


def world(reclaim: str) -> Engine:
    rng = random.Random(7)
    e = Engine()
    with e.bulk():
        e.apply_resource_flavor(m.ResourceFlavor("default"))
        for i in range(10):
            e.apply_cluster_queue(
                m.ClusterQueue(
                    name=f"cq{i}",
                    cohort="all",
                    namespace_selector=m.LabelSelector(),
                    resource_groups=(m.ResourceGroup(("cpu",), (m.FlavorQuotas("default", {"cpu": m.ResourceQuota(10_000)}),)),),
                    preemption=m.PreemptionPolicy(within_cluster_queue=m.LOWER_PRIORITY, reclaim_within_cohort=reclaim),
                )
            )
            e.apply_local_queue(m.LocalQueue("ns", f"q{i}", f"cq{i}"))
    for n in range(1000):
        e.add_workload(
            m.Workload("ns", f"w{n:06d}", f"q{n % 10}",
                       (m.PodSet("main", 1, {"cpu": rng.choice((500, 1000, 1500, 2000, 2500))}),),
                       priority=rng.choice((0, 10, 20)), creation_time=n * 0.001)
        )
    e.schedule(0)
    return e


def churn(e: Engine, steps: int) -> None:
    running = sorted((i for i in e.workloads.values() if i.has_quota), key=lambda i: i.seq)
    for step in range(1, steps + 1):
        e.finish_workload(running.pop(0).key, step * US)
        running.extend(e.workloads[ev.workload] for ev in e.schedule(step * US) if ev.type == "Admitted")


def test_reclaim_any_ping_pong_is_detected() -> None:
    e = world(m.ANY)
    with pytest.raises(EngineError, match=r"preemption loop: workload ns/w\d+ was admitted and preempted 50 times"):
        churn(e, 200)


def test_same_churn_without_reclaim_settles() -> None:
    e = world(m.NEVER)
    churn(e, 200)
    assert sum(1 for i in e.workloads.values() if i.has_quota) > 0
