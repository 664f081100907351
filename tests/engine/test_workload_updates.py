"""Every change of a Workload's spec is read (upstream's workload controller): a pending one moves to
its new queue or re-sorts by its new priority; one holding quota takes its new priority, which moves
it among the preemption candidates. Expected outcomes worked out by hand."""

from __future__ import annotations

from dataclasses import replace

from pykueue.engine import events as ev
from pykueue.engine import model as m
from pykueue.engine.engine import Engine
from pykueue.engine.workload import State

US = m.US


def engine() -> Engine:
    e = Engine(jobs_stop_at_once=False)
    e.apply_resource_flavor(m.ResourceFlavor("f"))
    for name, cpu in (("small", 1), ("big", 4)):
        e.apply_cluster_queue(m.ClusterQueue(
            name=name, namespace_selector=m.LabelSelector(),
            resource_groups=(m.ResourceGroup(("cpu",), (m.FlavorQuotas("f", {"cpu": m.ResourceQuota(cpu * 1000)}),)),),
            preemption=m.PreemptionPolicy(within_cluster_queue=m.LOWER_PRIORITY)))
        e.apply_local_queue(m.LocalQueue("ns", name, name))
    return e


def wl(name: str, queue: str, cpu: int, priority: int = 0, created: float = 0.0) -> m.Workload:
    return m.Workload("ns", name, queue, (m.PodSet("main", 1, {"cpu": cpu * 1000}),), priority=priority,
                      creation_time=created)


def admitted(events: list[ev.Event]) -> list[str]:
    return [x.workload for x in events if x.type == ev.ADMITTED]


def test_a_pending_workload_moved_to_another_queue_is_admitted_there() -> None:
    e = engine()
    e.add_workload(wl("w", "small", 2))
    assert admitted(e.schedule(0)) == []  # 2 cpu never fits the 1 cpu queue
    assert e.update_workload(wl("w", "big", 2), 1 * US)
    assert admitted(e.schedule(1 * US)) == ["ns/w"]
    assert e.cluster_queue_status("big").usage[("f", "cpu")] == 2000  # type: ignore[union-attr]
    counts = e.local_queue_statuses()
    assert (counts["ns/small"].pending, counts["ns/big"].admitted) == (0, 1)


def test_a_pending_workload_asking_for_less_now_fits() -> None:
    e = engine()
    e.add_workload(wl("w", "small", 2))
    e.schedule(0)
    assert not e.update_workload(wl("w", "small", 2), 1 * US)  # the same spec: nothing to do
    assert e.update_workload(wl("w", "small", 1), 2 * US)
    assert admitted(e.schedule(2 * US)) == ["ns/w"]


def test_a_raised_priority_reorders_the_pending() -> None:
    e = engine()
    e.add_workload(wl("holder", "small", 1))
    e.schedule(0)
    e.add_workload(wl("a", "small", 1, created=1.0))
    e.add_workload(wl("b", "small", 1, created=2.0))
    e.schedule(2 * US)
    e.update_workload(wl("b", "small", 1, priority=5, created=2.0), 3 * US)
    e.finish_workload("ns/holder", 4 * US)
    assert admitted(e.schedule(4 * US)) == ["ns/b"]  # older a waits: b's priority is higher now


def test_an_admitted_workloads_new_priority_protects_it_from_preemption() -> None:
    e = engine()
    e.add_workload(wl("x", "big", 2, created=0.0))
    e.add_workload(wl("y", "big", 2, created=1.0))
    e.schedule(1 * US)
    # y, the newest, would be the victim of a priority-1 preemptor; raised to 10 it is no candidate
    assert e.update_workload(wl("y", "big", 2, priority=10, created=1.0), 2 * US)
    e.add_workload(wl("p", "big", 2, priority=1, created=3.0))
    e.schedule(3 * US)
    assert (e.state_of("ns/x"), e.state_of("ns/y")) == (State.STOPPING, State.ADMITTED)


def test_an_admitted_workload_keeps_its_pod_sets() -> None:
    e = engine()
    e.add_workload(wl("w", "big", 2))
    e.schedule(0)
    assert not e.update_workload(replace(wl("w", "big", 3)), 1 * US)
    assert e.usage_of("big") == {("f", "cpu"): 2000}
