"""The list-then-watch informer against a scripted API: a paginated list, then a watch from the list's
resourceVersion; watch events keep the cache and reach the handler; 410 Gone relists, and the relist
reports what changed and what was deleted meanwhile; a failing handler goes to `on_error` and the watch
goes on."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from pykueue.kube import resources as r
from pykueue.kube.client import ApiError
from pykueue.kube.informer import Informer
from tests.controller.fakes import until


def flavor(name: str, rv: str, **meta: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "resourceVersion": rv, **meta}, "spec": {}}


def page(*items: dict[str, Any], rv: str = "", cont: str = "") -> dict[str, Any]:
    meta = {"continue": cont} if cont else {"resourceVersion": rv}
    return {"items": list(items), "metadata": meta}


class ScriptedKube:
    """`lists`: the answers of the next list calls, in order. `watches`: per watch call, the events it
    streams (or an exception it raises); once they run out a watch streams nothing and stays open."""

    def __init__(self, lists: list[dict[str, Any]], watches: list[list[dict[str, Any]] | Exception]) -> None:
        self.lists = lists
        self.watches = watches
        self.list_queries: list[dict[str, Any]] = []
        self.watched_from: list[str] = []

    async def list(self, res: r.Resource, **query: Any) -> dict[str, Any]:
        self.list_queries.append(query)
        return self.lists.pop(0)

    async def watch(self, res: r.Resource, resource_version: str, timeout_seconds: int = 300, *,
                    label_selector: str | None = None) -> AsyncIterator[dict[str, Any]]:
        self.watched_from.append(resource_version)
        if not self.watches:
            await asyncio.Event().wait()
        script = self.watches.pop(0)
        if isinstance(script, Exception):
            raise script
        for event in script:
            yield event


class Seen:
    """The handler: records (type, old name@rv, new name@rv); raises for objects named `bad`."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str | None, str | None]] = []

    def __call__(self, kind: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        def tag(o: dict[str, Any] | None) -> str | None:
            return None if o is None else f"{o['metadata']['name']}@{o['metadata']['resourceVersion']}"
        if (new or old or {})["metadata"]["name"] == "bad":
            raise RuntimeError("handler bug")
        self.calls.append((kind, tag(old), tag(new)))



def drive(inf: Informer, done: Callable[[], bool]) -> None:
    async def scenario() -> None:
        task = asyncio.create_task(inf.run())
        await until(done)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())


def test_the_list_is_paged_then_the_watch_starts_from_its_version() -> None:
    kube = ScriptedKube([page(flavor("a", "3", managedFields=[{"manager": "kubectl"}]), cont="next"),
                         page(flavor("b", "4"), rv="10")], [])
    seen = Seen()
    inf = Informer(kube, r.RESOURCE_FLAVOR, seen, label_selector="team=x")  # type: ignore[arg-type]
    drive(inf, lambda: bool(kube.watched_from))
    assert kube.list_queries == [{"limit": 500, "labelSelector": "team=x"},
                                 {"limit": 500, "continue": "next", "labelSelector": "team=x"}]
    assert kube.watched_from == ["10"]
    assert seen.calls == [("ADDED", None, "a@3"), ("ADDED", None, "b@4")]
    a = inf.get("a")
    assert a is not None and "managedFields" not in a["metadata"]
    assert (a["apiVersion"], a["kind"]) == ("kueue.x-k8s.io/v1beta2", "ResourceFlavor")
    assert inf.synced.is_set() and inf.relists == 1


def test_watch_events_keep_the_cache_and_reach_the_handler() -> None:
    events = [
        {"type": "ADDED", "object": flavor("c", "11")},
        {"type": "MODIFIED", "object": flavor("a", "12")},
        {"type": "DELETED", "object": flavor("b", "13")},
        {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "14"}}},
    ]
    kube = ScriptedKube([page(flavor("a", "3"), flavor("b", "4"), rv="10")], [events])
    seen = Seen()
    inf = Informer(kube, r.RESOURCE_FLAVOR, seen)  # type: ignore[arg-type]
    drive(inf, lambda: inf.resource_version == "14")
    assert seen.calls[2:] == [("ADDED", None, "c@11"), ("MODIFIED", "a@3", "a@12"), ("DELETED", "b@4", None)]
    assert {k: v["metadata"]["resourceVersion"] for k, v in inf.store.items()} == {"a": "12", "c": "11"}


