"""List-then-watch informers with an in-memory cache per kind.

The loop is client-go's: list (paginated) to get a consistent snapshot and its resourceVersion, tell
the handler what changed against the cache (deletes included, so nothing is lost across a relist),
then watch from that version with bookmarks; a watch that times out resumes from the last version
seen; 410 Gone (the version was compacted away) relists; a broken connection retries with backoff.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from pykueue.kube.client import ApiError, Kube
from pykueue.kube.resources import Resource

log = logging.getLogger("pykueue.informer")

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"
Handler = Callable[[str, dict[str, Any] | None, dict[str, Any] | None], None]  # (type, old, new)
# (informer, key, the object being handled, the exception): the handler failed after the cache moved on
ErrorHandler = Callable[["Informer", str, dict[str, Any], Exception], None]
PAGE = 500


def key_of(obj: dict[str, Any]) -> str:
    meta = obj["metadata"]
    namespace = meta.get("namespace")
    return f"{namespace}/{meta['name']}" if namespace else meta["name"]


def _strip(obj: dict[str, Any]) -> None:
    """Drop ``metadata.managedFields`` before caching, as controller-runtime's
    TransformStripManagedFields does for Kueue: nothing here reads them, and they are about half of
    a Workload's bytes."""
    meta = obj.get("metadata")
    if meta:
        meta.pop("managedFields", None)


def _replaced(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Another object under the same name (deleted and re-created while no watch saw it): an object is
    its UID, so its handlers hear a delete of the old one and an add of the new one."""
    before, after = old["metadata"].get("uid"), new["metadata"].get("uid")
    return bool(before and after and before != after)


class _Gone(Exception):
    """The watch's resourceVersion is too old: relist."""


class Informer:
    """Keeps `store` equal to the server's objects of one kind and calls `handler` on each change."""

    def __init__(self, kube: Kube, resource: Resource, handler: Handler, *, watch_timeout: int = 300,
                 on_error: ErrorHandler | None = None, label_selector: str | None = None) -> None:
        self.kube = kube
        self.label_selector = label_selector  # only the objects it matches (Pods Kueue manages)
        self.resource = resource
        self.handler = handler
        self.on_error = on_error
        self.watch_timeout = watch_timeout
        self.store: dict[str, dict[str, Any]] = {}
        self.synced = asyncio.Event()
        self.resource_version = ""
        self.relists = 0

    def get(self, key: str) -> dict[str, Any] | None:
        return self.store.get(key)

    async def run(self) -> None:
        """Forever: list, then watch, relisting on 410 and backing off on errors."""
        backoff = 0.2
        need_list = True
        loop = asyncio.get_running_loop()
        while True:
            try:
                if need_list:
                    await self._list()
                    need_list = False
                started = loop.time()
                await self._watch()
                if loop.time() - started < 1.0:  # a server closing watches at once: no hot loop
                    await asyncio.sleep(backoff)
                    backoff = min(backoff * 2, 30.0)
                else:
                    backoff = 0.2
            except asyncio.CancelledError:
                raise
            except _Gone:
                log.info("watch expired (410 Gone); relisting", extra={"fields": {"resource": self.resource.plural}})
                need_list = True
            except Exception as exc:  # noqa: BLE001 - any transport failure: retry, never die
                log.warning("watch failed; retrying", extra={"fields": {
                    "resource": self.resource.plural, "error": str(exc), "retryIn": f"{backoff:.1f}s"}})
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 30.0)
                if isinstance(exc, ApiError) and exc.status == 410:
                    need_list = True

    def _handle(self, kind: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        """Tell the handler; its failure is the owner's to retry (the cache and the resourceVersion
        have moved on, so the watch will not deliver this change again), never the watch's."""
        try:
            self.handler(kind, old, new)
        except Exception as exc:  # noqa: BLE001 - handed to on_error, the watch goes on
            obj = new if new is not None else old
            assert obj is not None
            if self.on_error is None:
                log.exception("event handler failed", extra={"fields": {"resource": self.resource.plural}})
                return
            self.on_error(self, key_of(obj), obj, exc)

    async def _list(self) -> None:
        items: list[dict[str, Any]] = []
        query: dict[str, Any] = {"limit": PAGE}
        selector = {"labelSelector": self.label_selector} if self.label_selector else {}
        query.update(selector)
        while True:
            page = await self.kube.list(self.resource, **query)
            items.extend(page.get("items") or [])
            token = page.get("metadata", {}).get("continue")
            if not token:
                break
            query = {"limit": PAGE, "continue": token, **selector}
        self.relists += 1
        self.resource_version = page["metadata"]["resourceVersion"]
        seen = set()
        for obj in items:
            _strip(obj)
            obj.setdefault("apiVersion", self.resource.api_version)
            obj.setdefault("kind", self.resource.kind)
            key = key_of(obj)
            seen.add(key)
            old = self.store.get(key)
            self.store[key] = obj
            if old is None:
                self._handle(ADDED, None, obj)
            elif _replaced(old, obj):
                self._handle(DELETED, old, None)
                self._handle(ADDED, None, obj)
            elif old["metadata"].get("resourceVersion") != obj["metadata"].get("resourceVersion"):
                self._handle(MODIFIED, old, obj)
        for key in [k for k in self.store if k not in seen]:
            old = self.store.pop(key)
            self._handle(DELETED, old, None)
        self.synced.set()

    async def _watch(self) -> None:
        async for event in self.kube.watch(self.resource, self.resource_version, self.watch_timeout,
                                           label_selector=self.label_selector):
            kind, obj = event.get("type"), event.get("object") or {}
            if kind == "ERROR":
                if obj.get("code") == 410:
                    raise _Gone()
                raise ApiError(obj.get("code", 0), obj, "WATCH", self.resource.path())
            version = obj.get("metadata", {}).get("resourceVersion")
            if version:
                self.resource_version = version
            if kind == "BOOKMARK":
                continue
            _strip(obj)
            key = key_of(obj)
            old = self.store.get(key)
            if kind == DELETED:
                self.store.pop(key, None)
                self._handle(DELETED, old if old is not None else obj, None)
            else:
                self.store[key] = obj
                if old is not None and _replaced(old, obj):
                    self._handle(DELETED, old, None)
                    old = None
                self._handle(ADDED if old is None else MODIFIED, old, obj)
