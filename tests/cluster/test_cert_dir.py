"""The webhook server's certificates across restarts, on the tier 1 API server: the directory private
(0700) whatever it was before, a bundle planted there never served, the CA key always its
certificate's, with and without `--webhook-secret`.

The server runs in this process (`WebhookServer`, as `pykueue controller` starts it) with a Service
name no configuration uses, and without patching CA bundles (other tests share the CRDs).
"""

from __future__ import annotations

import asyncio
import base64
import os
import socket
import ssl
import stat
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from pykueue.controller.serving import certs
from pykueue.controller.webhooks.server import SECRET, Options, WebhookServer
from pykueue.devcluster.cluster import DevCluster
from pykueue.kube.client import Kube

pytestmark = pytest.mark.cluster

SERVICE = "certtest-webhook-service"


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def _served(port: int, ca: bytes) -> x509.Certificate:
    """The certificate the server presents, verified against ``ca`` (or the handshake fails)."""
    context = ssl.create_default_context(cadata=ca.decode())
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw, \
            context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
        return x509.load_der_x509_certificate(tls.getpeercert(binary_form=True))


async def _run(kube: Kube, options: Options) -> tuple[certs.Bundle, Path, int]:
    """Start a server, check what it serves, stop it: the bundle it held, its directory, the
    directory's mode while it ran."""
    server = WebhookServer(kube, options)

    async def no_injection() -> None:
        return None

    server.certs.inject = no_injection  # type: ignore[method-assign]
    await server.start()
    try:
        bundle = server.certs.bundle
        assert bundle is not None
        on_disk = {name: (server.directory / name).read_bytes() for name in ("ca.crt", "tls.crt", "tls.key")}
        assert on_disk == {"ca.crt": bundle.ca_cert, "tls.crt": bundle.cert, "tls.key": bundle.key}
        assert certs.renewal_reason(bundle, options.dns_names) is None  # includes: each key is its certificate's
        served = await asyncio.to_thread(_served, server.port, bundle.ca_cert)
        assert served.public_bytes(serialization.Encoding.PEM) == bundle.cert
        return bundle, server.directory, _mode(server.directory)
    finally:
        await server.stop()


@pytest.fixture
def kube(control_plane: DevCluster):
    async def connect() -> Kube:
        return await Kube.connect(str(control_plane.kubeconfig))
    return connect


def test_without_a_secret_a_new_ca_each_start_and_nothing_planted_is_served(kube, tmp_path: Path) -> None:
    directory = tmp_path / "certs"
    directory.mkdir(mode=0o755)
    os.chmod(directory, 0o755)
    options = Options(port=0, host="127.0.0.1", cert_dir=directory, service=SERVICE, namespace="default")
    planted = certs.renew(None, options.dns_names)  # valid, names the Service: an earlier run's or anyone's
    certs.write_dir(directory, planted)
    os.chmod(directory, 0o755)

    async def scenario() -> tuple[certs.Bundle, certs.Bundle, int, int]:
        k = await kube()
        try:
            first, _, mode_first = await _run(k, options)
            second, _, mode_second = await _run(k, options)  # a restart
        finally:
            await k.close()
        return first, second, mode_first, mode_second

    first, second, mode_first, mode_second = asyncio.run(scenario())
    assert first.ca_cert != planted.ca_cert and second.ca_cert not in (planted.ca_cert, first.ca_cert)
    assert (mode_first, mode_second) == (0o700, 0o700)
    assert certs.read_dir(directory) == second  # the CA key on disk is the CA certificate's
    assert {_mode(p) for p in directory.iterdir()} == {0o600}


def test_with_a_secret_the_ca_survives_restarts_and_no_stale_key_stays(kube, control_plane: DevCluster,
                                                                        tmp_path: Path) -> None:
    namespace, name = "default", "certtest-webhook-server-cert"
    control_plane.kubectl("-n", namespace, "create", "secret", "generic", name)
    directory = tmp_path / "certs"
    options = Options(port=0, host="127.0.0.1", cert_dir=directory, secret=name, service=SERVICE,
                      namespace=namespace)
    stale = certs.renew(None, options.dns_names)
    certs.write_dir(directory, stale)  # an earlier run's files, CA key included

    async def secret_bundle(k: Kube) -> certs.Bundle | None:
        return certs.Bundle.from_data((await k.get(SECRET, name, namespace)).get("data"))

    async def scenario() -> tuple[certs.Bundle, certs.Bundle, certs.Bundle | None, certs.Bundle, certs.Bundle]:
        k = await kube()
        try:
            first, _, _ = await _run(k, options)
            stored = await secret_bundle(k)
            assert not (directory / "ca.key").exists()  # the key stays in the Secret only
            second, _, mode = await _run(k, options)  # a restart: the Secret's CA again
            assert mode == 0o700
            # a Secret whose CA key is another CA's: a new CA, a pair again
            secret = await k.get(SECRET, name, namespace)
            other = certs.renew(None, options.dns_names)
            secret["data"]["ca.key"] = base64.b64encode(other.ca_key).decode()
            await k.replace(SECRET, secret)
            third, _, _ = await _run(k, options)
            repaired = await secret_bundle(k)
        finally:
            await k.close()
        return first, second, stored, third, repaired

    try:
        first, second, stored, third, repaired = asyncio.run(scenario())
    finally:
        control_plane.kubectl("-n", namespace, "delete", "secret", name, check=False)
    assert stored == first and first.ca_cert != stale.ca_cert
    assert second.ca_cert == first.ca_cert
    assert third.ca_cert != first.ca_cert and repaired == third
    assert certs.renewal_reason(repaired, options.dns_names) is None
    assert sorted(p.name for p in directory.iterdir()) == ["ca.crt", "tls.crt", "tls.key"]


def test_without_a_directory_a_fresh_private_one_removed_at_stop(kube, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    options = Options(port=0, host="127.0.0.1", service=SERVICE, namespace="default")

    async def scenario() -> tuple[Path, int]:
        k = await kube()
        try:
            _, directory, mode = await _run(k, options)
        finally:
            await k.close()
        return directory, mode

    directory, mode = asyncio.run(scenario())
    assert directory.parent == runtime / "pykueue" and mode == 0o700
    assert not directory.exists()
