"""Stand-ins for the controller's unit tests: an API that records, fails or holds server-side
applies, and waiting on the event loop for a condition instead of sleeping a fixed time."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from pykueue.kube import resources as r
from pykueue.kube.client import ApiError


class FakeKube:
    """Server-side applies: recorded when they land; `failures` are raised by the next calls, in
    order; while `gate` is set up, each call waits for it (`entered` tells the test one is waiting);
    `probe`, when given, is read at each call into `probed`."""

    def __init__(self) -> None:
        self.applied: list[dict[str, Any]] = []
        self.calls: list[str] = []
        self.failures: list[Exception] = []
        self.gate: asyncio.Event | None = None
        self.entered = asyncio.Event()
        self.probe: Callable[[], Any] | None = None
        self.probed: list[Any] = []

    async def apply(self, res: r.Resource, body: dict[str, Any], **_: Any) -> dict[str, Any]:
        self.calls.append(body["metadata"]["name"])
        if self.probe is not None:
            self.probed.append(self.probe())
        if self.gate is not None:
            self.entered.set()
            await self.gate.wait()
        if self.failures:
            raise self.failures.pop(0)
        self.applied.append(body)
        return body


async def until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.002)


async def stop(task: asyncio.Task) -> None:
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


class NoCluster:
    """A Kube where nothing is installed: the certificate manager has no bundle to patch, and the
    webhooks' caches list nothing and then hear nothing (so a server starts at once, as on an empty
    cluster, instead of waiting out its caches' first list)."""

    async def list(self, res: Any, **_: Any) -> dict[str, Any]:
        return {"items": [], "metadata": {"resourceVersion": "1"}}

    async def watch(self, res: Any, *_: Any, **__: Any) -> AsyncIterator[dict[str, Any]]:
        await asyncio.Event().wait()
        yield {}

    async def get(self, res: Any, name: str, namespace: str | None = None) -> dict[str, Any]:
        raise ApiError(404, {"reason": "NotFound"}, "GET", res.path(namespace, name))
