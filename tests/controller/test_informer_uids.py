"""An object is its UID: an informer that finds another UID under a name it knows (the object deleted
and re-created while no watch saw it) tells its handler of a delete and an add, never a change, so no
state of the old object is carried over to its successor."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from pykueue.kube import resources as r
from pykueue.kube.informer import Informer


def wl(uid: str, version: str) -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": "w", "namespace": "ns", "uid": uid, "resourceVersion": version}}


class ListingKube:
    """Answers one list with ``items`` and a watch with ``events``."""

    def __init__(self, items: list[dict[str, Any]], events: list[dict[str, Any]] | None = None) -> None:
        self.items, self.events = items, events or []

    async def list(self, res: r.Resource, **_: Any) -> dict[str, Any]:
        return {"items": self.items, "metadata": {"resourceVersion": "10"}}

    async def watch(self, *_: Any, **__: Any) -> AsyncIterator[dict[str, Any]]:
        for event in self.events:
            yield event


def record(inf_kube: ListingKube, before: dict[str, Any] | None) -> list[tuple[str, str | None, str | None]]:
    seen: list[tuple[str, str | None, str | None]] = []

    def handler(kind: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        seen.append((kind, old and old["metadata"]["uid"], new and new["metadata"]["uid"]))

    inf = Informer(inf_kube, r.WORKLOAD, handler)  # type: ignore[arg-type]
    if before is not None:
        inf.store["ns/w"] = before

    async def run() -> None:
        await inf._list()
        await inf._watch()
    asyncio.run(run())
    return seen


def test_a_relist_that_finds_another_uid_is_a_delete_and_an_add() -> None:
    assert record(ListingKube([wl("new", "9")]), wl("old", "5")) == [("DELETED", "old", None), ("ADDED", None, "new")]


def test_the_same_uid_at_a_new_version_is_a_change() -> None:
    assert record(ListingKube([wl("same", "9")]), wl("same", "5")) == [("MODIFIED", "same", "same")]


def test_a_watched_change_to_another_uid_is_a_delete_and_an_add() -> None:
    events = [{"type": "MODIFIED", "object": wl("b", "12")}]
    assert record(ListingKube([wl("a", "9")], events), None) == [
        ("ADDED", None, "a"), ("DELETED", "a", None), ("ADDED", None, "b")]
