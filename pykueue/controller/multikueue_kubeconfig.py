"""A worker cluster's kubeconfig, as MultiKueue takes it from a Secret: checked as upstream's
validateKubeconfig does (no token files, no skipped TLS verification, certificate authorities inline,
a server per cluster that is an IP or a DNS name, no basic auth, exec plugins or auth providers),
then turned into a connection of its own."""

from __future__ import annotations

import ipaddress
import os
import tempfile
from typing import Any
from urllib.parse import urlsplit

import yaml
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio import config as k8s_config

from pykueue.api import names
from pykueue.kube.client import Kube


class KubeconfigError(ValueError):
    """A kubeconfig MultiKueue will not use; the message says why."""


def parse(data: bytes) -> dict[str, Any]:
    """The kubeconfig document, or ``KubeconfigError``."""
    try:
        doc = yaml.safe_load(data)
    except yaml.YAMLError as exc:
        raise KubeconfigError(f"failed to parse kubeconfig: {exc}") from None
    if not isinstance(doc, dict):
        raise KubeconfigError("failed to parse kubeconfig: not a mapping")
    return doc


def _named(doc: dict[str, Any], section: str, inner: str) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for item in doc.get(section) or []:
        if isinstance(item, dict):
            value = item.get(inner)
            out.append((str(item.get("name", "")), value if isinstance(value, dict) else {}))
    return out


def _valid_host(server: str) -> bool:
    host = urlsplit(server).hostname or ""
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return bool(host) and not names.dns1123_subdomain(host.lower())


def problem(doc: dict[str, Any]) -> str | None:
    """Why upstream would refuse this kubeconfig (its ``InsecureKubeConfig`` reason), or None."""
    for _, user in _named(doc, "users", "user"):
        if user.get("tokenFile"):
            return "tokenFile is not allowed"
    clusters = _named(doc, "clusters", "cluster")
    for name, cluster in clusters:
        if cluster.get("insecure-skip-tls-verify"):
            return f"insecure TLS verification is not allowed for cluster {name}"
        if cluster.get("certificate-authority"):
            return f"certificate-authority file paths are not allowed, use certificate-authority-data for cluster {name}"
        if not cluster.get("server"):
            return f"server URL is required for cluster {name}"
    if not clusters:
        return "no cluster in the kubeconfig"
    context = _current(doc)
    users = dict(_named(doc, "users", "user"))
    cluster = dict(clusters).get(context.get("cluster", ""), clusters[0][1])
    user = users.get(context.get("user", ""), {})
    if not _valid_host(str(cluster.get("server", ""))):
        return "untrusted server endpoint"
    if user.get("username") or user.get("password"):
        return "basic auth is not allowed"
    if user.get("exec"):
        return "exec plugins are not allowed"
    if user.get("auth-provider"):
        return "auth providers are not allowed"
    return None


def _current(doc: dict[str, Any]) -> dict[str, Any]:
    contexts = dict(_named(doc, "contexts", "context"))
    return contexts.get(str(doc.get("current-context", "")), next(iter(contexts.values()), {}))


_TEMP: str | None = None


def _temp_dir() -> str:
    """One private directory per process for the certificate files the client library writes out."""
    global _TEMP
    if _TEMP is None:
        _TEMP = tempfile.mkdtemp(prefix="pykueue-multikueue-")
        os.chmod(_TEMP, 0o700)
    return _TEMP


async def connect(doc: dict[str, Any]) -> Kube:
    """A connection to the worker this kubeconfig names (its current context)."""
    configuration = k8s_client.Configuration()
    try:
        await k8s_config.load_kube_config_from_dict(doc, client_configuration=configuration,
                                                    temp_file_path=_temp_dir())
    except Exception as exc:  # noqa: BLE001 - the library raises many kinds for a bad document
        raise KubeconfigError(f"failed to load kubeconfig: {exc}") from None
    return Kube.from_configuration(configuration)
