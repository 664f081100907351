"""``engine/forecast.py``: predicted admission times from the engine played forward on a copy.

Every expected time here is worked out by hand from the quotas and run times in the test; the engine's
rules (queue order, preemption, borrowing) decide the replay as they decide a live cycle.
"""

from __future__ import annotations

import time

from pykueue.engine import model as m
from pykueue.engine.engine import Engine
from pykueue.engine.expected_runtimes import Expected, LearnedRuntimes, RuntimeSource, choose
from pykueue.engine.forecast import copy_engine, forecast
from pykueue.engine.model import US
from pykueue.engine.workload import State

GIVEN, UNKNOWN = RuntimeSource.GIVEN, RuntimeSource.UNKNOWN


def cq(name: str, nominal: int, *, cohort: str | None = None, borrowing: int | None = None,
       preemption: m.PreemptionPolicy | None = None) -> m.ClusterQueue:
    quota = m.ResourceQuota(nominal * 1000, borrowing_limit=None if borrowing is None else borrowing * 1000)
    return m.ClusterQueue(
        name=name, cohort=cohort, namespace_selector=m.LabelSelector(),
        preemption=preemption or m.PreemptionPolicy(),
        resource_groups=(m.ResourceGroup(("cpu",), (m.FlavorQuotas("f", {"cpu": quota}),)),),
    )


def wl(name: str, cpu: int, *, queue: str = "q", priority: int = 0, created: float = 0.0) -> m.Workload:
    return m.Workload("ns", name, queue, (m.PodSet("main", 1, {"cpu": cpu * 1000}),), priority=priority,
                      creation_time=created)


def engine(*cqs: m.ClusterQueue) -> Engine:
    e = Engine()
    e.apply_resource_flavor(m.ResourceFlavor("f"))
    for c in cqs:
        e.apply_cluster_queue(c)
        e.apply_local_queue(m.LocalQueue("ns", "q" if len(cqs) == 1 else f"q-{c.name}", c.name))
    return e


def s(seconds: float) -> int:
    return int(seconds * US)


def four_cpu() -> Engine:
    """A 4-cpu ClusterQueue: a (4 cpu) admitted at 0; b, c (2 cpu each) and d (4 cpu) pending in order."""
    e = engine(cq("cq", 4))
    e.add_workload(wl("a", 4), 0)
    e.schedule(0)
    for i, name in enumerate("bcd"):
        e.add_workload(wl(name, 4 if name == "d" else 2, created=i + 1), s(i + 1))
    e.schedule(s(5))
    assert [w.key for w in e.pending_in_order("cq")] == ["ns/b", "ns/c", "ns/d"]
    return e


def test_the_queue_drains_in_order_behind_the_running_workload() -> None:
    # a ends at 30 s: b and c (2 + 2 cpu) both fit then; b runs 10 s, c 20 s, so d (4 cpu) fits once
    # both have ended, at 30 + 20 = 50 s, waiting for c (the last to end; b had ended at 40 s).
    e = four_cpu()
    ends = {"ns/a": Expected(GIVEN, end_us=s(30)), "ns/b": Expected(GIVEN, runtime_us=s(10)),
            "ns/c": Expected(GIVEN, runtime_us=s(20))}
    f = forecast(e, s(5), ends)
    b, c, d = (f.predictions[f"ns/{n}"] for n in "bcd")
    assert (b.admission_us, c.admission_us, d.admission_us) == (s(30), s(30), s(50))
    assert [w.key for w in b.waits_for] == ["ns/a"] == [w.key for w in c.waits_for]
    assert b.waits_for[0].end_us == s(30) and b.waits_for[0].source is GIVEN
    assert [w.key for w in d.waits_for] == ["ns/c"]
    assert b.flavors == {"cpu": "f"} and b.cluster_queue == "cq"
    assert d.sources == {GIVEN} and not d.guess


