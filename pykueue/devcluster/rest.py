"""Reads from a dev cluster's API server in process, for the tests' and benches' polls: what
``kubectl get ... -o json`` answers, without a kubectl process per read.

A test that waits for an object polls it several times a second; a kubectl process for each poll costs
about a tenth of a CPU second (start-up, discovery cache, decoding), which on a 2-core machine is taken
from the API server and the controller under test. This reader keeps one TLS connection per thread as
the cluster's admin and resolves a resource the way kubectl does (plural, singular, short name or kind,
``resource.group`` or ``resource.version.group``, the core group first, then the groups in discovery
order, each at its preferred version), so ``get("job", ...)`` reads what ``kubectl get job`` reads.

kubectl stays where a test is about what a user types; this is only the reading path of polls.
"""

from __future__ import annotations

import http.client
import json
import ssl
import threading
from typing import Any, Protocol
from urllib.parse import urlencode

from pykueue.kube.resources import Resource  # the controller's own record of a resource type and its paths


class Cluster(Protocol):
    """What the reader needs of a ``DevCluster``: its API server's port and the admin's TLS context."""

    ports: dict[str, int]

    def ssl_context(self) -> ssl.SSLContext: ...


class RestError(RuntimeError):
    """A read the API server refused or could not answer (a killed or restarting one too)."""


class Rest:
    """The admin's reads of one dev cluster (thread-safe: a connection per thread)."""

    def __init__(self, cluster: Cluster, timeout: float = 15.0) -> None:
        self.cluster = cluster
        self.timeout = timeout
        self._local = threading.local()
        self._lock = threading.Lock()
        self._names: dict[str, Resource] = {}  # every name a resource answers to, lower case
        self._ordered: list[tuple[Resource, tuple[str, ...]]] = []

    # ---- transport -----------------------------------------------------------------------------

    def _connection(self) -> http.client.HTTPSConnection:
        conn = getattr(self._local, "conn", None)
        port = self.cluster.ports["kube-apiserver"]
        if conn is None or getattr(self._local, "port", None) != port:
            conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=self.timeout,
                                               context=self.cluster.ssl_context())
            self._local.conn, self._local.port = conn, port
        return conn

    def request(self, method: str, path: str, body: bytes | None = None,
                content_type: str = "application/json") -> tuple[int, bytes]:
        """One request as the admin; a dropped keep-alive connection is retried once on a new one."""
        for attempt in (0, 1):
            conn = self._connection()
            try:
                headers = {"Accept": "application/json"}
                if body is not None:
                    headers["Content-Type"] = content_type
                conn.request(method, path, body=body, headers=headers)
                response = conn.getresponse()
                return response.status, response.read()
            except (http.client.HTTPException, OSError) as exc:
                conn.close()
                self._local.conn = None
                if attempt:
                    raise RestError(f"{method} {path}: {exc}") from exc
        raise AssertionError("unreachable")

    def _json(self, path: str) -> dict[str, Any]:
        status, data = self.request("GET", path)
        if status != 200:
            raise RestError(f"GET {path}: {status} {data[:300]!r}")
        return json.loads(data)

    # ---- discovery -----------------------------------------------------------------------------

    def _discover(self) -> None:
        ordered: list[tuple[Resource, tuple[str, ...]]] = []
        lists = [("", self._json("/api/v1"))]
        for group in self._json("/apis").get("groups") or []:
            preferred = (group.get("preferredVersion") or {}).get("groupVersion")
            if preferred:
                try:
                    lists.append((group["name"], self._json(f"/apis/{preferred}")))
                except RestError:
                    continue  # an aggregated API that does not answer (yet): not one we read
        for group, listing in lists:
            version = listing["groupVersion"].rsplit("/", 1)[-1]
            for item in listing.get("resources") or []:
                if "/" in item["name"] or "get" not in (item.get("verbs") or []):
                    continue
                res = Resource(group, version, item["name"], item["kind"], bool(item.get("namespaced")))
                aliases = (item["name"], item.get("singularName") or "", item["kind"].lower(),
                           *(item.get("shortNames") or ()))
                ordered.append((res, tuple(a.lower() for a in aliases if a)))
        names: dict[str, Resource] = {}
        for res, aliases in ordered:
            for alias in aliases:
                names.setdefault(alias, res)  # the first group wins, as kubectl's priority mapper
                if res.group:  # kubectl takes NAME.GROUP and NAME.VERSION.GROUP for every name of it
                    names.setdefault(f"{alias}.{res.group}", res)
                    names.setdefault(f"{alias}.{res.version}.{res.group}", res)
        with self._lock:
            self._names, self._ordered = names, ordered

    def _versioned(self, name: str) -> Resource | None:
        """``NAME.VERSION.GROUP`` for a version that is not the preferred one."""
        alias, _, rest = name.partition(".")
        version, _, group = rest.partition(".")
        for res, aliases in self._ordered:
            if alias in aliases and res.group == group:
                return Resource(group, version, res.plural, res.kind, res.namespaced)
        return None

    def resource(self, name: str) -> Resource:
        """The resource kubectl would read for ``name``; discovery is read again on a miss (a CRD
        installed since)."""
        key = name.lower()
        for fresh in (False, True):
            if fresh or not self._names:
                self._discover()
            res = self._names.get(key) or self._versioned(key)
            if res is not None:
                return res
        raise RestError(f'the server doesn\'t have a resource type "{name}"')

    # ---- reads ---------------------------------------------------------------------------------

    def get(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        """The object, or None when it does not exist or the server does not answer (as a failed
        ``kubectl get`` is taken by the polls)."""
        try:
            res = self.resource(kind)
            status, data = self.request("GET", res.path(namespace or "default", name))
        except RestError:
            return None
        return _as_kubectl_shows(json.loads(data)) if status == 200 else None

    def list(self, kind: str, namespace: str | None = None, selector: str | None = None) -> list[dict[str, Any]]:
        """Every object of ``kind`` in ``namespace`` (all namespaces when None), each with its
        apiVersion and kind set as kubectl sets them; RestError when the server refuses."""
        res = self.resource(kind)
        path = res.path(namespace)
        if selector:
            path += "?" + urlencode({"labelSelector": selector})
        items = self._json(path).get("items") or []
        for item in items:
            item.setdefault("apiVersion", res.api_version)
            item.setdefault("kind", res.kind)
            _as_kubectl_shows(item)
        return items


def _as_kubectl_shows(obj: dict[str, Any]) -> dict[str, Any]:
    """kubectl get leaves out ``metadata.managedFields`` unless asked (``--show-managed-fields``)."""
    (obj.get("metadata") or {}).pop("managedFields", None)
    return obj
