"""What the visibility API says about itself, as a k8s.io/apiserver extension server does: discovery
(legacy and aggregated), ``/version`` and the probes.

The API aggregator's discovery manager asks the backend of every APIService for ``GET /apis`` with
``Accept: <aggregated v2>,<aggregated v2beta1>`` (as ``system:kube-aggregator`` in ``system:masters``)
every minute. Only an answer whose Content-Type names ``APIGroupDiscoveryList`` is taken as aggregated
discovery; anything else makes it fall back to ``GET /apis/GROUP/VERSION`` for that version alone (as
``system:kube-aggregator`` without groups), and a failure there marks the version Stale in the API
server's merged document, which kube-controller-manager's namespace, garbage-collector and quota
controllers then report as ``stale GroupVersion discovery``. So ``/apis`` negotiates: the aggregated
list (v2 or v2beta1, in the client's order of preference) or the legacy ``APIGroupList`` for plain
JSON, 406 for nothing it can write. Every answer carries an ``ETag`` and honours ``If-None-Match``
(the discovery manager sends back the one it cached).
"""

from __future__ import annotations

import hashlib
import platform
from collections.abc import Awaitable, Callable
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version
from typing import Any

import orjson
from aiohttp import web

GROUP = "visibility.kueue.x-k8s.io"
VERSIONS = ("v1beta2", "v1beta1")  # preferred first
SUMMARY = "PendingWorkloadsSummary"
DISCOVERY_GROUP = "apidiscovery.k8s.io"
AGGREGATED_VERSIONS = ("v2", "v2beta1")
PROBES = ("/healthz", "/readyz", "/livez")


# ---- documents ---------------------------------------------------------------------------------------

# (resource, namespaced, kind, verbs) of each version; a "/" names a subresource, as APIResourceList has it
RESOURCES: tuple[tuple[str, bool, str, tuple[str, ...]], ...] = (
    ("clusterqueues", False, "ClusterQueue", ()),
    ("clusterqueues/pendingworkloads", False, SUMMARY, ("get",)),
    ("localqueues", True, "LocalQueue", ()),
    ("localqueues/pendingworkloads", True, SUMMARY, ("get",)),
)


def resource_list(version: str) -> dict[str, Any]:
    """``GET /apis/GROUP/VERSION``: an APIResourceList."""
    resources = [{"name": name, "singularName": "" if "/" in name else name[:-1], "namespaced": namespaced,
                  "kind": kind, "verbs": list(verbs)} for name, namespaced, kind, verbs in RESOURCES]
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{GROUP}/{version}",
            "resources": resources}


def api_group() -> dict[str, Any]:
    versions = [{"groupVersion": f"{GROUP}/{v}", "version": v} for v in VERSIONS]
    return {"name": GROUP, "versions": versions, "preferredVersion": versions[0]}


def group_list() -> dict[str, Any]:
    """``GET /apis`` as plain JSON: an APIGroupList."""
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [api_group()]}


def _aggregated_version(version: str) -> dict[str, Any]:
    """One version of the group as APIVersionDiscovery: each resource with its subresources, as
    k8s.io/apiserver converts an APIResourceList."""
    out: list[dict[str, Any]] = []
    for name, namespaced, kind, verbs in RESOURCES:
        kind_ref = {"group": GROUP, "version": version, "kind": kind}
        if "/" in name:
            parent, sub = name.split("/", 1)
            owner = next(r for r in out if r["resource"] == parent)
            owner["subresources"].append({"subresource": sub, "responseKind": kind_ref, "verbs": list(verbs)})
            continue
        out.append({"resource": name, "responseKind": kind_ref, "scope": "Namespaced" if namespaced else "Cluster",
                    "singularResource": name[:-1], "verbs": list(verbs), "subresources": []})
    return {"version": version, "resources": out, "freshness": "Current"}


def aggregated(version: str) -> dict[str, Any]:
    """``GET /apis`` as aggregated discovery (``apidiscovery.k8s.io/VERSION``): APIGroupDiscoveryList."""
    return {"kind": "APIGroupDiscoveryList", "apiVersion": f"{DISCOVERY_GROUP}/{version}", "metadata": {},
            "items": [{"metadata": {"name": GROUP}, "versions": [_aggregated_version(v) for v in VERSIONS]}]}


def aggregated_content_type(version: str) -> str:
    return f"application/json;g={DISCOVERY_GROUP};v={version};as=APIGroupDiscoveryList"


# ---- content negotiation ------------------------------------------------------------------------------


