"""Kueue's visibility API (``visibility.kueue.x-k8s.io``, v1beta2 and v1beta1): the pending workloads
of a ClusterQueue or a LocalQueue in the order the engine will try them, as upstream's visibility
server answers behind the API aggregator (an ``APIService`` pointing at the controller's Service).

Served on its own TLS port (``visibility.server``, ``--visibility-port`` 8082 as upstream's), behind
delegated authentication and authorization (``pykueue.controller.serving.auth``): the aggregator's front-proxy
certificate with its X-Remote-* headers, a client certificate or a bearer token, then a
SubjectAccessReview built by :meth:`Visibility.attributes` from the route that serves the request;
401 and 403 otherwise. The answers come from the engine's read model (``Engine.pending_in_order``)
of the running Controller: a replica that is not leading (or not synced yet) has no engine and
answers 503, as the aggregator would see an unavailable upstream server.

Routes (both versions):

- what an aggregated API server says about itself (``visibility.discovery``: ``/apis`` legacy and
  aggregated, ``/apis/visibility.kueue.x-k8s.io``, ``.../VERSION``, ``/version``, the probes;
  ``visibility.openapi``: ``/openapi/v2``, ``/openapi/v3`` and its group-versions);
- ``GET .../clusterqueues/NAME/pendingworkloads`` and
  ``GET .../namespaces/NS/localqueues/NAME/pendingworkloads``: a ``PendingWorkloadsSummary``;
  query parameters ``limit`` (default 1000) and ``offset`` (default 0), as upstream's
  ``PendingWorkloadOptions``.

Upstream's semantics: positions are 0-based; ``positionInLocalQueue`` counts only the workloads of the
same LocalQueue ahead in the ClusterQueue; for a ClusterQueue the window is ``[offset, offset+limit)`` of
the ClusterQueue's order, for a LocalQueue it is that window of the LocalQueue's own workloads (their
``positionInClusterQueue`` still counts every workload of the ClusterQueue). An unknown queue is a
NotFound ``Status``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import orjson
from aiohttp import web

from pykueue.controller.core.readsource import ReadSource
from pykueue.controller.serving.auth import Attributes
from pykueue.controller.visibility import discovery as visibility_discovery
from pykueue.controller.visibility import openapi as visibility_openapi
from pykueue.controller.visibility.discovery import GROUP, SUMMARY, VERSIONS, status

DEFAULT_LIMIT = 1000  # upstream's constants.DefaultPendingWorkloadsLimit
API_SERVICES = tuple(f"{v}.{GROUP}" for v in VERSIONS)

Source = Callable[[], "ReadSource | None"]  # the running Controller, or None (a standby, or not started yet)


# ---- what the engine says ----------------------------------------------------------------------------


def _timestamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _item(controller: ReadSource, w: Any, in_cq: int, in_lq: int) -> dict[str, Any]:
    """One ``PendingWorkload``: metadata (name, namespace, creationTimestamp, ownerReferences as the
    Workload has them), priority, localQueueName and the two positions."""
    obj = controller.cached("workloads", w.key)
    meta_in = (obj or {}).get("metadata") or {}
    meta: dict[str, Any] = {"name": w.name, "namespace": w.namespace,
                            "creationTimestamp": meta_in.get("creationTimestamp") or _timestamp(w.spec.creation_time)}
    owners = [{k: ref[k] for k in ("apiVersion", "kind", "name", "uid") if k in ref}
              for ref in meta_in.get("ownerReferences") or []]
    if owners:
        meta["ownerReferences"] = owners
    return {"metadata": meta, "priority": w.priority, "localQueueName": w.spec.queue_name,
            "positionInClusterQueue": in_cq, "positionInLocalQueue": in_lq}


def cluster_queue_pending(controller: ReadSource, name: str, limit: int, offset: int) -> list[dict[str, Any]] | None:
    """Upstream's pendingWorkloadsInCqREST.Get; None for a ClusterQueue the engine does not know."""
    engine = controller.engine
    if name not in engine.cluster_queue_names():
        return None
    in_lq: dict[str, int] = {}
    items = []
    for index, w in enumerate(engine.pending_in_order(name)[:offset + limit]):
        position = in_lq.get(w.spec.queue_name, 0)
        in_lq[w.spec.queue_name] = position + 1
        if index >= offset:
            items.append(_item(controller, w, index, position))
    return items


