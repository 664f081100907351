"""Callers of the controller's HTTPS ports as the tests meet them: nobody, a ServiceAccount's token,
the API aggregator's front-proxy certificate (from the dev cluster's PKI), or a forger of its headers."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from pykueue.devcluster.cluster import DevCluster
from pykueue.manifests import render


def https_get(url: str, *, token: str | None = None, cert: tuple[Path, Path] | None = None,
              headers: dict[str, str] | None = None, ca: Path | None = None) -> tuple[int, str]:
    """GET ``url``: the status and body, whatever the status. The server's certificate is checked
    against ``ca`` when given (else not checked, as a scraper with insecureSkipVerify)."""
    context = ssl.create_default_context(cafile=str(ca)) if ca else ssl._create_unverified_context()  # noqa: S323
    if cert is not None:
        context.load_cert_chain(str(cert[0]), str(cert[1]))
    request = urllib.request.Request(url, headers={**(headers or {}),  # noqa: S310 - a local test URL
                                                   **({"Authorization": f"Bearer {token}"} if token else {})})
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as response:  # noqa: S310
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def status_reason(body: str) -> str:
    try:
        return json.loads(body).get("reason", "")
    except ValueError:
        return ""


def chart_role(cluster: DevCluster, name: str) -> None:
    """Apply the ClusterRole ``name`` as the release manifest holds it."""
    (role,) = [d for d in yaml.safe_load_all(render.MANIFESTS.read_text())
               if d and d["kind"] == "ClusterRole" and d["metadata"]["name"] == name]
    cluster.kubectl("apply", "--server-side", "-f", "-", input=yaml.safe_dump(role))


def service_account_token(cluster: DevCluster, namespace: str, name: str, *, cluster_role: str | None = None,
                          role_in_namespace: bool = False) -> str:
    """A new ServiceAccount's token; bound to ``cluster_role`` cluster-wide, or in its own namespace
    only with ``role_in_namespace``."""
    cluster.kubectl("-n", namespace, "create", "serviceaccount", name)
    if cluster_role:
        binding = f"{namespace}-{name}"
        if role_in_namespace:
            cluster.kubectl("-n", namespace, "create", "rolebinding", binding, f"--clusterrole={cluster_role}",
                            f"--serviceaccount={namespace}:{name}")
        else:
            cluster.kubectl("create", "clusterrolebinding", binding, f"--clusterrole={cluster_role}",
                            f"--serviceaccount={namespace}:{name}")
    return cluster.kubectl("-n", namespace, "create", "token", name, "--duration=1h").stdout.strip()


def front_proxy(cluster: DevCluster) -> tuple[Path, Path]:
    """The client certificate and key the API server's aggregator presents."""
    pki = cluster.directory / "pki"
    return pki / "front-proxy-client.crt", pki / "front-proxy-client.key"


def as_user(name: str, *groups: str) -> dict[str, Any]:
    headers: dict[str, Any] = {"X-Remote-User": name}
    if groups:
        headers["X-Remote-Group"] = groups[0]  # urllib sends one value per header name
    return headers
