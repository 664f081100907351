"""The run's event log stored by column gives back exactly the events it was given, with their times."""

from __future__ import annotations

from pykueue.engine import model
from pykueue.engine.events import Event
from pykueue.sim.event_log import EventLog, LoggedEvent

ADMISSION = model.Admission("cq", (model.PodSetAssignment("main", 2, {"cpu": "f"}),))


def test_events_come_back_equal_in_order_with_their_instants() -> None:
    log = EventLog()
    first = [Event("QuotaReserved", "ns/a", "cq", admission=ADMISSION), Event("Admitted", "ns/a", "cq", admission=ADMISSION)]
    second = [Event("Preempted", "ns/b", "cq", reason="InClusterQueue", by="ns/a"),
              Event("Evicted", "ns/b", "cq", reason="Preempted", message="Preempted to accommodate ns/a",
                    underlying_cause="x")]
    log.record(0, first)
    log.record(0, [])  # an instant without events adds nothing
    log.record(1_500_000, second)
    log.record(1_500_000, [Event("Finished", "ns/a", None)])  # the same instant again: one mark
    assert len(log) == 5 and log and log.last_time_us() == 1_500_000
    assert list(log.pairs()) == [(0, e) for e in first] + [(1_500_000, e) for e in second] + [
        (1_500_000, Event("Finished", "ns/a", None))]
    assert list(log)[2] == LoggedEvent(1_500_000, second[0])
    assert list(log)[1].event.admission is ADMISSION  # the engine's own admission, not a copy
    # rows: the same events as columns, the rarely set fields as one tuple or None
    assert [(t, e.type, e.workload, e.cluster_queue, e.admission,
             None if (e.reason, e.by, e.message, e.underlying_cause) == (None,) * 4
             else (e.reason, e.by, e.message, e.underlying_cause)) for t, e in log.pairs()] == list(log.rows())
    assert list(log.rows())[3] == (1_500_000, "Evicted", "ns/b", "cq", None,
                                   ("Preempted", None, "Preempted to accommodate ns/a", "x"))


def test_an_empty_log() -> None:
    log = EventLog()
    assert len(log) == 0 and not log and log.last_time_us() is None and list(log) == []
    assert list(log.rows()) == []
    log.append(LoggedEvent(7, Event("Finished", "ns/a", "cq")))
    assert [(e.time_us, e.event.type) for e in log] == [(7, "Finished")]
