"""The webhook server's certificates, without a cluster: what a new bundle names, when it is renewed
(the serving certificate before the CA), how the directory keeps keys, and a running server that
presents its renewed certificate without a restart."""

from __future__ import annotations

import asyncio
import datetime
from pathlib import Path

from cryptography import x509

from pykueue.controller.serving import certs
from pykueue.controller.webhooks import names
from pykueue.controller.webhooks.server import Options, WebhookServer
from tests.certs import served_certificate
from tests.controller.fakes import NoCluster

NAMES = certs.service_names(names.SERVICE, names.NAMESPACE)


def test_a_new_bundle_names_the_service_and_loopback() -> None:
    bundle = certs.renew(None, NAMES)
    assert certs.renewal_reason(bundle, NAMES) is None
    cert = x509.load_pem_x509_certificate(bundle.cert)
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "pykueue-webhook-service.pykueue-system.svc" in san.get_values_for_type(x509.DNSName)
    assert [str(ip) for ip in san.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert certs.Bundle.from_data(bundle.as_data()) == bundle


def test_renewal_before_expiry_keeps_the_ca_while_it_has_time_left() -> None:
    bundle = certs.renew(None, NAMES)
    in_300_days = datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=300)
    assert certs.renewal_reason(bundle, NAMES, in_300_days) == "the serving certificate expires soon"
    renewed = certs.renew(bundle, NAMES, in_300_days)
    assert renewed.ca_cert == bundle.ca_cert and renewed.cert != bundle.cert  # no new CA bundle needed
    assert certs.renewal_reason(renewed, NAMES, in_300_days) is None
    in_10_years = datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=3600)
    assert certs.renewal_reason(renewed, NAMES, in_10_years) == "the CA expires soon"
    assert certs.renew(renewed, NAMES, in_10_years).ca_cert != bundle.ca_cert
    other = certs.renew(None, ("elsewhere.svc",))
    assert "does not name" in (certs.renewal_reason(other, NAMES) or "")
    mixed = certs.Bundle(bundle.ca_cert, bundle.ca_key, other.cert, other.key)
    # every CA is named pykueue-ca: only the signature tells another CA's certificate
    assert certs.renewal_reason(mixed, ("elsewhere.svc",)) == (
        "the serving certificate is not signed by the CA (InvalidSignature)")


def test_cert_dir_keeps_keys_private(tmp_path: Path) -> None:
    bundle = certs.renew(None, NAMES)
    certs.write_dir(tmp_path, bundle)
    assert certs.read_dir(tmp_path) == bundle
    assert {(p.name, p.stat().st_mode & 0o777) for p in tmp_path.iterdir()} == {
        (name, 0o600) for name in certs.FILES}


def test_server_renews_and_reloads_its_certificate_in_place(tmp_path: Path) -> None:
    """A certificate that must be renewed (here: it names the wrong host) is replaced on the next sync,
    by the same CA, and the running server presents the new one without a restart."""

    async def scenario() -> tuple[int, int, bytes, bytes]:
        server = WebhookServer(NoCluster(), Options(port=0, host="127.0.0.1", cert_dir=tmp_path,  # type: ignore[arg-type]
                                                     sync_seconds=0.2))
        await server.start()
        try:
            first = certs.read_dir(tmp_path)
            assert first is not None and first == server.certs.bundle
            served = await asyncio.to_thread(served_certificate, server.port, first.ca_cert)
            wrong = certs.renew(first, ("somewhere-else.svc",))  # same CA, wrong name
            server.certs.bundle = wrong  # what it holds (it never reads the directory back)
            await asyncio.sleep(1.0)
            second = certs.read_dir(tmp_path)
            assert second == server.certs.bundle
            assert second is not None and certs.renewal_reason(second, NAMES) is None
            again = await asyncio.to_thread(served_certificate, server.port, first.ca_cert)
            return served.serial_number, again.serial_number, first.ca_cert, second.ca_cert
        finally:
            await server.stop()

    before, after, ca_before, ca_after = asyncio.run(scenario())
    assert before != after
    assert ca_before == ca_after


def test_a_service_name_longer_than_a_common_name_still_gets_a_certificate() -> None:
    """A common name holds at most 64 characters; the SANs carry the whole DNS name."""
    names = certs.service_names("pykueue-webhook-service", "a-rather-long-namespace-name-for-a-release")
    assert len(names[0]) > 64
    bundle = certs.renew(None, names)
    cert = x509.load_pem_x509_certificate(bundle.cert)
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names[0] in sans.get_values_for_type(x509.DNSName)
