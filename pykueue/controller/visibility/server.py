"""The visibility API's own HTTPS server (``--visibility-port``, 8082 as upstream's), apart from the
webhook port.

Upstream runs its visibility API as a k8s.io/apiserver extension server on a port of its own, behind
a Service (``<fullname>-visibility-server``, 443 -> 8082) the APIServices point at. Here too: the
serving certificate is the webhook server's (``WebhookServer.certs`` names the visibility Service as
well, and this server reloads it when it is renewed), but the TLS context is this server's alone. It
asks clients for a certificate, checked against the client and request-header CAs of
``kube-system/extension-apiserver-authentication`` (``auth.trust_client_cas``), and every request,
known path or not, is authenticated and authorized (``auth.middleware`` with
``Visibility.attributes``, built from the route that will serve it) before a handler runs: 401 for
nobody, 403 without the right, then the route (404 for an unknown path). A path with an encoded
slash (``%2F``) is refused first (400): no name holds a slash, and the route and the attributes
must read the same segments. Its bounds are ``serving.VISIBILITY``.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from aiohttp import web

from pykueue.controller.serving import auth
from pykueue.controller.serving import limits as serving
from pykueue.controller.visibility import api as visibility
from pykueue.controller.visibility import discovery as visibility_discovery


class Certificates(Protocol):
    """What this server takes from the webhook server (``webhooks.server.WebhookServer``), whose serving
    certificate it shares: the directory the files are in, the callbacks told of a renewal, and the
    visibility Service the certificate names. A protocol, so that the visibility package imports no
    webhook module (the webhooks import the visibility API's names)."""

    directory: Any
    listeners: list[Callable[[], Any]]
    options: Any

log = logging.getLogger("pykueue.visibility")


@web.middleware
async def no_encoded_slash(request: web.Request,
                           handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
    """400 for a path with ``%2F`` in it, before anyone is asked anything."""
    if "%2f" in request.raw_path.partition("?")[0].lower():
        return visibility_discovery.status(400, "BadRequest", "encoded slashes (%2F) are not allowed in the path")
    return await handler(request)


@dataclass
class VisibilityOptions:
    """``pykueue controller``'s visibility flags."""

    port: int
    host: str = ""  # every interface, as upstream's bindAddress 0.0.0.0


class VisibilityServer:
    """HTTPS for the visibility API alone, with the webhook server's certificate files."""

    def __init__(self, options: VisibilityOptions, certificates: Certificates, authenticator: auth.Delegated,
                 source: visibility.Source) -> None:
        self.options = options
        self.certificates = certificates
        self.auth = authenticator
        self.source = source
        self.context: ssl.SSLContext | None = None
        self.limits = serving.Limits(serving.VISIBILITY)
        self.listener: serving.Listener | None = None
        self.port = options.port

    @property
    def directory(self) -> Path:
        return self.certificates.directory

    def app(self) -> web.Application:
        routes = visibility.Visibility(self.source)
        app = self.limits.application(no_encoded_slash, auth.middleware(self.auth, routes.attributes))
        routes.register(app)
        return app

    def _load(self) -> None:
        assert self.context is not None
        self.context.load_cert_chain(str(self.directory / "tls.crt"), str(self.directory / "tls.key"))

    async def start(self) -> None:
        """Listen with the current certificate; follow its renewals and the ConfigMap's CAs."""
        self.context = serving.server_context()  # no system CAs: clients are the ConfigMap's
        self._load()
        auth.trust_client_cas(self.context, self.auth)
        self.certificates.listeners.append(self._load)
        self.listener = serving.Listener(self.app(), self.limits, self.options.host, self.options.port,
                                         ssl_context=self.context)
        await self.listener.start()
        self.port = self.listener.port  # the bound port, when 0 asked for any
        log.info("visibility server ready", extra={"fields": {
            "address": f"{self.options.host}:{self.port}", "service": self.certificates.options.visibility_service}})

    async def stop(self) -> None:
        if self._load in self.certificates.listeners:
            self.certificates.listeners.remove(self._load)
        if self.listener is not None:
            await self.listener.stop()
            self.listener = None
