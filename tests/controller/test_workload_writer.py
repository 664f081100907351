"""The Workload status writer loses no work: a key leaves its dirty set only once its write landed or
was found moot, a failed write comes back with backoff, a key marked again during its write is written
again, and a pass that raises or is cancelled leaves its keys for the next run of the loop. Driven
through the controller's own handlers and engine, with an API stand-in that records, fails or holds
the server-side applies."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pykueue.controller.core import views, workload_writer
from pykueue.controller.core.workload_writer import WorkloadStatusWriter
from pykueue.controller.manager import Controller
from pykueue.kube.client import ApiError
from tests.controller.controllers import controller_with, quota_reserved, workload
from tests.controller.fakes import FakeKube, stop, until


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workload_writer, "retry_delay", lambda failures, base=0.0: 0.01)


def writer_of(ctl: Controller) -> tuple[WorkloadStatusWriter, FakeKube]:
    kube = FakeKube()
    ctl.status_writer.kube = kube  # type: ignore[assignment]
    return ctl.status_writer, kube


def names(bodies: list[dict[str, Any]]) -> list[str]:
    return [b["metadata"]["name"] for b in bodies]


def test_a_pass_that_raises_keeps_its_keys_for_the_next_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first pass fails while classifying its keys; the key is still dirty, and the loop started
    again (as the supervisor does) writes it. (Before: the pass emptied the dirty set first.)"""
    ctl, _ = controller_with(workload("a", "3"))
    ctl.run_cycle()
    writer, kube = writer_of(ctl)
    assert list(writer.dirty) == ["ns/a"]
    real, calls = views.holds_quota, []

    def flaky(engine: Any, key: str) -> bool:
        calls.append(key)
        if len(calls) == 1:
            raise RuntimeError("a bug in one pass")
        return real(engine, key)

    monkeypatch.setattr(views, "holds_quota", flaky)

    async def scenario() -> None:
        with pytest.raises(RuntimeError, match="a bug in one pass"):
            await writer.run()
        assert list(writer.dirty) == ["ns/a"]
        task = asyncio.create_task(writer.run())
        await until(lambda: bool(kube.applied) and not writer.dirty)
        await stop(task)

    asyncio.run(scenario())
    assert names(kube.applied) == ["a"]
    assert quota_reserved(kube.applied[0])["status"] == "True"


