"""Level-triggered failure paths: a handler that raises after the informer's cache moved on does not
lose the change (the key is synced again from the cache), and a work-queue key that fails comes back."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pykueue.controller import manager
from pykueue.engine import model
from pykueue.kube import resources as r
from pykueue.kube.informer import Informer
from pykueue.kube.workqueue import WorkQueue


def obj(name: str, rv: str) -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
            "metadata": {"name": name, "resourceVersion": rv}, "spec": {}}


class ListingKube:
    def __init__(self, items: list[dict[str, Any]]) -> None:
        self.items = items

    async def list(self, res: r.Resource, **_: Any) -> dict[str, Any]:
        return {"items": [dict(i) for i in self.items], "metadata": {"resourceVersion": "10"}}


def test_informer_hands_a_failing_handler_to_on_error_and_keeps_going() -> None:
    seen: list[str] = []
    failed: list[tuple[str, str]] = []

    def handler(kind: str, old: dict | None, new: dict | None) -> None:
        name = (new or old or {})["metadata"]["name"]
        if name == "bad":
            raise RuntimeError("boom")
        seen.append(name)

    inf = Informer(ListingKube([obj("bad", "1"), obj("good", "2")]), r.RESOURCE_FLAVOR, handler,  # type: ignore[arg-type]
                   on_error=lambda i, key, o, exc: failed.append((key, str(exc))))
    asyncio.run(inf._list())
    assert seen == ["good"] and failed == [("bad", "boom")]
    assert set(inf.store) == {"bad", "good"}  # the cache moved on: only on_error can bring it back


def test_controller_syncs_a_failed_key_again_from_the_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(manager, "RETRY_BASE_SECONDS", 0.01)
    ctl = manager.Controller(object(), model.Config(), clock=lambda: 1_800_000_000.0)  # type: ignore[arg-type]
    calls: list[str] = []

    def flaky(kind: str, old: dict | None, new: dict | None) -> None:
        calls.append(kind)
        if len(calls) < 3:
            raise RuntimeError("transient")
        ctl.queue_objects.sync(r.RESOURCE_FLAVOR, "f")

    async def scenario() -> None:
        inf = Informer(ListingKube([obj("f", "1")]), r.RESOURCE_FLAVOR, flaky,  # type: ignore[arg-type]
                       on_error=ctl._handler_failed)
        ctl.informers[r.RESOURCE_FLAVOR.plural] = inf
        await inf._list()
        for _ in range(200):
            if ctl.engine.flavors:
                break
            await asyncio.sleep(0.01)

    asyncio.run(scenario())
    assert calls == ["ADDED", "MODIFIED", "MODIFIED"]  # twice failed, then synced from the cache
    assert "f" in ctl.engine.flavors


def test_a_burst_of_failing_events_for_one_key_is_synced_again_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Three events of one key fail before its retry runs: one retry is pending, not three (each would
    hand the same cached object to the handler again)."""
    monkeypatch.setattr(manager, "RETRY_BASE_SECONDS", 0.05)
    ctl = manager.Controller(object(), model.Config(), clock=lambda: 1_800_000_000.0)  # type: ignore[arg-type]
    calls: list[str] = []

    def failing_then_fine(kind: str, old: dict | None, new: dict | None) -> None:
        calls.append(kind)
        if len(calls) <= 3:
            raise RuntimeError("transient")

    async def scenario() -> None:
        inf = Informer(ListingKube([obj("f", "1")]), r.RESOURCE_FLAVOR, failing_then_fine,  # type: ignore[arg-type]
                       on_error=ctl._handler_failed)
        ctl.informers[r.RESOURCE_FLAVOR.plural] = inf
        await inf._list()  # ADDED fails
        for _ in range(2):  # two more events of the key fail before the retry runs
            try:
                failing_then_fine("MODIFIED", None, obj("f", "1"))
            except RuntimeError as exc:
                ctl._handler_failed(inf, "f", obj("f", "1"), exc)
        await asyncio.sleep(0.5)

    asyncio.run(scenario())
    assert calls == ["ADDED", "MODIFIED", "MODIFIED", "MODIFIED"]  # the three failures, then one retry


def test_work_queue_brings_a_failing_key_back() -> None:
    async def scenario() -> list[str]:
        q = WorkQueue(base_delay=0.01)
        attempts: list[str] = []

        async def worker(key: str) -> None:
            attempts.append(key)
            if len(attempts) < 3:
                raise RuntimeError("conflict")

        q.add("k")
        task = asyncio.create_task(q.run(worker, lambda k, e: None))
        for _ in range(200):
            if len(attempts) >= 3:
                break
            await asyncio.sleep(0.01)
        task.cancel()
        return attempts

    assert asyncio.run(scenario()) == ["k", "k", "k"]


def test_a_supervised_loop_that_fails_is_started_again() -> None:
    from pykueue.controller.runtime.supervise import supervised

    async def scenario() -> int:
        runs = 0
        done = asyncio.Event()

        async def loop() -> None:
            nonlocal runs
            runs += 1
            if runs < 3:
                raise RuntimeError("a bug in one pass")
            done.set()
            await asyncio.Event().wait()  # runs on

        task = asyncio.create_task(supervised("test", loop, base=0.01))
        await asyncio.wait_for(done.wait(), 5)
        task.cancel()
        return runs

    assert asyncio.run(scenario()) == 3
