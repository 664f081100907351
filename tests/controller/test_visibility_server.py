"""The visibility API's own HTTPS port (``pykueue.controller.visibility.server``) beside the webhook
port, without a cluster: one WebhookServer keeps the certificates, the visibility server serves them
with a TLS context of its own that asks for client certificates, the webhook port asks for none and
serves no visibility path. The client certificates come from a root -> intermediate -> leaf chain made
here; TokenReview and SubjectAccessReview answers from tests/controller/fake_auth.py's fake API."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path

import aiohttp
import pytest
from cryptography import x509

from pykueue.controller.serving import auth, certs
from pykueue.controller.visibility.server import VisibilityOptions, VisibilityServer
from pykueue.controller.webhooks import names
from pykueue.controller.webhooks.server import Options, WebhookServer
from tests.certs import key_pem, make_cert, pem, served_certificate
from tests.controller.fake_auth import CONFIG_DATA, Clock, FakeApi
from tests.controller.fakes import NoCluster

GROUP_PATH = "/apis/visibility.kueue.x-k8s.io/v1beta2"


def test_visibility_on_its_own_port_with_client_chains_and_the_webhook_port_without(tmp_path: Path) -> None:
    api = FakeApi()
    clock = Clock()
    d = auth.Delegated(None, reviewer=api, clock=clock)
    root = make_cert("client-ca")
    d.set_config(auth.AuthConfig.from_data({**CONFIG_DATA, "client-ca-file": pem(root[0])}))
    middle = make_cert("team-ca", root, ca=True)
    leaf, leaf_key = make_cert("erin", middle)
    (tmp_path / "chain.crt").write_text(pem(leaf) + pem(middle[0]))
    (tmp_path / "leaf.crt").write_text(pem(leaf))
    (tmp_path / "leaf.key").write_bytes(key_pem(leaf_key))
    serving = tmp_path / "serving"
    options = Options(port=0, host="127.0.0.1", cert_dir=serving, visibility=True, sync_seconds=0.2)

    def client(chain: str | None) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(serving / "ca.crt"))
        if chain:
            context.load_cert_chain(str(tmp_path / chain), str(tmp_path / "leaf.key"))
        return context

    async def scenario() -> None:
        webhooks = WebhookServer(NoCluster(), options)  # type: ignore[arg-type]
        await webhooks.start()
        visibility = VisibilityServer(VisibilityOptions(port=0, host="127.0.0.1"), webhooks, d, lambda: None)
        await visibility.start()
        try:
            # one certificate names both Services (and loopback)
            assert options.visibility_service == "pykueue-visibility-server"
            assert certs.renewal_reason(webhooks.certs.bundle, (
                "pykueue-webhook-service.pykueue-system.svc", "pykueue-visibility-server.pykueue-system.svc",
                "pykueue-visibility-server.pykueue-system.svc.cluster.local", "127.0.0.1")) is None
            # the webhook port asks for no client certificate and has no visibility path, for anyone
            assert webhooks.context is not None and webhooks.context.verify_mode == ssl.CERT_NONE
            assert visibility.context is not None and visibility.context.verify_mode == ssl.CERT_OPTIONAL
            hook = f"https://127.0.0.1:{webhooks.port}"
            vis = f"https://127.0.0.1:{visibility.port}"
            async with aiohttp.ClientSession() as session:
                for path in (GROUP_PATH, f"{GROUP_PATH}/clusterqueues/cq/pendingworkloads", "/apis"):
                    async with session.get(hook + path, ssl=client("chain.crt")) as r:
                        assert r.status == 404, path
                async with session.get(hook + "/healthz", ssl=client(None)) as r:
                    assert (r.status, await r.text()) == (200, "ok")
                # the visibility port: nobody 401, erin through her intermediate 403 then 200
                async with session.get(vis + GROUP_PATH, ssl=client(None)) as r:
                    assert r.status == 401
                async with session.get(vis + "/no/such/path", ssl=client(None)) as r:
                    assert r.status == 401  # authenticated before routed
                async with session.get(vis + GROUP_PATH, ssl=client("chain.crt")) as r:
                    assert r.status == 403 and 'User "erin"' in (await r.json())["message"]
                api.grants.add(("erin", GROUP_PATH))
                clock.t += auth.DENY_TTL
                async with session.get(vis + GROUP_PATH, ssl=client("chain.crt")) as r:
                    assert r.status == 200 and (await r.json())["kind"] == "APIResourceList"
                # the leaf alone cannot be linked to the root: the handshake fails
                with pytest.raises(aiohttp.ClientError):
                    async with session.get(vis + GROUP_PATH, ssl=client("leaf.crt")):
                        pass
            # a renewal on the webhook side is served on the visibility port too, without a restart
            ca = webhooks.certs.bundle.ca_cert
            before = await asyncio.to_thread(served_certificate, visibility.port, ca)
            webhooks.certs.bundle = certs.renew(webhooks.certs.bundle, ("somewhere-else.svc",))
            renewed = lambda: webhooks.certs.bundle is not None and \
                certs.renewal_reason(webhooks.certs.bundle, options.dns_names) is None  # noqa: E731
            for _ in range(100):  # the sync runs every 0.2 s
                if renewed():
                    break
                await asyncio.sleep(0.1)
            assert renewed()
            after = await asyncio.to_thread(served_certificate, visibility.port, ca)
            assert after != before
            assert after.serial_number == x509.load_pem_x509_certificate(webhooks.certs.bundle.cert).serial_number
        finally:
            await visibility.stop()
            await webhooks.stop()
        assert webhooks.listeners == []

    asyncio.run(scenario())


def test_the_visibility_service_is_named_beside_the_webhook_service() -> None:
    assert names.visibility_service("pykueue-webhook-service") == "pykueue-visibility-server"
    assert names.visibility_service("kq-pykueue-webhook-service") == "kq-pykueue-visibility-server"
    assert names.visibility_service("vis") == "vis-visibility-server"
    plain = Options(service="vis", namespace="ns")
    assert plain.dns_names == ("vis.ns.svc", "vis.ns.svc.cluster.local", "localhost", "127.0.0.1")
    both = Options(service="vis", namespace="ns", visibility=True)
    assert both.dns_names == ("vis.ns.svc", "vis.ns.svc.cluster.local", "localhost", "127.0.0.1",
                              "vis-visibility-server.ns.svc", "vis-visibility-server.ns.svc.cluster.local")


def test_visibility_flags_default_to_upstreams_and_refuse_a_bad_port(capsys: pytest.CaptureFixture[str]) -> None:
    from pykueue import cli

    args = cli._parse(["controller"])
    assert (args.visibility_port, args.visibility_bind_address, args.webhook_port) == (8082, "", 9443)
    args = cli._parse(["controller", "--visibility-port=0", "--visibility-bind-address=127.0.0.1"])
    assert (args.visibility_port, args.visibility_bind_address) == (0, "127.0.0.1")
    for bad in ("http", "70000", "-1"):
        with pytest.raises(SystemExit) as exit_:
            cli._parse(["controller", f"--visibility-port={bad}"])
        assert exit_.value.code == 2
        err = capsys.readouterr().err
        assert "--visibility-port: not a port number" in err and "Traceback" not in err, err


def test_with_the_webhook_port_off_the_certificates_are_kept_for_the_visibility_port_alone(tmp_path: Path) -> None:
    """--webhook-port 0 with --visibility-port on: no webhook listener, and of the CA bundles only the
    APIServices' are patched (nobody serves the webhooks), but the visibility port has its certificate."""
    kube = NoCluster()
    options = Options(port=0, host="127.0.0.1", cert_dir=tmp_path / "serving", visibility=True, serve=False)

    async def scenario() -> None:
        webhooks = WebhookServer(kube, options)  # type: ignore[arg-type]
        await webhooks.start()
        visibility = VisibilityServer(VisibilityOptions(port=0, host="127.0.0.1"), webhooks,
                                      auth.Delegated(None, reviewer=FakeApi()), lambda: None)
        await visibility.start()
        try:
            assert webhooks.listener is None and webhooks.context is None
            assert webhooks.certs._missing == {"v1beta2.visibility.kueue.x-k8s.io", "v1beta1.visibility.kueue.x-k8s.io"}
            async with aiohttp.ClientSession() as session:
                context = ssl.create_default_context(cafile=str(tmp_path / "serving" / "ca.crt"))
                async with session.get(f"https://127.0.0.1:{visibility.port}{GROUP_PATH}", ssl=context) as r:
                    assert r.status == 401
        finally:
            await visibility.stop()
            await webhooks.stop()

    asyncio.run(scenario())
