"""The API server connection of the kueuectl verbs: a kubeconfig (or the pod's service account), one
request at a time, and every way it can fail turned into one line for the user.

kubernetes_asyncio does the connection work (TLS, client certificates, tokens, exec plugins). Answers
are read raw: a group the server does not serve answers ``404 page not found`` in plain text, which
is how "Kueue's CRDs are not installed" is told from "this object does not exist" (a JSON Status).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import yaml
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio import config as k8s_config
from kubernetes_asyncio.config.config_exception import ConfigException

from pykueue.kube.client import Kube
from pykueue.kube.resources import Resource
from pykueue.kubectl.errors import ApiStatus, CliError, explain

MERGE_PATCH = "application/merge-patch+json"
SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


@dataclass
class Target:
    """Where the kubeconfig points: the server and the namespace used when ``-n`` is not given."""

    configuration: k8s_client.Configuration
    server: str
    namespace: str


def _kubeconfig_paths(explicit: str | None) -> tuple[str, list[str]]:
    """The kubeconfig path list as kubectl reads it (``--kubeconfig``, else ``$KUBECONFIG``, else
    ``~/.kube/config``), and those of its files that exist."""
    if explicit:
        if not os.path.isfile(explicit):
            raise CliError(f"kubeconfig {explicit}: no such file")
        return explicit, [explicit]
    paths = os.environ.get("KUBECONFIG") or str(Path.home() / ".kube" / "config")
    found = [p for p in paths.split(os.pathsep) if p and os.path.isfile(os.path.expanduser(p))]
    return paths, found


async def load(kubeconfig: str | None, context: str | None) -> Target:
    """The connection settings, or a CliError that says which kubeconfig is missing or wrong."""
    configuration = k8s_client.Configuration()
    paths, found = _kubeconfig_paths(kubeconfig)
    if not found:
        if os.environ.get("KUBERNETES_SERVICE_HOST") and context is None:  # in a pod: its service account
            try:
                k8s_config.load_incluster_config(client_configuration=configuration)
            except ConfigException as exc:
                raise CliError(f"in-cluster configuration: {exc}") from None
            namespace = SERVICE_ACCOUNT_NAMESPACE.read_text().strip() if SERVICE_ACCOUNT_NAMESPACE.is_file() else ""
            return Target(configuration, configuration.host, namespace or "default")
        where = "$KUBECONFIG (" + paths + ")" if os.environ.get("KUBECONFIG") else paths
        raise CliError(f"no kubeconfig: {where} does not exist; pass --kubeconfig FILE or set KUBECONFIG")
    try:
        loader = await k8s_config.load_kube_config(config_file=os.pathsep.join(found), context=context,
                                                   client_configuration=configuration, persist_config=False)
    except ConfigException as exc:
        text = str(exc)
        if context is not None and f"name {context} in" in text and text.endswith("contexts list"):
            raise CliError(f'context "{context}" does not exist in kubeconfig {os.pathsep.join(found)}') from None
        raise CliError(f"kubeconfig {os.pathsep.join(found)}: {text}") from None
    except (OSError, ValueError, TypeError, KeyError, AttributeError, yaml.YAMLError) as exc:  # not a kubeconfig
        raise CliError(f"kubeconfig {os.pathsep.join(found)}: cannot be read: {' '.join(str(exc).split())}") from None
    current = loader.current_context or {}
    namespace = (current.get("context") or {}).get("namespace") or "default"
    return Target(configuration, configuration.host, namespace)


class Session:
    """One API server connection for the length of a command, through the controller's client
    (``pykueue.kube``): the same transport, with every failure turned into one line for the user."""

    def __init__(self, target: Target, timeout: float = 30.0) -> None:
        self.target = target
        self.timeout = timeout
        self.kube = Kube.from_configuration(target.configuration)

    @property
    def namespace(self) -> str:
        return self.target.namespace

    async def close(self) -> None:
        await self.kube.close()

    async def request(self, method: str, path: str, *, query: dict[str, Any] | None = None,
                      body: Any = None, content_type: str = "application/json") -> Any:
        """The decoded answer; ``ApiStatus`` when refused; ``CliError`` when the server cannot be reached."""
        server = self.target.server
        try:
            response = await self.kube.raw(
                method, path, query=query, body=body, content_type=content_type,
                timeout=aiohttp.ClientTimeout(total=self.timeout, sock_connect=min(self.timeout, 10.0)))
            async with response:
                data = await response.read()
        except aiohttp.ClientConnectorCertificateError as exc:
            raise CliError(f"cannot verify the API server's certificate at {server}: "
                           f"{exc.certificate_error}") from None
        except aiohttp.ClientConnectorError as exc:
            why = (exc.os_error.strerror or str(exc.os_error)) if exc.os_error else str(exc)
            raise CliError(f"cannot connect to the API server at {server}: {why}; is the cluster running, "
                           "and is this the right kubeconfig and context?") from None
        except (aiohttp.ClientError, OSError) as exc:
            raise CliError(f"the connection to the API server at {server} failed: {exc or type(exc).__name__}") from None
        except TimeoutError:
            raise CliError(f"the API server at {server} did not answer within {self.timeout:g}s") from None
        status = response.status
        try:
            decoded = orjson.loads(data) if data else {}
        except orjson.JSONDecodeError:
            decoded = None
        if not 200 <= status < 300:
            raise ApiStatus(status, decoded if isinstance(decoded, dict) else None,
                            data.decode("utf-8", "replace"), method, path)
        if decoded is None:
            raise CliError(f"{method} {path}: the API server answered {status} with something that is not JSON")
        return decoded

    # ---- by resource ----------------------------------------------------------------------------

    async def get(self, res: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        try:
            return await self.request("GET", res.path(namespace, name))
        except ApiStatus as exc:
            raise explain(exc, res, name, namespace) from None

    async def list(self, res: Resource, namespace: str | None = None, **query: Any) -> list[dict[str, Any]]:
        """Every item, following ``continue`` tokens (``namespace=None``: across namespaces)."""
        items: list[dict[str, Any]] = []
        token: str | None = None
        while True:
            try:
                page = await self.request("GET", res.path(namespace), query={**query, "limit": 500, "continue": token})
            except ApiStatus as exc:
                raise explain(exc, res) from None
            for item in page.get("items") or []:
                item.setdefault("apiVersion", res.api_version)
                item.setdefault("kind", res.kind)
                items.append(item)
            token = (page.get("metadata") or {}).get("continue") or None
            if token is None:
                return items

    async def merge_patch(self, res: Resource, name: str, patch: dict[str, Any], namespace: str | None = None,
                          *, dry_run: bool = False) -> dict[str, Any]:
        try:
            return await self.request("PATCH", res.path(namespace, name), body=patch, content_type=MERGE_PATCH,
                                      query={"dryRun": "All" if dry_run else None})
        except ApiStatus as exc:
            raise explain(exc, res, name, namespace) from None


async def open_session(kubeconfig: str | None, context: str | None, timeout: float = 30.0) -> Session:
    return Session(await load(kubeconfig, context), timeout)