def media_ranges(accept: str) -> list[tuple[str, dict[str, str]]]:
    """The media ranges of an Accept header, most preferred first (by ``q``, then as listed); those
    with ``q=0`` left out. An absent header accepts anything."""
    if not accept.strip():
        return [("*/*", {})]
    ranked: list[tuple[float, int, str, dict[str, str]]] = []
    for index, item in enumerate(accept.split(",")):
        kind, *raw = (part.strip() for part in item.split(";"))
        if not kind:
            continue
        params = {k.strip().lower(): v.strip().strip('"') for k, _, v in (p.partition("=") for p in raw if p)}
        try:
            q = float(params.pop("q", "1"))
        except ValueError:
            q = 1.0
        if q > 0:
            ranked.append((-q, index, kind.lower(), params))
    return [(kind, params) for _, _, kind, params in sorted(ranked)]


def accepts_json(kind: str, params: dict[str, str]) -> bool:
    """A plain JSON answer satisfies this range (no ``g``/``v``/``as`` asking for another kind)."""
    return kind in ("application/json", "application/*", "*/*") and not params.keys() & {"g", "v", "as"}


def _negotiate_apis(accept: str) -> str | None:
    """``"v2"``/``"v2beta1"`` for aggregated discovery, ``""`` for the APIGroupList, None for 406."""
    for kind, params in media_ranges(accept):
        if (kind == "application/json" and params.get("g") == DISCOVERY_GROUP
                and params.get("as") == "APIGroupDiscoveryList" and params.get("v") in AGGREGATED_VERSIONS):
            return params["v"]
        if accepts_json(kind, params):
            return ""
    return None


# ---- HTTP ---------------------------------------------------------------------------------------------


def json_response(request: web.Request, body: Any, content_type: str = "application/json",
                  status: int = 200) -> web.Response:
    """``body`` as JSON with a strong ETag over it; 304 when the client already holds it."""
    data = orjson.dumps(body)
    etag = '"' + hashlib.sha256(data).hexdigest()[:32] + '"'
    headers = {"ETag": etag, "Vary": "Accept"}
    if status == 200 and etag in (request.headers.get("If-None-Match") or ""):
        return web.Response(status=304, headers=headers)
    response = web.Response(body=data, status=status, headers=headers)
    response.headers["Content-Type"] = content_type
    return response


def status(code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> web.Response:
    """A failure as the API server words it: a ``Status``."""
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                            "message": message, "reason": reason, "code": code}
    if details:
        body["details"] = details
    return web.Response(body=orjson.dumps(body), status=code, content_type="application/json")


def not_acceptable(what: str) -> web.Response:
    return status(406, "NotAcceptable", f"only application/json is served for {what}")


async def apis(request: web.Request) -> web.Response:
    chosen = _negotiate_apis(request.headers.get("Accept", ""))
    if chosen is None:
        return not_acceptable("/apis (or apidiscovery.k8s.io v2, v2beta1 APIGroupDiscoveryList)")
    if chosen:
        return json_response(request, aggregated(chosen), aggregated_content_type(chosen))
    return json_response(request, group_list())


async def group(request: web.Request) -> web.Response:
    return json_response(request, {"kind": "APIGroup", "apiVersion": "v1", **api_group()})


def resources_handler(version: str) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def handler(request: web.Request) -> web.Response:
        return json_response(request, resource_list(version))
    return handler


def release() -> str:
    """pykueue's version, as installed."""
    try:
        return package_version("pykueue")
    except PackageNotFoundError:
        return "0.0.0"


async def version_info(request: web.Request) -> web.Response:
    """``/version``: the serving binary, in version.Info's shape."""
    release_ = release()
    system = platform.system().lower()
    machine = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine().lower(), platform.machine().lower())
    major, _, rest = release_.partition(".")
    return json_response(request, {
        "major": major, "minor": rest.partition(".")[0], "gitVersion": f"v{release_}", "gitCommit": "",
        "gitTreeState": "", "buildDate": "", "goVersion": "", "compiler": "cpython",
        "platform": f"{system}/{machine}"})


async def probe(_: web.Request) -> web.Response:
    return web.Response(text="ok")


def register(app: web.Application) -> None:
    """The discovery routes, ``/version`` and the probes."""
    app.router.add_get("/apis", apis)
    app.router.add_get(f"/apis/{GROUP}", group)
    for v in VERSIONS:
        app.router.add_get(f"/apis/{GROUP}/{v}", resources_handler(v))
    app.router.add_get("/version", version_info)
    for path in PROBES:
        app.router.add_get(path, probe)
