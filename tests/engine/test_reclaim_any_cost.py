"""``reclaimWithinCohort: Any`` must not walk the whole cohort for a search that cannot succeed (issue 14).

A queue under its quota whose request would take it over the quota can only be helped by evicting
its own workloads (borrowing is what it would need, and ``borrowWithinCohort`` is off). Victims in
other queues never lower its own usage, yet the greedy search took every borrowed workload of the
cohort one by one before giving them all back: with 300 queues and 10,000 workloads, at every
nomination, the run did not end in 10 minutes. The outcome must stay the same: no targets.
"""

from __future__ import annotations

import pytest

from pykueue.engine import model as m
from pykueue.engine.engine import Engine
from pykueue.engine.preemption import common as preemption
from pykueue.engine.workload import State

BORROWED = 500  # small workloads of the busy queue, all on borrowed quota but one


def cq(name: str, nominal: int) -> m.ClusterQueue:
    return m.ClusterQueue(
        name=name, cohort="all", namespace_selector=m.LabelSelector(),
        preemption=m.PreemptionPolicy(reclaim_within_cohort=m.ANY),
        resource_groups=(m.ResourceGroup(("cpu",), (m.FlavorQuotas("f", {"cpu": m.ResourceQuota(nominal)}),)),),
    )


def test_a_search_that_needs_borrowing_takes_no_victim_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    e = Engine()
    e.apply_resource_flavor(m.ResourceFlavor("f"))
    e.apply_cluster_queue(cq("busy", 20))  # 20m cpu of its own: everything above is borrowed from quiet
    e.apply_cluster_queue(cq("quiet", 10_000))
    e.apply_local_queue(m.LocalQueue("ns", "busy", "busy"))
    e.apply_local_queue(m.LocalQueue("ns", "quiet", "quiet"))
    e.add_workload(m.Workload("ns", "own", "quiet", (m.PodSet("main", 1, {"cpu": 1000}),)))
    for i in range(BORROWED):
        e.add_workload(m.Workload("ns", f"b{i:03d}", "busy", (m.PodSet("main", 1, {"cpu": 18}),)))
    e.schedule(0)
    # quiet uses 1 cpu of its 10; busy uses 500 x 18m = 9 cpu, 8.98 of them borrowed; 20m are left.
    assert sum(1 for w in e.workloads.values() if w.has_quota) == BORROWED + 1

    removals = 0
    real = preemption.remove_workload_usage

    def counting(cq_state: object, info: object) -> None:
        nonlocal removals
        removals += 1
        real(cq_state, info)  # type: ignore[arg-type]

    monkeypatch.setattr(preemption, "remove_workload_usage", counting)
    # 10 cpu more would put quiet at 11 cpu, over its 10: only borrowing could admit it. Reclaiming from
    # busy without borrowing can never make room in quiet's own quota, so there are no targets...
    e.add_workload(m.Workload("ns", "big", "quiet", (m.PodSet("main", 1, {"cpu": 10_000}),)), 1)
    e.schedule(1)
    big = e.workloads["ns/big"]
    assert big.state is State.PENDING and big.reason == "WaitingForQuota"
    assert sum(1 for w in e.workloads.values() if w.evictions) == 0
    # ...and finding that out costs no simulated eviction (it cost one per borrowed workload, about 500, per search).
    assert removals == 0
