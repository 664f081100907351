"""The loop detector counts admissions per instant, not per ``schedule`` call (issue 14).

A driver calls ``schedule(now)`` once per timer it fires, so a loop fed by timers of one instant (an
admission check answering Retry after 0 s) spans many calls with the same ``now``; each call alone
admits the workload once and never reached the limit.
"""

from __future__ import annotations

import pytest

from pykueue.engine import model as m
from pykueue.engine.engine import Engine
from pykueue.engine.events import EngineError
from pykueue.engine.model import US
from pykueue.engine.scheduler import MAX_ADMISSIONS_PER_INSTANT


def engine() -> Engine:
    e = Engine()
    e.apply_resource_flavor(m.ResourceFlavor("f"))
    e.apply_admission_check(m.AdmissionCheck("prov"))
    e.apply_cluster_queue(m.ClusterQueue(
        name="cq", namespace_selector=m.LabelSelector(), admission_checks=(m.AdmissionCheckRule("prov"),),
        resource_groups=(m.ResourceGroup(("cpu",), (m.FlavorQuotas("f", {"cpu": m.ResourceQuota(1000)}),)),)))
    e.apply_local_queue(m.LocalQueue("ns", "q", "cq"))
    e.add_workload(m.Workload("ns", "w", "q", (m.PodSet("main", 1, {"cpu": 1000}),)))
    return e


def retry_loop(e: Engine, now: int, times: int) -> None:
    """What a driver does with a check scripted Retry@0s: one check report, one schedule call."""
    for _ in range(times):
        e.set_check_state("ns/w", "prov", "Retry", now)
        e.schedule(now)


def test_retries_at_one_instant_over_many_calls_are_a_loop() -> None:
    e = engine()
    e.schedule(0)  # first reservation
    retry_loop(e, 0, MAX_ADMISSIONS_PER_INSTANT - 1)  # 50 reservations at time 0: still allowed
    with pytest.raises(EngineError, match=r"^admission loop: workload ns/w got quota and was evicted "
                                          r"\(AdmissionCheck\) 50 times at time 0s;"):
        retry_loop(e, 0, 1)


def test_the_count_starts_again_at_the_next_instant() -> None:
    e = engine()
    e.schedule(0)
    retry_loop(e, 0, MAX_ADMISSIONS_PER_INSTANT - 1)
    retry_loop(e, 1, MAX_ADMISSIONS_PER_INSTANT - 1)  # 1 us later: a new instant, 49 more are fine
    assert e.workloads["ns/w"].evictions == 2 * (MAX_ADMISSIONS_PER_INSTANT - 1)


def test_time_is_integer_microseconds() -> None:
    """A float here is the rounding bug: the engine refuses it instead of scheduling a float backoff."""
    e = engine()
    with pytest.raises(TypeError, match="microseconds"):
        e.schedule(0.5)  # type: ignore[arg-type]
    e.schedule(US // 2)
    info = e.workloads["ns/w"]
    assert info.reserved_us == US // 2 and type(info.reserved_us) is int