def test_the_live_engine_is_unchanged() -> None:
    e = four_cpu()
    before = [(w.key, w.state, w.admission, w.reason, w.message) for w in e.workload_statuses()]
    forecast(e, s(5), {"ns/a": Expected(GIVEN, end_us=s(30))})
    after = [(w.key, w.state, w.admission, w.reason, w.message) for w in e.workload_statuses()]
    assert after == before
    assert e.next_wakeup() is None and e.take_events() == []
    assert [w.key for w in e.pending_in_order("cq")] == ["ns/b", "ns/c", "ns/d"]


def test_an_unknown_end_gives_no_time_within_the_horizon_and_marks_a_guess() -> None:
    e = four_cpu()
    f = forecast(e, s(5), {}, horizon_us=s(3600))
    b = f.predictions["ns/b"]
    assert b.admission_us is None and b.guess
    assert [(d.key, d.source) for d in b.waits_for] == [("ns/a", UNKNOWN)]
    assert b.reason == "WaitingForQuota"


def test_a_guess_is_inherited_through_the_workloads_waited_for() -> None:
    # a's end is learned: b and c wait for it (a guess), d waits for c, whose run time is given, but
    # c's own start rested on the learned figure: d is a guess too.
    e = four_cpu()
    ends = {"ns/a": Expected(RuntimeSource.LEARNED, end_us=s(30)), "ns/b": Expected(GIVEN, runtime_us=s(10)),
            "ns/c": Expected(GIVEN, runtime_us=s(20))}
    d = forecast(e, s(5), ends).predictions["ns/d"]
    assert d.admission_us == s(50) and d.guess and d.sources == {GIVEN, RuntimeSource.LEARNED}


def test_a_higher_priority_workload_that_preempts_is_predicted_at_its_preemption() -> None:
    # low (4 cpu) runs; high (4 cpu, priority 10) arrives at 7 s and, with withinClusterQueue
    # LowerPriority, preempts low at once. The forecast at 7 s (before scheduling) says 7 s, by preemption.
    e = engine(cq("cq", 4, preemption=m.PreemptionPolicy(within_cluster_queue=m.LOWER_PRIORITY)))
    e.add_workload(wl("low", 4), 0)
    e.schedule(0)
    e.add_workload(wl("high", 4, priority=10, created=7), s(7))
    f = forecast(e, s(7), {"ns/low": Expected(GIVEN, end_us=s(100))})
    high = f.predictions["ns/high"]
    assert high.admission_us == s(7) and high.preempts == ("ns/low",)
    assert e.state_of("ns/low") is State.ADMITTED  # the live engine did not preempt


def test_a_workload_of_a_cohort_borrows_what_its_neighbour_does_not_use() -> None:
    # left (2 cpu nominal) and right (2 cpu) share a cohort; right runs r (1 cpu) until 20 s, left runs
    # l1 (2 cpu) until 10 s. l2 (3 cpu, pending in left) needs 1 cpu borrowed from right: right has 1
    # free, so l2 fits when l1 ends at 10 s (3 of left's own 2 + right's free 1), not waiting for r.
    e = engine(cq("left", 2, cohort="co"), cq("right", 2, cohort="co"))
    e.add_workload(m.Workload("ns", "l1", "q-left", (m.PodSet("main", 1, {"cpu": 2000}),)), 0)
    e.add_workload(m.Workload("ns", "r", "q-right", (m.PodSet("main", 1, {"cpu": 1000}),)), 0)
    e.schedule(0)
    e.add_workload(m.Workload("ns", "l2", "q-left", (m.PodSet("main", 1, {"cpu": 3000}),), creation_time=1), s(1))
    e.schedule(s(1))
    assert e.state_of("ns/l2") is State.PENDING
    f = forecast(e, s(1), {"ns/l1": Expected(GIVEN, end_us=s(10)), "ns/r": Expected(GIVEN, end_us=s(20))})
    l2 = f.predictions["ns/l2"]
    assert l2.admission_us == s(10) and [d.key for d in l2.waits_for] == ["ns/l1"]


