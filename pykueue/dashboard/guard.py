"""Who may use a dashboard, and what a browser may do with its pages.

``pykueue dashboard`` serves everything its caller's kubeconfig can read, so only that person may use
it: as Jupyter guards a notebook server, each start draws a random token, printed in the URL; the
first request that carries it gets a ``SameSite=Strict``, ``HttpOnly`` cookie and a redirect to the
same page under this start's session path (``/s/<random>/``), where every page is served and to which
the cookie is scoped. Browsers send a host's cookies to all its ports (RFC 6265 has no port scope), so
a cookie for ``/`` would reach every other server on 127.0.0.1 the browser visits; one scoped to a
random path reaches only URLs under that path, which no other server's pages name. Other users of the
machine cannot read the token, and another web page cannot send the cookie (``SameSite=Strict``) nor
reach the server under a name of its own (DNS rebinding: only loopback ``Host`` values, or the address
it was told to listen on, are served). A POST whose
``Origin`` or ``Sec-Fetch-Site`` says it came from another site is refused as well
(``same_site_writes``, which the dashboard the controller serves applies too, in front of its
delegated authentication).

Both front ends send the same response headers: a content security policy that lets the page run its
own inline script (by hash) and talk to its own origin only, no framing, no content sniffing.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import secrets
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

from aiohttp import web
from yarl import URL

from pykueue.dashboard.render import SCRIPT

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
SESSION_BYTES = 16  # the session path's random part (128 bits, as the token's 256 bits are more than enough)
LOOPBACK_NAMES = frozenset(("127.0.0.1", "localhost", "[::1]"))
_SCRIPT_HASH = base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()
HEADERS = {
    "Content-Security-Policy": (
        f"default-src 'none'; script-src 'sha256-{_SCRIPT_HASH}'; style-src 'unsafe-inline'; "
        "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",  # no-referrer would make a browser send "Origin: null" on the form's POST
}


async def add_headers(request: web.Request, response: web.StreamResponse) -> None:
    """``on_response_prepare``: every response, errors and the event stream included."""
    for name, value in HEADERS.items():
        response.headers.setdefault(name, value)


def _refuse(status: type[web.HTTPException], text: str) -> web.HTTPException:
    return status(text=text + "\n", content_type="text/plain")


SAFE_METHODS = frozenset(("GET", "HEAD", "OPTIONS"))


def same_site(request: web.Request) -> bool:
    """``Sec-Fetch-Site`` when the browser sends it (a page cannot set it); otherwise ``Origin``,
    which must be this server's, scheme (http, or https for the controller's), ``Host`` and port (a
    missing one is a client that is no browser)."""
    fetch_site = request.headers.get("Sec-Fetch-Site")
    if fetch_site is not None:
        return fetch_site in ("same-origin", "none")
    origin = request.headers.get("Origin")
    if origin is None:
        return True
    parts = urlsplit(origin)
    return parts.scheme == request.scheme and parts.netloc.lower() == request.host.lower()


@web.middleware
async def same_site_writes(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Both front ends' middleware for state-changing requests (the what-if form's POST): one from
    another site (cross-site request forgery, through a browser that holds the cookie, or a proxy that
    adds the credentials) is refused."""
    if request.method not in SAFE_METHODS and not same_site(request):
        raise _refuse(web.HTTPForbidden, "a request from another site is refused")
    return await handler(request)


class Guard:
    """The standalone dashboard's middleware: the token (or its cookie), the session path, the
    ``Host``, the origin of a POST. ``port`` is set once the listener is bound (``--listen HOST:0``
    picks it then). Jupyter's token login is the model; the session path is what a browser's cookie
    rules need on a host whose other ports serve other people's code."""

    def __init__(self, listen_host: str, port: int = 0, token: str | None = None,
                 session: str | None = None) -> None:
        self.token = token or secrets.token_urlsafe(32)
        self.root = f"/s/{session or secrets.token_urlsafe(SESSION_BYTES)}/"
        self.listen_host = listen_host
        self.port = port

    def app(self, pages: web.Application, middlewares: tuple[Any, ...] = ()) -> web.Application:
        """The standalone front end: ``pages`` (a ``Dashboard.app()`` built with ``root=self.root``)
        mounted under the session path, behind ``middlewares`` and this guard (``middlewares`` first:
        the request limits come before any check)."""
        outer = web.Application(middlewares=[*middlewares, self.middleware],
                                client_max_size=pages._client_max_size)
        outer.on_response_prepare.append(add_headers)
        outer.add_subapp(self.root, pages)
        return outer

    @property
    def cookie(self) -> str:
        """One name per port: browsers send a host's cookies to all its ports, so two dashboards on one
        machine must not overwrite each other's."""
        return f"pykueue-dashboard-{self.port}"

    def url(self, host: str) -> str:
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{self.port}/?token={self.token}"

    def host_allowed(self, header: str) -> bool:
        """A loopback name with the port, or the address it listens on (any address literal when that
        is 0.0.0.0 or ::): names an attacker controls (DNS rebinding) are never served."""
        name, sep, port = header.lower().rpartition(":")
        if not sep or "]" in port or port != str(self.port):
            return False
        if name in LOOPBACK_NAMES:
            return True
        try:
            address = ipaddress.ip_address(name.strip("[]"))
            listening = ipaddress.ip_address(self.listen_host)
        except ValueError:
            return False
        if (":" in name) != name.startswith("["):
            return False  # an IPv6 address in a Host header is bracketed
        return listening.is_unspecified or address == listening

    def _token_is(self, given: str) -> bool:
        return hmac.compare_digest(given.encode(), self.token.encode())

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if not self.host_allowed(request.host):
            raise _refuse(web.HTTPForbidden, f"Host {request.host!r} is not served: open the URL "
                          "pykueue dashboard printed")
        given = request.query.get("token")
        if given is not None:
            if not self._token_is(given) or request.method not in ("GET", "HEAD"):
                raise _refuse(web.HTTPForbidden, "wrong token: open the URL pykueue dashboard printed")
            response = web.HTTPSeeOther(self._in_session(request.rel_url).with_query(
                {k: v for k, v in request.query.items() if k != "token"}))
            response.set_cookie(self.cookie, self.token, httponly=True, samesite="Strict", path=self.root)
            raise response
        if not request.rel_url.raw_path.startswith(self.root) or not self._token_is(
                request.cookies.get(self.cookie, "")):
            raise _refuse(web.HTTPUnauthorized, "open the URL pykueue dashboard printed (with its token)")
        return await same_site_writes(request, handler)

    def _in_session(self, url: URL) -> URL:
        """The same page under the session path: ``/queues/q`` and ``/s/<session>/queues/q`` both go to
        the latter (the printed URL is ``/``; a bookmark of an older start's session is a page here)."""
        path = url.raw_path
        if path.startswith("/s/"):
            path = "/" + path.split("/", 3)[3] if path.count("/") >= 3 else "/"
        return url.with_path(self.root + path.lstrip("/"), encoded=True)