def test_410_gone_relists_and_reports_what_changed_and_what_was_deleted_meanwhile() -> None:
    """Between the lists, a changed (3 -> 7), b was deleted, c appeared and d stayed as it was."""
    kube = ScriptedKube(
        [page(flavor("a", "3"), flavor("b", "4"), flavor("d", "5"), rv="10"),
         page(flavor("a", "7"), flavor("c", "8"), flavor("d", "5"), rv="20")],
        [[{"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired"}}]])
    seen = Seen()
    inf = Informer(kube, r.RESOURCE_FLAVOR, seen)  # type: ignore[arg-type]
    drive(inf, lambda: len(kube.watched_from) == 2)
    assert kube.watched_from == ["10", "20"]
    assert seen.calls[3:] == [("MODIFIED", "a@3", "a@7"), ("ADDED", None, "c@8"), ("DELETED", "b@4", None)]
    assert sorted(inf.store) == ["a", "c", "d"] and inf.relists == 2


def test_a_watch_refused_with_410_relists_too() -> None:
    kube = ScriptedKube([page(flavor("a", "3"), rv="10"), page(rv="20")],
                        [ApiError(410, {"reason": "Expired"}, "WATCH", "/flavors")])
    seen = Seen()
    inf = Informer(kube, r.RESOURCE_FLAVOR, seen)  # type: ignore[arg-type]
    drive(inf, lambda: len(kube.watched_from) == 2)
    assert kube.watched_from == ["10", "20"]
    assert seen.calls == [("ADDED", None, "a@3"), ("DELETED", "a@3", None)]


def test_another_watch_error_resumes_from_the_last_version_without_relisting() -> None:
    events = [{"type": "ADDED", "object": flavor("c", "11")},
              {"type": "ERROR", "object": {"kind": "Status", "code": 500, "reason": "InternalError"}}]
    kube = ScriptedKube([page(rv="10")], [events])
    inf = Informer(kube, r.RESOURCE_FLAVOR, Seen())  # type: ignore[arg-type]
    drive(inf, lambda: len(kube.watched_from) == 2)
    assert kube.watched_from == ["10", "11"] and inf.relists == 1


def test_a_failing_handler_goes_to_on_error_and_the_watch_goes_on() -> None:
    failed: list[tuple[str, str, str]] = []
    events = [{"type": "ADDED", "object": flavor("bad", "11")}, {"type": "ADDED", "object": flavor("good", "12")}]
    kube = ScriptedKube([page(rv="10")], [events])
    seen = Seen()
    inf = Informer(kube, r.RESOURCE_FLAVOR, seen,  # type: ignore[arg-type]
                   on_error=lambda i, key, obj, exc: failed.append((key, obj["metadata"]["resourceVersion"], str(exc))))
    drive(inf, lambda: inf.resource_version == "12")
    assert failed == [("bad", "11", "handler bug")]
    assert seen.calls == [("ADDED", None, "good@12")]
    assert sorted(inf.store) == ["bad", "good"]  # the cache moved on: on_error is how the owner catches up


def test_without_on_error_a_failing_handler_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    kube = ScriptedKube([page(flavor("bad", "3"), flavor("good", "4"), rv="10")], [])
    seen = Seen()
    inf = Informer(kube, r.RESOURCE_FLAVOR, seen)  # type: ignore[arg-type]
    with caplog.at_level(logging.ERROR, logger="pykueue.informer"):
        drive(inf, lambda: bool(kube.watched_from))
    assert [rec.getMessage() for rec in caplog.records] == ["event handler failed"]
    assert seen.calls == [("ADDED", None, "good@4")]


def test_namespaced_objects_are_keyed_by_namespace_and_name() -> None:
    lq = {"metadata": {"name": "lq", "namespace": "ns", "resourceVersion": "3"}, "spec": {}}
    kube = ScriptedKube([page(lq, rv="10")], [])
    inf = Informer(kube, r.LOCAL_QUEUE, Seen())  # type: ignore[arg-type]
    drive(inf, lambda: bool(kube.watched_from))
    assert list(inf.store) == ["ns/lq"]
