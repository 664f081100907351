"""Pods-ready timeouts requeue with exponential backoff, capped by backoffMaxSeconds; past
backoffLimitCount the workload is deactivated."""

from __future__ import annotations

from pykueue.engine import model as m
from pykueue.engine.engine import Engine
from pykueue.engine.model import US
from pykueue.engine.workload import State


def engine(limit: int | None, base: int, cap: int) -> Engine:
    cfg = m.Config(wait_for_pods_ready=m.WaitForPodsReady(
        enable=True, timeout_seconds=10,
        requeuing=m.RequeuingStrategy(backoff_limit_count=limit, backoff_base_seconds=base, backoff_max_seconds=cap)))
    e = Engine(cfg)
    e.apply_resource_flavor(m.ResourceFlavor("f"))
    e.apply_cluster_queue(m.ClusterQueue(
        name="cq", namespace_selector=m.LabelSelector(),
        resource_groups=(m.ResourceGroup(("cpu",), (m.FlavorQuotas("f", {"cpu": m.ResourceQuota(1000)}),)),)))
    e.apply_local_queue(m.LocalQueue("ns", "q", "cq"))
    e.add_workload(m.Workload("ns", "w", "q", (m.PodSet("main", 1, {"cpu": 1000}),)))
    return e


def test_backoff_doubles_and_is_capped() -> None:
    e = engine(limit=None, base=60, cap=100)
    now = 0
    e.schedule(now)
    delays = []
    for _ in range(4):
        now += 10 * US  # the timeout passes with pods not ready
        e.pods_ready_timeout("ns/w", now)
        assert [(ev.type, ev.reason) for ev in e.take_events()] == [("Evicted", "PodsReadyTimeout")]
        info = e.workloads["ns/w"]
        assert info.state is State.PENDING
        wake = e.next_wakeup()
        assert wake is not None
        delays.append(wake - now)
        now = wake
        events = e.schedule(now)
        assert [ev.type for ev in events] == ["Requeued", "QuotaReserved", "Admitted"]
    assert delays == [60 * US, 100 * US, 100 * US, 100 * US]  # 60, 120 -> capped, 240 -> capped, ...
    assert e.workloads["ns/w"].requeue_count == 4


def test_limit_deactivates_after_the_last_allowed_requeue() -> None:
    e = engine(limit=1, base=5, cap=3600)
    e.schedule(0)
    e.pods_ready_timeout("ns/w", 10 * US)
    e.schedule(15 * US)
    assert e.workloads["ns/w"].state is State.ADMITTED
    e.pods_ready_timeout("ns/w", 25 * US)
    info = e.workloads["ns/w"]
    assert info.state is State.INACTIVE and info.evictions == 2
    assert e.reason_of(info) == "Deactivated"
    assert e.next_wakeup() is None
