"""`auth.Delegated` follows kube-system/extension-apiserver-authentication on the tier 1 API server:
the front proxy's CA and allowed names as the API server wrote them, and a change seen without a
restart (the test edits the allowed names, then puts them back)."""

from __future__ import annotations

import asyncio
import json

import pytest
from cryptography import x509

from pykueue.controller.serving.auth import AuthConfig, Delegated
from pykueue.devcluster.cluster import DevCluster
from pykueue.kube.client import Kube

pytestmark = pytest.mark.cluster


def _allowed(cluster: DevCluster, names: list[str]) -> None:
    patch = {"data": {"requestheader-allowed-names": json.dumps(names)}}
    cluster.kubectl("-n", "kube-system", "patch", "configmap", "extension-apiserver-authentication",
                    "--type=merge", "-p", json.dumps(patch))


def test_the_configmap_is_read_and_followed(control_plane: DevCluster) -> None:
    front_proxy_ca = x509.load_pem_x509_certificate((control_plane.directory / "pki" / "front-proxy-ca.crt").read_bytes())
    client_ca = x509.load_pem_x509_certificate((control_plane.directory / "pki" / "ca.crt").read_bytes())
    heard: list[AuthConfig] = []

    async def scenario() -> None:
        kube = await Kube.connect(str(control_plane.kubeconfig))
        auth = Delegated(kube)
        auth.listeners.append(heard.append)
        try:
            await auth.start()
            config = auth.config
            assert config.request_header_cas == (front_proxy_ca,) and client_ca in config.client_cas
            assert config.allowed_names == {"front-proxy-client"}
            assert (config.username_headers, config.group_headers, config.extra_prefixes) == (
                ("X-Remote-User",), ("X-Remote-Group",), ("X-Remote-Extra-",))
            await asyncio.to_thread(_allowed, control_plane, ["front-proxy-client", "aggregator-2"])
            async with asyncio.timeout(30):
                while auth.config.allowed_names != {"front-proxy-client", "aggregator-2"}:
                    await asyncio.sleep(0.1)
            await asyncio.to_thread(_allowed, control_plane, ["front-proxy-client"])
            async with asyncio.timeout(30):
                while auth.config.allowed_names != {"front-proxy-client"}:
                    await asyncio.sleep(0.1)
        finally:
            await auth.stop()
            await kube.close()

    try:
        asyncio.run(scenario())
    finally:
        _allowed(control_plane, ["front-proxy-client"])
    assert [c.allowed_names for c in heard[-2:]] == [{"front-proxy-client", "aggregator-2"}, {"front-proxy-client"}]