def test_an_error_building_one_status_is_retried_and_the_pass_writes_the_others(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Building a's status raises once: b is written in that pass, a after its backoff, and the loop
    never stops. (Before: the error ended the pass and a was never written.)"""
    ctl, _ = controller_with(workload("a", "1"), workload("b", "1"))
    ctl.run_cycle()
    writer, kube = writer_of(ctl)
    real, failed = workload_writer.desired_status, []

    def flaky(view: Any, obj: dict[str, Any], *args: Any, **kwargs: Any) -> dict[str, Any]:
        if obj["metadata"]["name"] == "a" and not failed:
            failed.append("a")
            raise KeyError("a bug building one status")
        return real(view, obj, *args, **kwargs)

    monkeypatch.setattr(workload_writer, "desired_status", flaky)

    async def scenario() -> None:
        task = asyncio.create_task(writer.run())
        await until(lambda: len(kube.applied) == 2 or task.done())
        assert not task.done()
        await until(lambda: not writer.dirty and not failures(writer))
        await stop(task)

    asyncio.run(scenario())
    assert names(kube.applied) == ["b", "a"]
    assert [quota_reserved(b)["status"] for b in kube.applied] == ["True", "True"]


def test_a_write_the_server_fails_stays_due_until_it_lands() -> None:
    ctl, _ = controller_with(workload("a", "3"))
    ctl.run_cycle()
    writer, kube = writer_of(ctl)
    kube.failures = [ApiError(503, {"reason": "ServiceUnavailable"}, "PATCH", "/a"), ConnectionResetError("reset")]
    kube.probe = lambda: failures(writer).get("ns/a", 0)

    async def scenario() -> None:
        task = asyncio.create_task(writer.run())
        await until(lambda: bool(kube.applied))
        await until(lambda: not writer.dirty)
        await stop(task)

    asyncio.run(scenario())
    assert kube.calls == ["a", "a", "a"]  # two failures, then the write that landed
    assert kube.probed == [0, 1, 2]  # each retry knew the failures before it
    assert names(kube.applied) == ["a"] and failures(writer) == {}


def test_a_key_marked_again_during_its_write_is_written_again() -> None:
    """The reservation is in flight when the engine evicts the workload: the write in flight must not
    take the new mark out of the dirty set, so the release follows."""
    ctl, _ = controller_with(workload("a", "3"))
    ctl.run_cycle()
    writer, kube = writer_of(ctl)

    async def scenario() -> None:
        kube.gate = asyncio.Event()
        task = asyncio.create_task(writer.run())
        await asyncio.wait_for(kube.entered.wait(), 5)
        ctl.engine.evict("ns/a", "Preempted", ctl.now_us() + 1, requeue_after_us=60_000_000)
        ctl.engine.job_stopped("ns/a", ctl.now_us() + 2)  # a bare Workload: nothing of it runs
        writer.mark("ns/a")
        kube.gate.set()
        await until(lambda: len(kube.applied) == 2)
        await until(lambda: not writer.dirty)
        await stop(task)

    asyncio.run(scenario())
    assert [quota_reserved(b)["status"] for b in kube.applied] == ["True", "False"]


def test_a_cancelled_pass_leaves_its_write_in_flight_dirty() -> None:
    """(Before: the pass had emptied the dirty set; the write cancelled in flight was lost.)"""
    ctl, _ = controller_with(workload("a", "3"))
    ctl.run_cycle()
    writer, kube = writer_of(ctl)

    async def scenario() -> None:
        kube.gate = asyncio.Event()
        task = asyncio.create_task(writer.run())
        await asyncio.wait_for(kube.entered.wait(), 5)
        await stop(task)
        assert list(writer.dirty) == ["ns/a"]
        kube.gate.set()
        task = asyncio.create_task(writer.run())  # started again: its first pass takes the key up
        await until(lambda: bool(kube.applied) and not writer.dirty)
        await stop(task)

    asyncio.run(scenario())
    assert names(kube.applied) == ["a"]


def test_a_pending_message_cancelled_in_flight_stays_in_the_backlog() -> None:
    """A 6 cpu workload on a 4 cpu queue is told why it waits; its message is written from the backlog,
    and stays there until the write is done. (Before: it left the backlog before its write.)"""
    ctl, _ = controller_with(workload("a", "6"))
    ctl.run_cycle()
    writer, kube = writer_of(ctl)

    async def scenario() -> None:
        kube.gate = asyncio.Event()
        task = asyncio.create_task(writer.run())
        await asyncio.wait_for(kube.entered.wait(), 5)
        assert list(writer.messages) == ["ns/a"] and not writer.dirty  # moved to the backlog, in flight
        await stop(task)
        assert list(writer.messages) == ["ns/a"]
        kube.gate.set()
        task = asyncio.create_task(writer.run())
        await until(lambda: bool(kube.applied) and not writer.messages)
        await stop(task)

    asyncio.run(scenario())
    told = quota_reserved(kube.applied[0])
    assert told["status"] == "False" and "insufficient" in told["message"]


@pytest.mark.parametrize("refusal", [ApiError(503, {"reason": "ServiceUnavailable"}, "PATCH", "/a"),
                                     ApiError(422, {"reason": "Invalid"}, "PATCH", "/a")], ids=["503", "422"])
def test_reservations_wait_until_a_failed_release_lands(refusal: ApiError) -> None:
    """The API shows a holding quota; the engine evicts a and admits b in its place. a's release fails
    once: b's reservation is held back, dirty, and written only after a's release got through. Also
    when the server refused the release's content (422), which a retry may not cure (before: b went
    out at once, and the API showed 6 cpu reserved on 4)."""
    ctl, _ = controller_with(workload("a", "3"))
    ctl.run_cycle()
    writer, kube = writer_of(ctl)
    store = ctl.informers["workloads"].objects  # type: ignore[attr-defined]
    store["ns/a"]["status"] = {"conditions": [{"type": "QuotaReserved", "status": "True",
                                               "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
    ctl.engine.evict("ns/a", "Preempted", ctl.now_us() + 1, requeue_after_us=60_000_000)
    ctl.engine.job_stopped("ns/a", ctl.now_us() + 2)  # a bare Workload: nothing of it runs
    b = workload("b", "3")
    store["ns/b"] = b
    ctl.workload_sync.handle("ADDED", None, b)
    ctl.run_cycle()
    assert set(writer.dirty) == {"ns/a", "ns/b"}
    kube.failures = [refusal]

    async def scenario() -> None:
        task = asyncio.create_task(writer.run())
        await until(lambda: len(kube.applied) == 2)
        await until(lambda: not writer.dirty)
        await stop(task)

    asyncio.run(scenario())
    assert kube.calls == ["a", "a", "b"]  # b was not even tried while a's release was failing
    assert [(b["metadata"]["name"], quota_reserved(b)["status"]) for b in kube.applied] == [
        ("a", "False"), ("b", "True")]


def test_a_workload_gone_from_the_api_is_moot_and_leaves_the_dirty_set() -> None:
    ctl, _ = controller_with(workload("a", "3"))
    ctl.run_cycle()
    writer, kube = writer_of(ctl)
    del ctl.informers["workloads"].objects["ns/a"]  # type: ignore[attr-defined]

    async def scenario() -> None:
        task = asyncio.create_task(writer.run())
        await until(lambda: not writer.dirty)
        await stop(task)

    asyncio.run(scenario())
    assert kube.calls == [] and failures(writer) == {}


def test_a_status_already_written_is_not_sent_again() -> None:
    ctl, _ = controller_with(workload("a", "3"))
    ctl.run_cycle()
    writer, kube = writer_of(ctl)

    async def scenario() -> None:
        task = asyncio.create_task(writer.run())
        await until(lambda: bool(kube.applied) and not writer.dirty)
        writer.mark("ns/a")  # nothing changed since
        await until(lambda: not writer.dirty)
        await stop(task)

    asyncio.run(scenario())
    assert kube.calls == ["a"]


def test_an_admission_is_never_changed_in_place() -> None:
    """The API shows `a` admitted in cq; the engine has since released it and reserved it again with
    another count (as if on another flavor, unwritten meanwhile): the release is applied first, then
    the new admission, since the CRD and the webhook refuse an admission changed in place."""
    ctl, _ = controller_with(workload("a", "3"))
    ctl.run_cycle()
    writer, kube = writer_of(ctl)
    asyncio.run(writer.write("ns/a"))
    shown = {**workload("a", "3"), "status": kube.applied[-1]["status"]}
    shown["status"]["admission"]["podSetAssignments"][0]["flavors"] = {"cpu": "elsewhere"}
    ctl.informers["workloads"].objects["ns/a"] = shown  # type: ignore[attr-defined]
    writer.records.at("ns/a").written = None  # as after a restart: only the API's copy is known
    kube.applied.clear()
    asyncio.run(writer.write("ns/a"))
    assert [("admission" in b["status"], quota_reserved(b)["status"]) for b in kube.applied] == [
        (False, "False"), (True, "True")]
    kube.applied.clear()
    same_placement = {**workload("a", "3"), "status": shown["status"] | {"admission": kube_admission(ctl)}}
    same_placement["status"]["conditions"] = [{**c, "message": "older words"} for c in shown["status"]["conditions"]]
    ctl.informers["workloads"].objects["ns/a"] = same_placement  # type: ignore[attr-defined]
    writer.records.at("ns/a").written = None
    asyncio.run(writer.write("ns/a"))
    assert len(kube.applied) == 1 and "admission" in kube.applied[0]["status"]  # the same placement: one write


def test_after_a_restart_a_status_the_api_shows_already_is_not_written_again() -> None:
    """A new record knows nothing of earlier writes: the cached object decides. `a` admitted, its
    status as the API shows it: nothing is sent; the same with one condition's message changed by
    someone else: the owned status is applied again."""
    ctl, _ = controller_with(workload("a", "3"))
    ctl.run_cycle()
    writer, kube = writer_of(ctl)
    asyncio.run(writer.write("ns/a"))
    shown = {**workload("a", "3"), "status": kube.applied[-1]["status"]}
    ctl.informers["workloads"].objects["ns/a"] = shown  # type: ignore[attr-defined]
    writer.records.at("ns/a").written = None  # as after a restart: only the API's copy is known
    kube.applied.clear()
    asyncio.run(writer.write("ns/a"))
    assert kube.applied == []
    edited = {**shown, "status": {**shown["status"], "conditions": [
        {**c, "message": "edited"} if c["type"] == "Admitted" else c for c in shown["status"]["conditions"]]}}
    ctl.informers["workloads"].objects["ns/a"] = edited  # type: ignore[attr-defined]
    writer.records.at("ns/a").written = None
    asyncio.run(writer.write("ns/a"))
    assert [quota_reserved(b)["status"] for b in kube.applied] == ["True"]


def failures(writer: WorkloadStatusWriter) -> dict[str, int]:
    """The keys whose last writes failed, and how many in a row."""
    return {k: rec.failures for k, rec in writer.records.items() if rec.failures}


def kube_admission(ctl: Controller) -> dict[str, Any]:
    from pykueue.controller.core.workload_status import admission_status
    w = ctl.engine.workload_status("ns/a")
    assert w is not None and w.admission is not None
    return admission_status(w.admission, w.spec)