def test_a_workload_that_can_never_fit_says_why_and_is_no_guess() -> None:
    e = engine(cq("cq", 4))
    e.add_workload(wl("huge", 8), 0)
    e.schedule(0)
    p = forecast(e, 0, {}).predictions["ns/huge"]
    assert p.admission_us is None and p.waits_for == () and not p.guess
    assert p.reason == "ExceedsMaxQuota" or "insufficient" in (p.message or ""), (p.reason, p.message)


def test_an_execution_limit_ends_a_workload_in_the_replay() -> None:
    # a may run 20 s at most (maximumExecutionTimeSeconds): b is admitted at 20 s even with no figure.
    e = engine(cq("cq", 4))
    a = m.Workload("ns", "a", "q", (m.PodSet("main", 1, {"cpu": 4000}),), max_execution_seconds=20)
    e.add_workload(a, 0)
    e.schedule(0)
    e.add_workload(wl("b", 4, created=1), s(1))
    e.schedule(s(1))
    end = choose(a, admitted_us=0)
    assert end == Expected(RuntimeSource.MAX_EXECUTION, end_us=s(20))
    b = forecast(e, s(1), {"ns/a": end}).predictions["ns/b"]
    assert b.admission_us == s(20) and b.waits_for[0].source is RuntimeSource.MAX_EXECUTION and not b.guess
    assert forecast(e, s(1), {}).predictions["ns/b"].admission_us == s(20)  # the engine's own deadline


def test_choose_prefers_a_given_figure_to_a_later_limit_and_the_annotation_to_a_learned_one() -> None:
    a = m.Workload("ns", "a", "q", (m.PodSet("main", 1, {"cpu": 1000}),), max_execution_seconds=100)
    assert choose(a, admitted_us=s(5), given_us=s(10)) == Expected(GIVEN, end_us=s(15))
    assert choose(a, admitted_us=None, given_us=s(200)) == Expected(RuntimeSource.MAX_EXECUTION, runtime_us=s(100))
    b = wl("b", 1)
    assert choose(b, admitted_us=None, annotated_us=s(3), learned_us=s(9)).source is RuntimeSource.ANNOTATION
    assert choose(b, admitted_us=None, learned_us=s(9)) == Expected(RuntimeSource.LEARNED, runtime_us=s(9))
    assert choose(b, admitted_us=None).source is UNKNOWN


def test_learned_runtimes_keep_a_bounded_mean_per_queue_and_shape() -> None:
    learned = LearnedRuntimes(window=2, max_keys=2)
    small, big = wl("x", 1), wl("y", 2)
    for runtime in (10, 20, 30):
        learned.observe(small, s(runtime))
    assert learned.estimate(small) == s(25)  # the last two
    assert learned.estimate(big) is None
    learned.observe(big, s(4))
    learned.observe(wl("z", 1, queue="other"), s(1))  # a third shape: the least recently observed goes
    assert len(learned) == 2 and learned.estimate(small) is None and learned.estimate(big) == s(4)


def test_copying_a_few_hundred_workloads_is_cheap() -> None:
    # 300 workloads over 10 queues, half running: the copy is what a forecast pays before replaying.
    e = engine(*(cq(f"cq{i}", 15, cohort="all") for i in range(10)))
    for i in range(300):
        e.add_workload(m.Workload("ns", f"w{i:03d}", f"q-cq{i % 10}", (m.PodSet("main", 1, {"cpu": 1000}),),
                                  creation_time=i), s(i))
    e.schedule(s(300))
    start = time.perf_counter()
    replay = copy_engine(e)
    elapsed = time.perf_counter() - start
    assert [w.key for w in replay.workload_statuses()] == [w.key for w in e.workload_statuses()]
    assert elapsed < 2.0, elapsed
