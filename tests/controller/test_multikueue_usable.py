"""A worker is usable only once its caches have listed: a Secret rotation reconnects it with fresh,
empty caches, and reading those as "no copy there" would give up the workload running on it."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from pykueue.controller.multikueue.clusters import Worker, Workers


def _workers(synced: list[bool]) -> Workers:
    workers = Workers(None, {}, "ns", "o", changed=lambda n: None, remote_event=lambda *a: None)  # type: ignore[arg-type]
    informers: dict[str, Any] = {}
    for plural, done in zip(("workloads", "jobs"), synced, strict=True):
        event = asyncio.Event()
        if done:
            event.set()
        informers[plural] = SimpleNamespace(synced=event)
    workers.workers["w1"] = Worker("w1", kube=object(), connected=True, informers=informers)  # type: ignore[arg-type]
    return workers


def test_a_connected_worker_is_usable_once_both_caches_have_listed() -> None:
    assert _workers([True, True]).usable("w1") is not None
    assert _workers([True, False]).usable("w1") is None
    assert _workers([False, False]).usable("w1") is None


def test_a_connected_worker_without_caches_yet_is_not_usable() -> None:
    workers = _workers([True, True])
    workers.workers["w1"].informers.clear()
    assert workers.usable("w1") is None
