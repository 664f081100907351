"""Kueue's own timed policies live in the engine and wake the driver through ``next_wakeup``:
waitForPodsReady's timeout and recoveryTimeout, and maximumExecutionTimeSeconds, also for a workload
restored admitted after a controller restart."""

from __future__ import annotations

from pykueue.engine import events as ev
from pykueue.engine import model as m
from pykueue.engine.engine import Engine
from pykueue.engine.workload import State

US = m.US
ADMISSION = m.Admission("cq", (m.PodSetAssignment("main", 1, {"cpu": "f"}),))


def engine(config: m.Config | None = None) -> Engine:
    e = Engine(config)
    e.apply_resource_flavor(m.ResourceFlavor("f"))
    e.apply_cluster_queue(m.ClusterQueue(
        name="cq", namespace_selector=m.LabelSelector(),
        resource_groups=(m.ResourceGroup(("cpu",), (m.FlavorQuotas("f", {"cpu": m.ResourceQuota(4000)}),)),),
    ))
    e.apply_local_queue(m.LocalQueue("ns", "q", "cq"))
    return e


def wl(**kw: object) -> m.Workload:
    return m.Workload("ns", "w", "q", (m.PodSet("main", 1, {"cpu": 1000}),), **kw)  # type: ignore[arg-type]


WAIT = m.Config(wait_for_pods_ready=m.WaitForPodsReady(enable=True, timeout_seconds=60, recovery_timeout_seconds=30))


def test_max_execution_deadline_is_the_next_wakeup_and_deactivates() -> None:
    e = engine()
    e.add_workload(wl(max_execution_seconds=40, accumulated_execution_seconds=10))
    e.schedule(5 * US)
    assert e.next_wakeup() == 35 * US  # 5 + (40 - 10)
    assert e.schedule(34 * US) == []
    events = e.schedule(35 * US)
    assert [(x.type, x.reason) for x in events] == [
        (ev.DEACTIVATED, ev.CAUSE_MAX_EXECUTION_TIME), (ev.EVICTED, ev.EVICTED_DEACTIVATED)]
    assert e.state_of("ns/w") is State.INACTIVE and e.next_wakeup() is None


def test_restored_admission_continues_its_clocks_from_the_admitted_time() -> None:
    # Restarted at 100 s; admitted at 70 s, not ready: the 60 s timeout is due at 130 s, and the
    # 50 s execution limit at 120 s.
    e = engine(WAIT)
    e.add_workload(wl(admission=ADMISSION, admitted_time=70.0, pods_ready=False, max_execution_seconds=50),
                   100 * US)
    assert e.next_wakeup() == 120 * US
    e.mark_pods_ready("ns/w", 101 * US)
    assert e.next_wakeup() == 120 * US


def test_pods_ready_timeout_and_recovery_are_engine_deadlines() -> None:
    e = engine(WAIT)
    e.add_workload(wl())
    e.schedule(0)
    assert e.next_wakeup() == 60 * US
    e.mark_pods_ready("ns/w", 10 * US)
    assert e.next_wakeup() is None
    e.mark_pods_not_ready("ns/w", 20 * US)  # recoveryTimeout starts
    assert e.next_wakeup() == 50 * US
    events = e.schedule(50 * US)
    assert [(x.type, x.reason) for x in events][:1] == [(ev.EVICTED, ev.EVICTED_PODS_READY_TIMEOUT)]


def test_eviction_accumulates_whole_admitted_seconds() -> None:
    e = engine()
    e.add_workload(wl(max_execution_seconds=100))
    e.schedule(0)
    e.evict("ns/w", "Test", 12_500_000)
    assert e.workload_status("ns/w").accumulated_s == 12
