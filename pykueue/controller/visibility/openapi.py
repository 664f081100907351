"""The visibility API's OpenAPI documents, as a k8s.io/apiserver extension server publishes them for
the API aggregator to merge into the API server's own (``kubectl explain``, client generators).

The aggregator's OpenAPI controllers fetch them as ``system:aggregator`` (no groups): ``GET
/openapi/v3`` (the index: each group-version's ``serverRelativeURL``) and, when that is 404,
``GET /openapi/v2`` with ``Accept: application/json``; a 404 there means "no spec", any other
failure is retried and logged by the API server (``loading OpenAPI spec for ... failed``). The
group-version documents behind the index are then fetched on demand, with the caller's identity.
Only JSON is written: an Accept that allows no JSON (the protobuf forms alone) is 406. The index
lists the visibility group-versions only, never ``apis`` or ``version``: the aggregator merges every
backend's index into one map, where those keys are the API server's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from functools import cache
from typing import Any

import orjson
from aiohttp import web

from pykueue.controller.visibility.discovery import (
    GROUP,
    SUMMARY,
    VERSIONS,
    accepts_json,
    json_response,
    media_ranges,
    not_acceptable,
    release,
)

TITLE = "Kueue visibility-server"
Ref = Callable[[str], str]  # a definition's name -> its $ref in this kind of document


def _definition_name(version: str, kind: str) -> str:
    """The name k8s.io/apiserver's definition namer gives a Go type of the group (reversed group)."""
    return f"io.x-k8s.kueue.visibility.{version}.{kind}"


def _schemas(version: str, ref: Ref) -> dict[str, Any]:
    """PendingWorkloadsSummary and PendingWorkload of ``version``, as upstream's types have them."""
    metadata = {"description": "Standard object's metadata.", "type": "object", "properties": {
        "name": {"type": "string"}, "namespace": {"type": "string"},
        "creationTimestamp": {"type": "string", "format": "date-time"},
        "ownerReferences": {"type": "array", "items": {"type": "object", "properties": {
            k: {"type": "string"} for k in ("apiVersion", "kind", "name", "uid")}}}}}
    int32 = {"type": "integer", "format": "int32"}
    workload = {
        "description": "PendingWorkload is a user-facing representation of a pending workload that summarizes "
                       "the relevant information for position in the cluster queue.",
        "type": "object", "required": ["priority", "localQueueName", "positionInClusterQueue", "positionInLocalQueue"],
        "properties": {
            "metadata": metadata,
            "priority": {**int32, "description": "Priority indicates the workload's priority"},
            "localQueueName": {"type": "string", "description": "LocalQueueName indicates the name of the "
                                                                "LocalQueue the workload is submitted to"},
            "positionInClusterQueue": {**int32, "description": "PositionInClusterQueue indicates the "
                                                               "workload's position in the ClusterQueue, "
                                                               "starting from 0"},
            "positionInLocalQueue": {**int32, "description": "PositionInLocalQueue indicates the workload's "
                                                             "position in the LocalQueue, starting from 0"}}}
    summary = {
        "description": "PendingWorkloadsSummary contains a list of pending workloads in the context of the "
                       "query (within LocalQueue or ClusterQueue).",
        "type": "object", "required": ["items"],
        "properties": {
            "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": metadata,
            "items": {"type": "array", "items": {"$ref": ref(_definition_name(version, "PendingWorkload"))}}},
        "x-kubernetes-group-version-kind": [{"group": GROUP, "kind": SUMMARY, "version": version}]}
    return {_definition_name(version, "PendingWorkload"): workload, _definition_name(version, SUMMARY): summary}


# (path below /apis/GROUP/VERSION, path parameters, the kind of queue it reads)
OPERATIONS = (
    ("/clusterqueues/{name}/pendingworkloads", ("name",), "ClusterQueue"),
    ("/namespaces/{namespace}/localqueues/{name}/pendingworkloads", ("namespace", "name"), "LocalQueue"),
)
QUERY = (("limit", "limit indicates max number of pending workloads that should be fetched (default 1000)"),
         ("offset", "offset indicates position of the first pending workload that should be fetched, "
                    "starting from 0 (default 0)"))


def _operation(version: str, kind: str) -> dict[str, Any]:
    camel = "".join(p.capitalize() for p in GROUP.replace("-", ".").split(".")) + version.capitalize()
    return {"description": f"read pending workloads of the specified {kind}", "operationId":
            f"read{camel}{kind}PendingWorkloads", "tags": [f"{GROUP}_{version}"], "x-kubernetes-action": "get",
            "x-kubernetes-group-version-kind": {"group": GROUP, "kind": SUMMARY, "version": version}}