def local_queue_pending(controller: ReadSource, namespace: str, name: str, limit: int,
                        offset: int) -> list[dict[str, Any]] | None:
    """Upstream's pendingWorkloadsInLqREST.Get; None for a LocalQueue the engine does not know."""
    engine = controller.engine
    lq = engine.local_queue_statuses().get(f"{namespace}/{name}")
    if lq is None:
        return None
    items: list[dict[str, Any]] = []
    skipped = 0
    for index, w in enumerate(engine.pending_in_order(lq.spec.cluster_queue)):
        if len(items) >= limit:
            break
        if w.namespace != namespace or w.spec.queue_name != name:
            continue
        if skipped < offset:
            skipped += 1
        else:
            items.append(_item(controller, w, index, len(items) + offset))
    return items


# ---- who may ask ---------------------------------------------------------------------------------------


def verb(request: web.Request) -> str:
    """The SubjectAccessReview verb: ``get`` for a read, else the method (as a non-resource request)."""
    return "get" if request.method in ("GET", "HEAD") else request.method.lower()


def under_group(path: str) -> bool:
    return path == f"/apis/{GROUP}" or path.startswith(f"/apis/{GROUP}/")


# ---- HTTP ---------------------------------------------------------------------------------------------


def _json(body: dict[str, Any]) -> web.Response:
    return web.Response(body=orjson.dumps(body), content_type="application/json")


def _not_found(kind: str, name: str) -> web.Response:
    return status(404, "NotFound", f'{kind}.{GROUP} "{name}" not found',
                   {"name": name, "group": GROUP, "kind": kind})


def _options(request: web.Request) -> tuple[int, int] | str:
    """``limit`` and ``offset`` (upstream's PendingWorkloadOptions), or what is wrong with them."""
    values = {}
    for key, default in (("limit", DEFAULT_LIMIT), ("offset", 0)):
        raw = request.query.get(key)
        try:
            values[key] = default if raw in (None, "") else int(raw)
        except ValueError:
            return f"{key}: Invalid value: {raw!r}: must be an integer"
        if values[key] < 0:
            return f"{key}: Invalid value: {values[key]}: must be greater than or equal to 0"
    return values["limit"], values["offset"]


class Visibility:
    """The visibility routes, reading the Controller ``source()`` returns at each request, and what
    each request asks for (:meth:`attributes`), from the route that serves it."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.queue_routes: dict[web.AbstractResource, tuple[str, bool]] = {}  # -> (version, LocalQueue)

    def register(self, app: web.Application) -> None:
        visibility_discovery.register(app)
        visibility_openapi.register(app)
        for version in VERSIONS:
            base = f"/apis/{GROUP}/{version}"
            for suffix, local in (("/clusterqueues/{name}/pendingworkloads", False),
                                  ("/namespaces/{namespace}/localqueues/{name}/pendingworkloads", True)):
                route = app.router.add_get(base + suffix, self._pending(version, local))
                self.queue_routes[route.resource] = (version, local)

    def attributes(self, request: web.Request) -> Attributes:
        """What a request asks, for a SubjectAccessReview, from the route aiohttp matched: ``get`` on
        ``clusterqueues/pendingworkloads`` (cluster scope) or ``localqueues/pendingworkloads`` in its
        namespace, by name, as the API server asks for an aggregated resource; discovery, OpenAPI,
        ``/version`` and any path outside the group as a non-resource URL with the request's verb;
        anything else under the group (no route, or a method no route has) is refused whoever asks."""
        match = request.match_info
        resource = match.route.resource if match.http_exception is None else None
        queue = self.queue_routes.get(resource) if resource is not None else None
        if queue is not None:
            version, local = queue
            return Attributes(verb(request), group=GROUP, version=version,
                              resource="localqueues" if local else "clusterqueues", subresource="pendingworkloads",
                              name=match["name"], namespace=match["namespace"] if local else "")
        if under_group(request.path) and resource is None:
            return Attributes(verb(request), path=request.path, deny=True)
        return Attributes(verb(request), path=request.path)

    def _pending(self, version: str, local: bool):
        async def handler(request: web.Request) -> web.Response:
            options = _options(request)
            if isinstance(options, str):
                return status(400, "BadRequest", options)
            limit, offset = options
            controller = self.source()
            if controller is None or not controller.ready.is_set():
                return status(503, "ServiceUnavailable",
                               "the visibility API is served by the leading, synced controller only")
            name = request.match_info["name"]
            if local:
                items = local_queue_pending(controller, request.match_info["namespace"], name, limit, offset)
            else:
                items = cluster_queue_pending(controller, name, limit, offset)
            if items is None:
                return _not_found("localqueue" if local else "clusterqueue", name)
            return _json({"kind": SUMMARY, "apiVersion": f"{GROUP}/{version}", "metadata": {}, "items": items})
        return handler
