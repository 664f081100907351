"""A workload its job holds (``Engine.hold``; upstream's OnHold, which a StatefulSet scaled to zero puts
its Workload on): it gives its quota back (with the controller's engine, once its job has stopped),
stays pending with reason OnHold in no queue, and queues again once let go. Worked by hand on a 2-cpu
ClusterQueue: one 2-cpu workload fills it."""

from __future__ import annotations

from pykueue.engine import model as m
from pykueue.engine.engine import NO_LONGER_ON_HOLD, ON_HOLD_MESSAGE
from pykueue.engine.workload import ON_HOLD, State
from tests.engine.test_stopping import US, engine, used, wl


def test_a_held_pending_workload_is_never_admitted_until_let_go() -> None:
    e = engine()
    e.add_workload(wl("db"))
    assert e.hold("ns/db", True, 0)
    assert not e.hold("ns/db", True, 0)  # holding twice changes nothing
    assert e.schedule(1 * US) == [] and e.state_of("ns/db") is State.PENDING
    assert e.pending_condition("ns/db") == (ON_HOLD, ON_HOLD_MESSAGE)
    assert e.pending_count("cq") == 0  # in no queue
    assert e.hold("ns/db", False, 2 * US)
    assert e.workload_status("ns/db").message == NO_LONGER_ON_HOLD  # type: ignore[union-attr]
    e.schedule(3 * US)
    assert e.state_of("ns/db") is State.ADMITTED and used(e) == 2000


def test_an_admitted_workload_held_keeps_its_quota_until_its_job_has_stopped() -> None:
    """The controller's engine: held while admitted, db is STOPPING and still charges 2 cpu, so web (2
    cpu) waits; once db's Pods are gone it is pending OnHold, its quota free: web is admitted, and db,
    still held, is not queued behind it. Let go, db waits for quota like any pending workload."""
    e = engine()
    e.add_workload(wl("db"))
    e.schedule(0)
    e.add_workload(wl("web", created=1.0))
    assert e.hold("ns/db", True, 1 * US)
    assert e.state_of("ns/db") is State.STOPPING and used(e) == 2000
    e.schedule(2 * US)
    assert e.state_of("ns/web") is State.PENDING
    assert e.job_stopped("ns/db", 3 * US)
    assert e.state_of("ns/db") is State.PENDING and e.pending_condition("ns/db") == (ON_HOLD, ON_HOLD_MESSAGE)
    e.schedule(4 * US)
    assert e.state_of("ns/web") is State.ADMITTED and e.state_of("ns/db") is State.PENDING
    assert e.hold("ns/db", False, 5 * US)
    e.schedule(6 * US)
    assert e.state_of("ns/db") is State.PENDING and e.pending_count("cq") == 1  # queued, no room


def test_let_go_while_its_job_still_stops_it_queues_once_stopped() -> None:
    e = engine()
    e.add_workload(wl("db"))
    e.schedule(0)
    e.hold("ns/db", True, 1 * US)
    assert e.hold("ns/db", False, 2 * US)  # scaled up again before the scale-down ended
    assert e.state_of("ns/db") is State.STOPPING
    e.job_stopped("ns/db", 3 * US)
    e.schedule(4 * US)
    assert e.state_of("ns/db") is State.ADMITTED


def test_the_simulators_engine_releases_at_once() -> None:
    e = engine(at_once=True)
    e.add_workload(wl("db"))
    e.schedule(0)
    e.hold("ns/db", True, 1 * US)
    assert e.state_of("ns/db") is State.PENDING and used(e) == 0
    assert e.pending_condition("ns/db") == (ON_HOLD, ON_HOLD_MESSAGE)


def test_a_workload_restored_on_hold_stays_out_of_the_queue_and_finished_ones_are_left_alone() -> None:
    e = engine()
    e.add_workload(wl("db", on_hold=True))
    e.schedule(0)
    assert e.state_of("ns/db") is State.PENDING and e.pending_condition("ns/db") == (ON_HOLD, ON_HOLD_MESSAGE)
    e.hold("ns/db", False, 1 * US)
    e.schedule(2 * US)
    assert e.state_of("ns/db") is State.ADMITTED
    e.add_workload(wl("off", active=False))
    assert not e.hold("ns/off", True, 3 * US)  # deactivated: upstream holds only active Workloads
    e.finish_workload("ns/db", 4 * US)
    assert not e.hold("ns/db", True, 5 * US)
    assert m.Workload("ns", "x", "q", ()).on_hold is False
