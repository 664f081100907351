"""The secure metrics server's self-signed certificate is renewed before it ends, without a timer:
the handshake that finds it within its lookahead gets a new one (same CA), and so do those after."""

from __future__ import annotations

import asyncio
import datetime
import socket
import ssl

from cryptography import x509

from pykueue.controller.observe.health import SecureServing


class Clock:
    def __init__(self) -> None:
        self.t = datetime.datetime.now(datetime.UTC)

    def __call__(self) -> datetime.datetime:
        return self.t


def _served(port: int) -> x509.Certificate:
    context = ssl._create_unverified_context()  # noqa: S323 - a scraper of a self-signed certificate
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw, context.wrap_socket(raw) as tls:
        return x509.load_der_x509_certificate(tls.getpeercert(binary_form=True))


def test_a_short_lived_metrics_certificate_is_renewed_at_the_first_handshake_within_its_lookahead() -> None:
    clock = Clock()
    serving = SecureServing.self_signed(None, validity=datetime.timedelta(hours=1),
                                        lookahead=datetime.timedelta(minutes=10), now=clock)
    first_end = serving.not_after
    assert first_end is not None and first_end - clock.t <= datetime.timedelta(hours=1)

    async def scenario() -> tuple[x509.Certificate, ...]:
        server = await asyncio.start_server(lambda _r, w: w.close(), "127.0.0.1", 0, ssl=serving.context)
        port = server.sockets[0].getsockname()[1]
        try:
            a = await asyncio.to_thread(_served, port)
            clock.t += datetime.timedelta(minutes=49)  # 11 minutes left: not yet
            b = await asyncio.to_thread(_served, port)
            clock.t += datetime.timedelta(minutes=2)  # 9 minutes left: this handshake renews
            c = await asyncio.to_thread(_served, port)
            d = await asyncio.to_thread(_served, port)
            return a, b, c, d
        finally:
            server.close()
            await server.wait_closed()

    try:
        a, b, c, d = asyncio.run(scenario())
        assert a.serial_number == b.serial_number
        assert c.serial_number != b.serial_number  # the renewing connection already gets the new one
        assert d.serial_number == c.serial_number
        assert c.not_valid_after_utc == first_end + datetime.timedelta(minutes=51)  # an hour from its renewal
        assert c.issuer == a.issuer  # the same CA, which has years left
        assert x509.load_pem_x509_certificate((serving.directory / "tls.crt").read_bytes()) == c  # on disk too
    finally:
        serving.close()
    assert not serving.directory.exists()


def test_a_renewed_certificate_still_asks_for_and_checks_client_certificates(tmp_path) -> None:
    """The dashboard's port trusts the ConfigMap's client CAs (auth.trust_client_cas). The handshake that
    renews its certificate switches to a fresh context: that context must ask for, and verify, a client
    certificate as the listener's does (without the CAs the client's certificate was refused)."""
    from pykueue.controller.serving import auth
    from tests.certs import key_pem, make_cert, pem
    from tests.controller.fake_auth import CONFIG_DATA, FakeApi

    root = make_cert("client-ca")
    leaf, key = make_cert("erin", root)
    (tmp_path / "leaf.crt").write_text(pem(leaf))
    (tmp_path / "leaf.key").write_bytes(key_pem(key))
    delegated = auth.Delegated(None, reviewer=FakeApi())
    delegated.set_config(auth.AuthConfig.from_data({**CONFIG_DATA, "client-ca-file": pem(root[0])}))
    clock = Clock()
    serving = SecureServing.self_signed(delegated, validity=datetime.timedelta(hours=1),
                                        lookahead=datetime.timedelta(minutes=10), now=clock)
    auth.trust_client_cas(serving.context, delegated)

    def handshake(port: int) -> tuple[int, str]:
        """The served certificate's serial, and the client's CN as the server verified it."""
        context = ssl._create_unverified_context()  # noqa: S323 - the self-signed serving certificate
        context.load_cert_chain(str(tmp_path / "leaf.crt"), str(tmp_path / "leaf.key"))
        with socket.create_connection(("127.0.0.1", port), timeout=5) as raw, context.wrap_socket(raw) as tls:
            served = x509.load_der_x509_certificate(tls.getpeercert(binary_form=True)).serial_number
            return served, tls.recv(100).decode()

    async def echo_peer(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peercert") or {}
        writer.write(next((v for rdn in peer.get("subject", ()) for k, v in rdn if k == "commonName"), "-").encode())
        await writer.drain()
        writer.close()

    async def scenario() -> tuple[tuple[int, str], tuple[int, str], tuple[int, str]]:
        server = await asyncio.start_server(echo_peer, "127.0.0.1", 0, ssl=serving.context)
        port = server.sockets[0].getsockname()[1]
        try:
            before = await asyncio.to_thread(handshake, port)
            clock.t += datetime.timedelta(minutes=51)  # within the lookahead: this handshake renews
            renewing = await asyncio.to_thread(handshake, port)
            after = await asyncio.to_thread(handshake, port)
            return before, renewing, after
        finally:
            server.close()
            await server.wait_closed()

    try:
        before, renewing, after = asyncio.run(scenario())
    finally:
        serving.close()
    assert before[1] == renewing[1] == after[1] == "erin"
    assert renewing[0] != before[0] and after[0] == renewing[0]
