"""A thin layer over kubernetes_asyncio: raw JSON requests and watch streams by REST path.

kubernetes_asyncio does the connection work (kubeconfig or in-cluster credentials with token
refresh, TLS, aiohttp pooling); its generated models are skipped on the hot paths: responses are
read as bytes and decoded with orjson into plain dicts, which the informers cache as they are.
"""

from __future__ import annotations

import urllib.request
from collections.abc import AsyncIterator, Callable
from typing import Any
from urllib.parse import urlencode, urlsplit

import aiohttp
import orjson
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio import config as k8s_config

from pykueue.kube.resources import Resource

APPLY_PATCH = "application/apply-patch+yaml"
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
REQUEST_TIMEOUT = aiohttp.ClientTimeout(total=60.0)
AUTH_SETTINGS = ["BearerToken"]


class ApiError(Exception):
    """A non-2xx answer: `status` is the HTTP code, `reason` the Status reason (Conflict, NotFound...)."""

    def __init__(self, status: int, body: dict[str, Any] | None, method: str, path: str) -> None:
        self.status = status
        self.body = body or {}
        self.reason = self.body.get("reason", "")
        self.message = self.body.get("message", "")
        super().__init__(f"{method} {path}: {status} {self.reason}: {self.message}")


class Kube:
    """One API server connection."""

    def __init__(self, api: k8s_client.ApiClient, write_guard: Callable[[], None] | None = None) -> None:
        self.api = api
        # called before every request that is not a GET; raises to keep the request from going out
        # (a replica whose leader Lease may have passed to another: leader.LeaderElector.check_leading)
        self.write_guard = write_guard

    def guarded(self, write_guard: Callable[[], None]) -> Kube:
        """The same connection, its writes checked by ``write_guard`` first (reads go out as they are)."""
        return Kube(self.api, write_guard)

    @classmethod
    async def connect(cls, kubeconfig: str | None = None) -> Kube:
        """From a kubeconfig file, or the pod's service account when none is given."""
        configuration = k8s_client.Configuration()
        if kubeconfig:
            await k8s_config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
        else:
            k8s_config.load_incluster_config(client_configuration=configuration)
        return cls.from_configuration(configuration)

    @classmethod
    def from_configuration(cls, configuration: k8s_client.Configuration) -> Kube:
        """A connection with settings already loaded (the kueuectl verbs load them as kubectl does:
        a kubeconfig list, a context, the pod's service account)."""
        configuration.connection_pool_maxsize = 32
        configuration.proxy = configuration.proxy or _env_proxy(configuration.host)
        api = k8s_client.ApiClient(configuration)
        # kubernetes_asyncio's session trusts the environment, which makes aiohttp look up proxies and
        # read ~/.netrc on every request (a fifth of the controller's CPU under load). The proxy the
        # environment names is resolved once above, as client-go's ProxyFromEnvironment would.
        api.rest_client.pool_manager._trust_env = False
        return cls(api)

    async def close(self) -> None:
        await self.api.close()

    async def raw(self, method: str, path: str, *, query: dict[str, Any] | None = None,
                   body: Any = None, content_type: str = "application/json",
                   timeout: aiohttp.ClientTimeout = REQUEST_TIMEOUT) -> aiohttp.ClientResponse:
        """One request on kubernetes_asyncio's session (its TLS, proxy and credentials, refreshed as
        it refreshes them), without its generic call path: that walks every body to sanitise it and
        encodes it with `json`, a sixth of the controller's request cost; bodies here are plain JSON
        already and go out through orjson."""
        if method != "GET" and self.write_guard is not None:
            self.write_guard()
        api = self.api
        headers = {**api.default_headers, "Accept": "application/json", "Content-Type": content_type}
        await api.update_params_for_auth(headers, None, AUTH_SETTINGS)
        url = api.configuration.host + path
        if query:
            url += "?" + urlencode({k: v for k, v in query.items() if v is not None})
        rest = api.rest_client
        return await rest.pool_manager.request(
            method, url, headers=headers, data=None if body is None else orjson.dumps(body), timeout=timeout,
            proxy=rest.proxy, proxy_headers=rest.proxy_headers, server_hostname=rest.server_hostname)

    async def request(self, method: str, path: str, *, query: dict[str, Any] | None = None,
                      body: Any = None, content_type: str = "application/json") -> dict[str, Any]:
        """One call; the decoded JSON answer, or `ApiError`."""
        response = await self.raw(method, path, query=query, body=body, content_type=content_type)
        async with response:
            data = await response.read()
        decoded = orjson.loads(data) if data else {}
        if not 200 <= response.status < 300:
            raise ApiError(response.status, decoded if isinstance(decoded, dict) else None, method, path)
        return decoded

    # ---- conveniences by resource ---------------------------------------------------------------

    async def get(self, res: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        return await self.request("GET", res.path(namespace, name))

    async def list(self, res: Resource, **query: Any) -> dict[str, Any]:
        return await self.request("GET", res.path(), query=query)

    async def create(self, res: Resource, obj: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
        return await self.request("POST", res.path(namespace), body=obj)

    async def replace(self, res: Resource, obj: dict[str, Any]) -> dict[str, Any]:
        meta = obj["metadata"]
        return await self.request("PUT", res.path(meta.get("namespace"), meta["name"]), body=obj)

    async def merge_patch(self, res: Resource, name: str, patch: dict[str, Any], namespace: str | None = None,
                          subresource: str | None = None) -> dict[str, Any]:
        return await self.request("PATCH", res.path(namespace, name, subresource), body=patch,
                                  content_type=MERGE_PATCH)

    async def json_patch(self, res: Resource, name: str, ops: list[dict[str, Any]], namespace: str | None = None,
                         subresource: str | None = None) -> dict[str, Any]:
        """An RFC 6902 patch: appends to a list without sending (or racing on) the rest of it."""
        return await self.request("PATCH", res.path(namespace, name, subresource), body=ops,
                                  content_type=JSON_PATCH)

    async def apply(self, res: Resource, obj: dict[str, Any], *, manager: str, subresource: str | None = None,
                    force: bool = True) -> dict[str, Any]:
        """Server-side apply of `obj` (which names itself) as field manager `manager`."""
        meta = obj["metadata"]
        query = {"fieldManager": manager, "force": "true" if force else "false"}
        return await self.request("PATCH", res.path(meta.get("namespace"), meta["name"], subresource),
                                  query=query, body=obj, content_type=APPLY_PATCH)

    async def delete(self, res: Resource, name: str, namespace: str | None = None,
                     propagation: str | None = "Background") -> dict[str, Any]:
        body = {"propagationPolicy": propagation} if propagation else None
        return await self.request("DELETE", res.path(namespace, name), body=body)

    async def watch(self, res: Resource, resource_version: str, timeout_seconds: int = 300, *,
                    namespace: str | None = None, field_selector: str | None = None,
                    label_selector: str | None = None) -> AsyncIterator[dict[str, Any]]:
        """Watch events (`{"type": ..., "object": {...}}`) from `resource_version`, with bookmarks;
        in one namespace and by field selector when given (a watch on one object by name)."""
        query = {
            "watch": "true",
            "resourceVersion": resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(timeout_seconds),
        }
        if field_selector:
            query["fieldSelector"] = field_selector
        if label_selector:
            query["labelSelector"] = label_selector
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=30, sock_read=timeout_seconds + 30)
        response = await self.raw("GET", res.path(namespace), query=query, timeout=timeout)
        async with response:
            if response.status != 200:
                data = await response.read()
                body = orjson.loads(data) if data else None
                raise ApiError(response.status, body if isinstance(body, dict) else None, "WATCH", res.path(namespace))
            buffer = b""
            async for chunk in response.content.iter_any():
                # One split per chunk: splitting off a line at a time copies the rest of a large chunk
                # once per event.
                *lines, buffer = (buffer + chunk).split(b"\n")
                for line in lines:
                    if line.strip():
                        yield orjson.loads(line)


def _env_proxy(host: str) -> str | None:
    """The HTTPS proxy the environment names for the API server, unless NO_PROXY exempts it."""
    url = urlsplit(host)
    if not url.hostname or urllib.request.proxy_bypass(url.hostname):
        return None
    return urllib.request.getproxies().get(url.scheme or "https")
