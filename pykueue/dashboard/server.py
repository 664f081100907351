"""The dashboard's aiohttp application: pages, their live fragments, the server-sent events and the
what-if box. Read-only: no handler writes to the API server.

``Dashboard`` is what both front ends serve: ``pykueue dashboard`` on its own listener, and the
controller on ``--dashboard-port`` behind its delegated authentication (the middlewares it passes).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from pykueue.dashboard import render, view
from pykueue.dashboard.answers import READ, WhatIfError, answer, ready
from pykueue.dashboard.guard import add_headers
from pykueue.dashboard.offload import Offload
from pykueue.dashboard.state import Hub
from pykueue.engine import model

HEARTBEAT_SECONDS = 15.0  # an SSE comment line, so proxies keep the stream open and dead peers are found
OVERVIEW_ROWS = 10  # workloads per list on the overview; the queue page has them all, paged
HTML = "text/html; charset=utf-8"
CACHE_SECONDS = 5.0  # a rendered page is reused while the state is the same and for at most this long (ages)
CACHE_ENTRIES = 256
MAX_OWNERS = 10  # the Pods of a pod group shown on its workload's page; the rest are counted
PodReader = Callable[[str, str], Awaitable[dict[str, Any] | None]]  # (namespace, name) -> the Pod, or None


class Dashboard:
    """The pages over one live state (``objects``: plural -> key -> object) and its ``hub``."""

    def __init__(self, objects: Callable[[], Mapping[str, Mapping[str, dict[str, Any]]]], hub: Hub,
                 config: model.Config | None = None, *, clock: Callable[[], float] = time.time,
                 unreadable: Callable[[], Mapping[str, str]] = dict, pod: PodReader | None = None,
                 offload: Offload | None = None, root: str = "/") -> None:
        self.objects = objects
        self.root = root  # the path the pages are mounted at: links and the script's requests start with it
        self.pod = pod
        self.unreadable = unreadable
        self.hub = hub
        self.config = config or model.Config()
        self.clock = clock
        self.offload = offload or Offload()
        self._rendered: dict[tuple[object, ...], asyncio.Future[str]] = {}

    def snapshot(self) -> dict[str, dict[str, dict[str, Any]]]:
        """The objects the engine's answers read, as they are now, for the worker process."""
        objs = self.objects()
        return {plural: dict(objs.get(plural, {})) for plural in READ}

    async def _cached(self, request: web.Request, build: Callable[[], Awaitable[str]], *params: object) -> str:
        """The live part of a page, rendered once per state version (and per few seconds, which ages
        need) however many pages show it: a change wakes every open page at once. Keyed on the path and
        the ``params`` that change the answer, never on the rest of the query (``?x=N`` is the same
        page); requests that arrive while it is being rendered wait for that rendering."""
        key = (self.hub.version, int(self.clock() // CACHE_SECONDS), request.path, *params)
        task = self._rendered.get(key)
        if task is None:
            if len(self._rendered) >= CACHE_ENTRIES or any(k[:2] != key[:2] for k in self._rendered):
                self._rendered.clear()
            task = self._rendered[key] = asyncio.ensure_future(build())
            task.add_done_callback(lambda done: self._forget_failure(key, done))
        return await asyncio.shield(task)  # a reader who leaves does not cancel it for the others

    def _forget_failure(self, key: tuple[object, ...], task: asyncio.Future[str]) -> None:
        """A rendering that failed (the engine busy: 503) is tried again by the next request."""
        if (task.cancelled() or task.exception() is not None) and self._rendered.get(key) is task:
            del self._rendered[key]

    def app(self, middlewares: tuple[Any, ...] = ()) -> web.Application:
        app = web.Application(middlewares=list(middlewares), client_max_size=2 * 1024 * 1024)
        app.on_response_prepare.append(add_headers)
        app.on_startup.append(self._start)
        app.router.add_get("/", self.overview)
        app.router.add_get("/queues/{name}", self.queue)
        app.router.add_get("/workloads/{namespace}/{name}", self.workload)
        app.router.add_get("/what-if", self.what_if)
        app.router.add_post("/what-if", self.what_if)
        app.router.add_get("/events", self.events)
        return app

    async def _start(self, app: web.Application) -> None:
        self.offload.start(ready)

    # ---- pages -------------------------------------------------------------------------------------

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self.clock(), UTC)

    def _colors(self, objs: Mapping[str, Mapping[str, Any]]) -> dict[str, tuple[str, str]]:
        return view.queue_colors(list(objs.get("clusterqueues", {})))

    def _fair_sharing(self, objs: Mapping[str, Mapping[str, Any]]) -> bool:
        return self.config.fair_sharing.enable or view.fair_sharing_reported(objs)

    def _respond(self, request: web.Request, title: str, live: str, extra: str = "") -> web.Response:
        if request.query.get("fragment"):
            return web.Response(text=live, content_type="text/html", charset="utf-8")
        return web.Response(text=render.page(title, live, root=self.root, extra=extra), content_type="text/html",
                            charset="utf-8")

    async def overview(self, request: web.Request) -> web.Response:
        return self._respond(request, "Queues", await self._cached(request, self._overview))

    async def _overview(self) -> str:
        objs = self.objects()
        roots, lone = view.cohort_tree(objs)
        now = self._now()
        idx = view.index(objs)
        rows = {name: view.queue_rows(objs, name, now, 0, OVERVIEW_ROWS, idx) for name in objs.get("clusterqueues", {})}
        return render.unreadable(self.unreadable()) + render.overview(
            roots, lone, rows, self._colors(objs), fair_sharing=self._fair_sharing(objs))

    async def queue(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        try:
            page = int(request.query.get("page", "0"))
        except ValueError:
            raise web.HTTPBadRequest(text="page: not a number") from None
        objs = self.objects()
        title = f"ClusterQueue {name}"
        if name not in objs.get("clusterqueues", {}):  # nothing to render, nor to cache under any name asked
            return self._respond(request, title, render.queue_page(None, view.QueueRows(name, [], [], 0, 0, 0, 1),
                                                                   {}, self.root, False))
        # past the last page is the last page: no queue has more pages than all the workloads fill
        page = min(max(page, 0), max(0, -(-len(objs.get("workloads", {})) // view.PAGE_SIZE) - 1))

        async def build() -> str:
            objs = self.objects()
            cq = objs.get("clusterqueues", {}).get(name)
            rows = view.queue_rows(objs, name, self._now(), page)
            return render.queue_page(None if cq is None else view.queue_summary(cq), rows, self._colors(objs), self.root,
                                     self._fair_sharing(objs))
        return self._respond(request, title, await self._cached(request, build, page))

    async def workload(self, request: web.Request) -> web.Response:
        key = f"{request.match_info['namespace']}/{request.match_info['name']}"
        if key not in self.objects().get("workloads", {}):
            return self._respond(request, f"Workload {key}", render.workload_page(key, None, [], "", None, self.root))

        async def build() -> str:
            objs = self.objects()
            wl = objs.get("workloads", {}).get(key)
            if wl is None:
                return render.workload_page(key, None, [], "", None, self.root)
            live = self.snapshot()
            explained = await self.offload.run(answer, self.config, "explain", live, key)
            items = view.timeline(objs, wl)
            found = view.owners(wl)
            owned = [(kind, name, await self._owner(objs, wl, kind, name)) for kind, name in found[:MAX_OWNERS]]
            behind = render.behind(owned, max(0, len(found) - MAX_OWNERS))
            return render.workload_page(key, wl, items, behind, explained, self.root)
        return self._respond(request, f"Workload {key}", await self._cached(request, build))

    async def _owner(self, objs: Mapping[str, Mapping[str, Any]], wl: dict[str, Any], kind: str,
                     name: str) -> dict[str, Any] | None:
        """A Job from the watch's cache; a Pod read when its page is (Pods are not watched: there may be
        many more of them than of anything the pages list)."""
        if kind == "Job":
            return view.job_of(objs, wl, name)
        if kind == "Pod" and self.pod is not None:
            return await self.pod(str((wl.get("metadata") or {}).get("namespace", "")), name)
        return None

    async def what_if(self, request: web.Request) -> web.Response:
        text, doc, error = "", None, None
        if request.method == "POST":
            form = await request.post()
            text = str(form.get("manifest", ""))
            if not text.strip():
                error = "paste a Job manifest first"
            else:
                live, now = self.snapshot(), self.clock()
                try:
                    doc = await self.offload.run(answer, self.config, "what-if", live, text, now)
                except WhatIfError as exc:
                    error = str(exc)
        body = render.what_if_form(text, self.root) + render.what_if_answer(doc, error, self.root)
        # nothing on this page is live: a live update's fragment request gets an empty fragment, never
        # the whole page again (which the page's script would nest inside itself)
        return self._respond(request, "What if", "", extra=body)

    # ---- live updates ------------------------------------------------------------------------------

    async def events(self, request: web.Request) -> web.StreamResponse:
        """Server-sent events: one ``data: VERSION`` message each time the state moves."""
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache",
                                               "X-Accel-Buffering": "no"})
        await response.prepare(request)
        queue = self.hub.subscribe()
        try:
            await response.write(f"retry: 2000\nevent: hello\ndata: {self.hub.version}\n\n".encode())
            while True:
                try:
                    version = await asyncio.wait_for(queue.get(), HEARTBEAT_SECONDS)
                except TimeoutError:
                    await response.write(b": keep-alive\n\n")
                    continue
                await response.write(f"data: {version}\n\n".encode())
        except ConnectionResetError:  # the page was closed
            return response
        finally:
            self.hub.unsubscribe(queue)
