"""The controller process's own HTTP endpoints: `/metrics` (HTTPS behind delegated authentication
and authorization by default, as controller-runtime's secure metrics server), `/healthz` and `/readyz`
(plain HTTP, unauthenticated, on their own port, for the kubelet).

Served by aiohttp on the controller's own asyncio loop: an answer to `/healthz` proves that loop is
turning (a wedged loop answers nothing, so the kubelet restarts the pod), and `/metrics` can read the
engine without a lock. Addresses are controller-runtime's: `:8443` every interface, `HOST:PORT`,
`[::1]:PORT`, and `0` for off. Each port is bounded by ``serving`` (``serving.METRICS``,
``serving.PROBES``): anything in the cluster can reach them, and a flood must not stop the probes.
"""

from __future__ import annotations

import datetime
import logging
import shutil
import socket
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

from pykueue.controller.runtime import supervise
from pykueue.controller.serving import limits as serving

log = logging.getLogger("pykueue.controller")

CONTENT_TYPE_PROMETHEUS = "text/plain; version=0.0.4; charset=utf-8"


def parse_bind(address: str) -> tuple[str | None, int] | None:
    """`:8080` -> (None, 8080), every interface; `127.0.0.1:9` -> ("127.0.0.1", 9); `0` or "" -> None (off)."""
    if address in ("", "0"):
        return None
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"bind address must be [HOST]:PORT or 0, got {address!r}")
    host = host.strip("[]")
    return (host or None), int(port)


class Server:
    """One listener; `routes` maps a path to a handler returning (status, body, content type)."""

    def __init__(self, name: str, address: str,
                 routes: dict[str, Callable[[], tuple[int, bytes, str]]], *, bounds: serving.Bounds,
                 secure: SecureServing | None = None) -> None:
        self.name = name
        self.bind = parse_bind(address)
        self.routes = routes
        self.secure = secure  # HTTPS, every path behind authentication and authorization
        self.limits = serving.Limits(bounds)
        self.listener: serving.Listener | None = None
        self.port = 0  # the bound port, once listening

    async def start(self) -> None:
        """Listen, or do nothing when the address is 0; a port in use fails here, at start-up."""
        if self.bind is None:
            return
        middlewares = []
        if self.secure is not None:
            from pykueue.controller.serving import auth

            def guard(request: web.Request) -> auth.Attributes:
                """A non-resource URL, as controller-runtime's filter asks: `get` on `/metrics`."""
                verb = "get" if request.method in ("GET", "HEAD") else request.method.lower()
                return auth.Attributes(verb, path=request.path)

            middlewares.append(auth.middleware(self.secure.auth, guard, certificates=False))
        app = self.limits.application(*middlewares)
        for path, handler in self.routes.items():
            app.router.add_get(path, self._wrap(handler))
        host, port = self.bind
        context = self.secure.context if self.secure is not None else None
        self.listener = serving.Listener(app, self.limits, host, port, ssl_context=context)
        await self.listener.start()
        self.port = self.listener.port
        log.info("serving", extra={"fields": {"server": self.name, "address": f"{host or ''}:{self.port}",
                                              "scheme": "https" if context else "http",
                                              "paths": ",".join(self.routes)}})

    async def stop(self) -> None:
        if self.listener is not None:
            await self.listener.stop()
            self.listener = None
        if self.secure is not None:
            self.secure.close()


    def _wrap(self, handler: Callable[[], tuple[int, bytes, str]]):
        async def handle(request: web.Request) -> web.Response:
            try:
                status, body, content_type = handler()
            except Exception as exc:  # noqa: BLE001 - a fixed answer: the probe port asks no one who they are
                log.exception("handler failed", extra={"fields": {"server": self.name, "path": request.path,
                                                                  "error": str(exc)}})
                status, body, content_type = 500, b"internal error; the controller's log has the details", \
                    "text/plain; charset=utf-8"
            return web.Response(status=status, body=body, headers={"Content-Type": content_type})
        return handle