def _paths_v2(version: str) -> dict[str, Any]:
    ref = f"#/definitions/{_definition_name(version, SUMMARY)}"
    out = {}
    for suffix, params, kind in OPERATIONS:
        parameters = [{"name": p, "in": "path", "required": True, "type": "string", "uniqueItems": True,
                       "description": f"{p} of the {'Namespace' if p == 'namespace' else kind}"} for p in params]
        parameters += [{"name": q, "in": "query", "type": "integer", "uniqueItems": True, "description": text}
                       for q, text in QUERY]
        out[f"/apis/{GROUP}/{version}{suffix}"] = {"get": {
            **_operation(version, kind), "consumes": ["*/*"], "produces": ["application/json"], "schemes": ["https"],
            "parameters": parameters,
            "responses": {"200": {"description": "OK", "schema": {"$ref": ref}},
                          "401": {"description": "Unauthorized"}}}}
    return out


@cache
def v2_document() -> bytes:
    """``/openapi/v2``: every version's paths and definitions in one Swagger 2.0 document."""
    paths: dict[str, Any] = {}
    definitions: dict[str, Any] = {}
    for v in VERSIONS:
        paths.update(_paths_v2(v))
        definitions.update(_schemas(v, lambda name: f"#/definitions/{name}"))
    return orjson.dumps({"swagger": "2.0", "info": {"title": TITLE, "version": release()}, "paths": paths,
                         "definitions": definitions}, option=orjson.OPT_SORT_KEYS)


@cache
def v3_document(version: str) -> bytes:
    """``/openapi/v3/apis/GROUP/VERSION``: one version as an OpenAPI 3.0 document."""
    ref = f"#/components/schemas/{_definition_name(version, SUMMARY)}"
    paths: dict[str, Any] = {}
    for suffix, params, kind in OPERATIONS:
        parameters = [{"name": p, "in": "path", "required": True, "schema": {"type": "string", "uniqueItems": True},
                       "description": f"{p} of the {'Namespace' if p == 'namespace' else kind}"} for p in params]
        parameters += [{"name": q, "in": "query", "schema": {"type": "integer", "uniqueItems": True},
                        "description": text} for q, text in QUERY]
        paths[f"/apis/{GROUP}/{version}{suffix}"] = {"get": {
            **_operation(version, kind), "parameters": parameters,
            "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"$ref": ref}}}},
                          "401": {"description": "Unauthorized"}}}}
    schemas = _schemas(version, lambda name: f"#/components/schemas/{name}")
    return orjson.dumps({"openapi": "3.0.0", "info": {"title": TITLE, "version": release()}, "paths": paths,
                         "components": {"schemas": schemas}}, option=orjson.OPT_SORT_KEYS)


def gv_path(version: str) -> str:
    return f"apis/{GROUP}/{version}"


def v3_index() -> dict[str, Any]:
    """``/openapi/v3``: where each group-version's document is, with a hash of its content."""
    return {"paths": {gv_path(v): {"serverRelativeURL": f"/openapi/v3/{gv_path(v)}?hash="
                                   + hashlib.sha512(v3_document(v)).hexdigest()[:128].upper()}
                      for v in VERSIONS}}


def _json_only(request: web.Request) -> bool:
    return any(accepts_json(kind, params) for kind, params in media_ranges(request.headers.get("Accept", "")))


def _document(request: web.Request, data: bytes) -> web.Response:
    if not _json_only(request):
        return not_acceptable(request.path)
    return json_response(request, orjson.Fragment(data))


async def openapi_v2(request: web.Request) -> web.Response:
    return _document(request, v2_document())


async def openapi_v3(request: web.Request) -> web.Response:
    if not _json_only(request):
        return not_acceptable(request.path)
    return json_response(request, v3_index())


def _v3_group_version(version: str) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def handler(request: web.Request) -> web.Response:
        return _document(request, v3_document(version))
    return handler


def register(app: web.Application) -> None:
    app.router.add_get("/openapi/v2", openapi_v2)
    app.router.add_get("/openapi/v3", openapi_v3)
    for v in VERSIONS:
        app.router.add_get(f"/openapi/v3/{gv_path(v)}", _v3_group_version(v))
