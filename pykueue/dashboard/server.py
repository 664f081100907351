"""The dashboard's aiohttp application: pages, their live fragments, the server-sent events and the
what-if box. Read-only: no handler writes to the API server.

``Dashboard`` is what both front ends serve: ``pykueue dashboard`` on its own listener, and the
controller on ``--dashboard-port`` behind its delegated authentication (the middlewares it passes).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from pykueue.dashboard import render, view
from pykueue.dashboard.answers import Answers, WhatIfError
from pykueue.dashboard.state import Hub
from pykueue.engine import model

HEARTBEAT_SECONDS = 15.0  # an SSE comment line, so proxies keep the stream open and dead peers are found
OVERVIEW_ROWS = 10  # workloads per list on the overview; the queue page has them all, paged
HTML = "text/html; charset=utf-8"


class Dashboard:
    """The pages over one live state (``objects``: plural -> key -> object) and its ``hub``."""

    def __init__(self, objects: Callable[[], Mapping[str, Mapping[str, dict[str, Any]]]], hub: Hub,
                 config: model.Config | None = None, *, clock: Callable[[], float] = time.time) -> None:
        self.objects = objects
        self.hub = hub
        self.config = config or model.Config()
        self.answers = Answers(self.config)
        self.clock = clock

    def app(self, middlewares: tuple[Any, ...] = ()) -> web.Application:
        app = web.Application(middlewares=list(middlewares), client_max_size=2 * 1024 * 1024)
        app.router.add_get("/", self.overview)
        app.router.add_get("/queues/{name}", self.queue)
        app.router.add_get("/workloads/{namespace}/{name}", self.workload)
        app.router.add_get("/what-if", self.what_if)
        app.router.add_post("/what-if", self.what_if)
        app.router.add_get("/events", self.events)
        return app

    # ---- pages -------------------------------------------------------------------------------------

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self.clock(), UTC)

    def _colors(self, objs: Mapping[str, Mapping[str, Any]]) -> dict[str, tuple[str, str]]:
        return view.queue_colors(list(objs.get("clusterqueues", {})))

    @staticmethod
    def _respond(request: web.Request, title: str, live: str, extra: str = "") -> web.Response:
        if request.query.get("fragment"):
            return web.Response(text=live, content_type="text/html", charset="utf-8")
        return web.Response(text=render.page(title, live, extra=extra), content_type="text/html", charset="utf-8")

    async def overview(self, request: web.Request) -> web.Response:
        objs = self.objects()
        roots, lone = view.cohort_tree(objs)
        now = self._now()
        rows = {name: view.queue_rows(objs, name, now, 0, OVERVIEW_ROWS) for name in objs.get("clusterqueues", {})}
        live = render.overview(roots, lone, rows, self._colors(objs), fair_sharing=self.config.fair_sharing.enable)
        return self._respond(request, "Queues", live)

    async def queue(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        try:
            page = int(request.query.get("page", "0"))
        except ValueError:
            raise web.HTTPBadRequest(text="page: not a number") from None
        objs = self.objects()
        cq = objs.get("clusterqueues", {}).get(name)
        rows = view.queue_rows(objs, name, self._now(), page)
        live = render.queue_page(None if cq is None else view.queue_summary(cq), rows, self._colors(objs), "/",
                                 self.config.fair_sharing.enable)
        return self._respond(request, f"ClusterQueue {name}", live)

    async def workload(self, request: web.Request) -> web.Response:
        key = f"{request.match_info['namespace']}/{request.match_info['name']}"
        objs = self.objects()
        wl = objs.get("workloads", {}).get(key)
        if wl is None:
            live = render.workload_page(key, None, [], None, None, None, "/")
        else:
            answer = self.answers.explain(objs, key)
            live = render.workload_page(key, wl, view.timeline(objs, wl), view.owner(wl),
                                        view.owner_object(objs, wl), answer, "/")
        return self._respond(request, f"Workload {key}", live)

    async def what_if(self, request: web.Request) -> web.Response:
        text, doc, error = "", None, None
        if request.method == "POST":
            form = await request.post()
            text = str(form.get("manifest", ""))
            if not text.strip():
                error = "paste a Job manifest first"
            else:
                try:
                    doc = self.answers.what_if(self.objects(), text, self.clock())
                except WhatIfError as exc:
                    error = str(exc)
        body = render.what_if_form(text) + render.what_if_answer(doc, error, "/")
        return web.Response(text=render.page("What if", "", extra=body), content_type="text/html", charset="utf-8")

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
