"""The ClusterQueue and LocalQueue status writer: what it writes (hand-derived from a 4 cpu queue
holding one 3 cpu workload and one pending), only when a status or the object's uid changed, and
no lost work: a write that fails or is refused is written again after backoff while the others go
on, and a pass that raises leaves the queues dirty."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pykueue.controller.core import queue_status, views
from pykueue.controller.core.queue_status import QueueStatusWriter
from pykueue.controller.manager import Controller
from pykueue.kube.client import ApiError
from tests.controller.controllers import controller_with, workload
from tests.controller.fakes import FakeKube, stop, until

NOW = "2027-01-15T08:00:00Z"  # the controllers' clock, 1_800_000_000 s
USAGE = [{"name": "default", "resources": [{"name": "cpu", "total": "3", "borrowed": "0"}]}]


@pytest.fixture(autouse=True)
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(queue_status, "QUEUE_STATUS_SECONDS", 0.0)
    monkeypatch.setattr(queue_status, "retry_delay", lambda failures, base=0.0: 0.01)


def writer() -> tuple[Controller, QueueStatusWriter, FakeKube]:
    """a (3 cpu) admitted, b (3 cpu) pending on the 4 cpu ClusterQueue cq, through LocalQueue ns/lq."""
    ctl, _ = controller_with(workload("a", "3"), workload("b", "3"))
    ctl.run_cycle()
    kube = FakeKube()
    ctl.queue_status.kube = kube  # type: ignore[assignment]
    return ctl, ctl.queue_status, kube


def by_kind(bodies: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {b["kind"]: b for b in bodies}


def test_each_queue_status_is_written_with_its_counts_usage_and_condition() -> None:
    _, qs, kube = writer()
    assert asyncio.run(qs.write_all()) == []
    bodies = by_kind(kube.applied)
    assert set(bodies) == {"ClusterQueue", "LocalQueue"}
    cq = bodies["ClusterQueue"]
    assert cq["metadata"] == {"name": "cq"} and cq["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert cq["status"] == {
        "pendingWorkloads": 1, "reservingWorkloads": 1, "admittedWorkloads": 1,
        "flavorsReservation": USAGE, "flavorsUsage": USAGE,
        "conditions": [{"type": "Active", "status": "True", "reason": "Ready",
                        "message": "Can admit new workloads", "lastTransitionTime": NOW}]}
    lq = bodies["LocalQueue"]
    assert lq["metadata"] == {"name": "lq", "namespace": "ns"}
    assert (lq["status"]["pendingWorkloads"], lq["status"]["reservingWorkloads"],
            lq["status"]["admittedWorkloads"]) == (1, 1, 1)


def test_an_unchanged_status_is_not_written_again_but_a_recreated_object_is() -> None:
    ctl, qs, kube = writer()
    asyncio.run(qs.write_all())
    asyncio.run(qs.write_all())
    assert kube.calls == ["cq", "lq"]
    ctl.informers["clusterqueues"].objects["cq"]["metadata"]["uid"] = "uid-cq-2"  # type: ignore[attr-defined]
    asyncio.run(qs.write_all())
    assert kube.calls == ["cq", "lq", "cq"]


def test_a_condition_keeps_its_transition_time_while_its_status_holds() -> None:
    ctl, qs, kube = writer()
    since = "2026-01-01T00:00:00Z"
    ctl.informers["clusterqueues"].objects["cq"]["status"] = {  # type: ignore[attr-defined]
        "conditions": [{"type": "Active", "status": "True", "lastTransitionTime": since}]}
    asyncio.run(qs.write_all())
    assert by_kind(kube.applied)["ClusterQueue"]["status"]["conditions"][0]["lastTransitionTime"] == since


def test_one_queue_failing_does_not_stop_the_others() -> None:
    """(Before: the 503 ended the pass with an exception.)"""
    _, qs, kube = writer()
    kube.failures = [ApiError(503, {"reason": "ServiceUnavailable", "message": "busy"}, "PATCH", "/cq")]
    errors = asyncio.run(qs.write_all())
    assert errors == ["PATCH /cq: 503 ServiceUnavailable: busy"]
    assert set(qs.written) == {("LocalQueue", "ns/lq")}


def test_a_refused_status_is_written_again_after_backoff() -> None:
    """A 422 used to be logged and left until some other change; it is retried as any failure is."""
    _, qs, kube = writer()
    kube.failures = [ApiError(422, {"reason": "Invalid"}, "PATCH", "/cq")]

    async def scenario() -> None:
        qs.dirty.set()
        task = asyncio.create_task(qs.run())
        await until(lambda: ("ClusterQueue", "cq") in qs.written)
        await stop(task)

    asyncio.run(scenario())
    assert kube.calls == ["cq", "lq", "cq"]


def test_a_queue_gone_from_the_api_is_moot() -> None:
    _, qs, kube = writer()
    kube.failures = [ApiError(404, {"reason": "NotFound"}, "PATCH", "/cq")]
    assert asyncio.run(qs.write_all()) == []
    assert set(qs.written) == {("LocalQueue", "ns/lq")}


def test_a_pass_that_raises_leaves_the_queues_dirty_and_fails_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug in a pass is the supervisor's to count and restart; the restarted loop writes at once.
    (Before: the loop swallowed it, and the next pass depended on its own retry.)"""
    _, qs, kube = writer()
    real, calls = views.cluster_queue_status, []

    def flaky(engine: Any, name: str) -> Any:
        calls.append(name)
        if len(calls) == 1:
            raise RuntimeError("a bug in one pass")
        return real(engine, name)

    monkeypatch.setattr(views, "cluster_queue_status", flaky)

    async def scenario() -> None:
        qs.dirty.set()
        with pytest.raises(RuntimeError, match="a bug in one pass"):
            await asyncio.wait_for(qs.run(), 5)
        assert qs.dirty.is_set()
        task = asyncio.create_task(qs.run())
        await until(lambda: len(qs.written) == 2)
        await stop(task)

    asyncio.run(scenario())
    assert kube.calls == ["cq", "lq"]


def test_a_queue_the_engine_no_longer_has_leaves_the_written_table() -> None:
    """What was written for a LocalQueue the engine dropped is forgotten at the next pass (the table
    would otherwise grow with every queue ever made)."""
    ctl, qs, _ = writer()
    asyncio.run(qs.write_all())
    assert set(qs.written) == {("ClusterQueue", "cq"), ("LocalQueue", "ns/lq")}
    qs.written[("LocalQueue", "ns/gone")] = ("uid", ())  # type: ignore[assignment]
    asyncio.run(qs.write_all())
    assert set(qs.written) == {("ClusterQueue", "cq"), ("LocalQueue", "ns/lq")}