@dataclass
class SecureServing:
    """HTTPS with a self-signed certificate made at start (as controller-runtime's secure metrics
    server without a certificate of its own: scrapers skip verification or pin it), kept in a fresh
    private directory removed at stop, and the authenticator every request goes through.

    The certificate is renewed without a timer: each TLS handshake first checks it (``check``, from
    the context's SNI callback, which OpenSSL calls for every ClientHello, with or without a server
    name), and once it is within ``lookahead`` of its end a new one (same CA while it has time left)
    is written and loaded, into the listener's context for the next connections and into a new one
    this connection switches to (OpenSSL copied the old certificate into it, and switching to the
    context it already has does nothing)."""

    context: ssl.SSLContext
    auth: Any  # auth.Delegated
    directory: Path
    names: tuple[str, ...] = ()
    bundle: Any = None  # certs.Bundle
    not_after: datetime.datetime | None = None
    lookahead: datetime.timedelta = datetime.timedelta(days=90)
    validity: datetime.timedelta = datetime.timedelta(days=365)
    now: Callable[[], datetime.datetime] = lambda: datetime.datetime.now(datetime.UTC)

    @classmethod
    def self_signed(cls, auth: Any, names: tuple[str, ...] = (), *, validity: datetime.timedelta | None = None,
                    lookahead: datetime.timedelta | None = None,
                    now: Callable[[], datetime.datetime] | None = None) -> SecureServing:
        from pykueue.controller.serving import certs

        directory = certs.fresh_dir(certs.default_parent(), prefix="metrics-certs-")
        context = serving.server_context()
        made = cls(context, auth, directory, (*names, socket.gethostname(), *certs.LOCAL_NAMES),
                   validity=validity or certs.CERT_VALIDITY, lookahead=certs.LOOKAHEAD if lookahead is None
                   else lookahead)
        if now is not None:
            made.now = now
        made._renew()
        context.sni_callback = made._on_hello
        return made

    def _renew(self) -> None:
        from cryptography import x509

        from pykueue.controller.serving import certs

        now = self.now()
        self.bundle = certs.renew(self.bundle, self.names, now, lookahead=self.lookahead,
                                  cert_validity=self.validity)
        certs.write_dir(self.directory, self.bundle, with_ca_key=False)
        self.context.load_cert_chain(str(self.directory / "tls.crt"), str(self.directory / "tls.key"))
        self.not_after = x509.load_pem_x509_certificate(self.bundle.cert).not_valid_after_utc

    def check(self) -> bool:
        """Renew the certificate when it ends within ``lookahead``; True when it was renewed."""
        if self.not_after is not None and self.not_after - self.now() >= self.lookahead:
            return False
        try:
            self._renew()
        except (OSError, ValueError, ssl.SSLError) as exc:  # keep serving the old one; the next handshake retries
            log.warning("metrics certificate not renewed", extra={"fields": {"error": str(exc)}})
            return False
        log.info("metrics certificate renewed", extra={"fields": {"notAfter": self.not_after.isoformat()
                                                                  if self.not_after else ""}})
        return True

    def _on_hello(self, connection: Any, _server_name: str | None, _context: ssl.SSLContext) -> None:
        if self.check():  # this connection too: a context of its own with the new certificate, and
            fresh = serving.context_like(self.context)  # the client CAs the listener's has (the dashboard's)
            fresh.load_cert_chain(str(self.directory / "tls.crt"), str(self.directory / "tls.key"))
            connection.context = fresh

    def close(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


class Probes:
    """`/healthz` answers while the loop turns, and fails (500, naming the loop, never its error: the
    port is unauthenticated) while a supervised loop keeps failing, so the kubelet restarts a controller that is up but cannot do its work;
    `/readyz` asks `ready`, which the command sets to what readiness means in its mode (informers
    synced; or, for a standby replica, the lease observed)."""

    def __init__(self) -> None:
        self.ready: Callable[[], bool] = lambda: False

    def healthz(self) -> tuple[int, bytes, str]:
        failing = supervise.failing()
        if failing:  # the loop's name and count only: the port is unauthenticated, its errors are logged
            lines = [f"loop {h.name} failing: {h.failures} failures in a row (the controller's log has its "
                     "errors)" for h in failing]
            return 500, "\n".join(lines).encode(), "text/plain; charset=utf-8"
        return 200, b"ok", "text/plain; charset=utf-8"

    def readyz(self) -> tuple[int, bytes, str]:
        if self.ready():
            return 200, b"ok", "text/plain; charset=utf-8"
        return 503, b"not ready", "text/plain; charset=utf-8"
