"""The bounds every HTTP server of pykueue shares (webhooks, visibility, metrics, probes, dashboard), so
that no one client can take a server's memory, its connections or the event loop the controller's
lease renewal and probes run on.

What bounds a server, and where the figures come from (each server's own choice is in ``WEBHOOKS`` ...
``DASHBOARD`` below, and docs/security.md says why):

- the request head must arrive within ``header_timeout`` (32 s: k8s.io/apiserver's and
  controller-runtime's ``ReadHeaderTimeout``) of the connection (after its TLS handshake, itself bounded
  by the same figure, as Go's ``tlsHandshakeTimeout``) or of the first byte after the last answer;
  a client that trickles its headers (slow loris) is cut off there;
- an idle keep-alive connection is closed after ``idle_timeout`` (90 s: their ``IdleTimeout``);
- at most ``max_connections`` connections are open: one more gets ``503`` with ``Retry-After`` and is
  closed before it is read;
- at most ``max_inflight`` requests are being handled (kube-apiserver's ``--max-requests-inflight``):
  one more gets ``429`` with ``Retry-After: 1``, as the API server answers; paths in ``long_running``
  (the dashboard's event stream) are not counted, as the API server does not count watches;
- a handler gets ``request_timeout`` (kube-apiserver's ``--request-timeout``, 60 s, unless a server
  needs less), then ``504``;
- a body above ``max_body`` is ``413`` before it is read (by its Content-Length) or as it is read.

``Work`` moves CPU-heavy handling (a large JSON parse, a conversion of many objects) to a few threads,
with at most as many requests' bodies read as there are threads, so one request never stalls the loop
(its thread hands the loop the GIL now and then, ``let_loop_run``, and holds the cyclic collector off
while it works on a large body, ``_CollectorPause``).
Every TLS context comes from ``server_context`` (TLS 1.2 at least, no renegotiation).
"""

from __future__ import annotations

import asyncio
import gc
import logging
import ssl
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from aiohttp import web

log = logging.getLogger("pykueue.serving")

T = TypeVar("T")
I = TypeVar("I")  # noqa: E741 - the input a Work step reads

HEADER_TIMEOUT = 32.0  # k8s.io/apiserver (secure_serving.go) and controller-runtime (internal/httpserver)
IDLE_TIMEOUT = 90.0  # the same servers' IdleTimeout: Go's http.DefaultTransport keeps idle connections 90 s
REQUEST_TIMEOUT = 60.0  # kube-apiserver --request-timeout default
MAX_INFLIGHT = 400  # kube-apiserver --max-requests-inflight default
MIB = 1 << 20


@dataclass(frozen=True)
class Bounds:
    """What one server accepts; see the module's docstring for each figure's meaning."""

    name: str
    max_body: int
    max_connections: int
    max_inflight: int
    header_timeout: float = HEADER_TIMEOUT
    idle_timeout: float = IDLE_TIMEOUT
    request_timeout: float | None = REQUEST_TIMEOUT
    long_running: frozenset[str] = frozenset()  # paths that stream: not in-flight, no request timeout


# controller-runtime's admission limit (pkg/webhook/admission/http.go, maxRequestSize = 7 MiB: the old
# and the new object of at most 3 MB each, as etcd stores them, and 1 MB for the rest); the API server
# gives a webhook call at most 30 s (timeoutSeconds), so the handler gets no longer.
WEBHOOKS = Bounds("webhooks", max_body=7 * MIB, max_connections=1024, max_inflight=MAX_INFLIGHT,
                  request_timeout=30.0)
# the visibility API is read-only (GET): no body worth having; the aggregator and kubectl are its callers
VISIBILITY = Bounds("visibility", max_body=1 * MIB, max_connections=1024, max_inflight=MAX_INFLIGHT)
# one scraper (or a few) every interval
METRICS = Bounds("metrics", max_body=64 * 1024, max_connections=64, max_inflight=32)
# the kubelet, a probe or two at a time: a short head timeout frees a slot a stray client holds
PROBES = Bounds("health", max_body=64 * 1024, max_connections=128, max_inflight=64, header_timeout=10.0)
# people's browsers: pages, the what-if form (its own 2 MiB cap), and one event stream per open page
DASHBOARD = Bounds("dashboard", max_body=2 * MIB, max_connections=256, max_inflight=64,
                   long_running=frozenset({"/events"}))

_REFUSAL = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nRetry-After: 1\r\n"
            b"Connection: close\r\nContent-Length: 21\r\n\r\ntoo many connections\n")


def server_context() -> ssl.SSLContext:
    """A TLS server context: TLS 1.2 or later, and no renegotiation (a client could make the server
    redo the expensive half of a handshake at will)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.options |= ssl.OP_NO_RENEGOTIATION
    return context


def context_like(context: ssl.SSLContext) -> ssl.SSLContext:
    """A fresh server context that checks clients as ``context`` does (its CAs and verify mode), for a
    renewed certificate: without them a connection switched to it would stop asking for client
    certificates, or refuse the ones it asked for."""
    fresh = server_context()
    fresh.minimum_version = context.minimum_version
    for der in context.get_ca_certs(binary_form=True):
        fresh.load_verify_locations(cadata=der)
    fresh.verify_mode = context.verify_mode
    return fresh


class Limits:
    """One server's counters, and the middleware that applies its request bounds (outermost, so a
    refused request costs no authentication review)."""

    def __init__(self, bounds: Bounds) -> None:
        self.bounds = bounds
        self.connections = 0
        self.inflight = 0
        self.refused = 0  # connections turned away at the cap
        self._guards: dict[Any, _Guarded] = {}  # transport -> its connection's guard

    def application(self, *middlewares: Any) -> web.Application:
        return web.Application(client_max_size=self.bounds.max_body, middlewares=[self.middleware, *middlewares])

    @web.middleware
    async def middleware(self, request: web.Request,
                         handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
        guard = self._guards.get(request.transport)
        if guard is not None:
            guard.request_started()
        try:
            return await self._bounded(request, handler)
        finally:
            if guard is not None:
                guard.request_done()

    async def _bounded(self, request: web.Request,
                       handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
        bounds = self.bounds
        if request.content_length is not None and request.content_length > bounds.max_body:
            return _text(413, f"request body of {request.content_length} bytes: at most {bounds.max_body} "
                              "are accepted")
        if request.path in bounds.long_running:
            return await handler(request)
        if self.inflight >= bounds.max_inflight:
            return _text(429, "Too many requests, please try again later.", {"Retry-After": "1"})
        self.inflight += 1
        try:
            if bounds.request_timeout is None:
                return await handler(request)
            deadline = asyncio.timeout(bounds.request_timeout)
            try:
                async with deadline:
                    return await handler(request)
            except TimeoutError:
                if not deadline.expired():
                    raise
                log.warning("request timed out", extra={"fields": {"server": bounds.name, "path": request.path,
                                                                   "seconds": bounds.request_timeout}})
                return _text(504, f"request did not complete within {bounds.request_timeout:g}s")
        finally:
            self.inflight -= 1

    # ---- connections -----------------------------------------------------------------------------

    def admit(self, guard: _Guarded, transport: Any) -> bool:
        if self.connections >= self.bounds.max_connections:
            self.refused += 1
            if self.refused == 1 or self.refused % 100 == 0:
                log.warning("connection refused: too many open", extra={"fields": {
                    "server": self.bounds.name, "open": self.connections, "refused": self.refused}})
            return False
        self.connections += 1
        self._guards[transport] = guard
        return True

    def release(self, transport: Any) -> None:
        self.connections -= 1
        self._guards.pop(transport, None)


def _text(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(status=status, text=message + "\n", headers=headers)


class _Guarded(asyncio.Protocol):
    """aiohttp's protocol for one connection, behind the connection cap and the header timeout.

    The head timer runs from the connection (or from the first byte after an answer) until the
    request reaches ``Limits.middleware``, which aiohttp calls once the whole head is parsed."""

    def __init__(self, inner: asyncio.Protocol, limits: Limits) -> None:
        self.inner = inner
        self.limits = limits
        self.transport: Any = None
        self.admitted = False
        self.idle = False
        self._timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        if not self.limits.admit(self, transport):
            transport.write(_REFUSAL)
            transport.close()
            return
        self.admitted = True
        self._arm()
        self.inner.connection_made(transport)

    def _arm(self) -> None:
        self.idle = False
        self._disarm()
        self._timer = asyncio.get_running_loop().call_later(self.limits.bounds.header_timeout, self._expire)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expire(self) -> None:
        self._timer = None
        log.debug("request head not received in time", extra={"fields": {
            "server": self.limits.bounds.name, "seconds": self.limits.bounds.header_timeout}})
        self.transport.close()

    def request_started(self) -> None:
        self._disarm()

    def request_done(self) -> None:
        self.idle = True

    def data_received(self, data: bytes) -> None:
        if not self.admitted:
            return
        if self.idle:  # the next request begins: its head is timed
            self._arm()
        self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self.inner.eof_received() if self.admitted else None

    def pause_writing(self) -> None:
        if self.admitted:
            self.inner.pause_writing()

    def resume_writing(self) -> None:
        if self.admitted:
            self.inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self.admitted:
            self.admitted = False
            self.limits.release(self.transport)
            self.inner.connection_lost(exc)


class Listener:
    """An aiohttp application served on one address with ``limits``' bounds; ``port`` is the bound
    port once started (0 asks for any). A port in use fails in ``start``."""

    def __init__(self, app: web.Application, limits: Limits, host: str | None, port: int, *,
                 ssl_context: ssl.SSLContext | None = None, shutdown_timeout: float = 5.0) -> None:
        self.app = app
        self.limits = limits
        self.host = host or None
        self.port = port
        self.ssl_context = ssl_context
        self.shutdown_timeout = shutdown_timeout
        self.runner: web.AppRunner | None = None
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        bounds = self.limits.bounds
        self.runner = web.AppRunner(self.app, access_log=None, handle_signals=False,
                                    keepalive_timeout=bounds.idle_timeout, shutdown_timeout=self.shutdown_timeout)
        await self.runner.setup()
        handler = self.runner.server
        assert handler is not None
        try:
            self._server = await asyncio.get_running_loop().create_server(
                lambda: _Guarded(handler(), self.limits), self.host, self.port, ssl=self.ssl_context,
                ssl_handshake_timeout=bounds.header_timeout if self.ssl_context is not None else None,
                reuse_address=True)
        except OSError:
            await self.runner.cleanup()
            self.runner = None
            raise
        if self._server.sockets:
            self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        if self.runner is not None:
            await self.runner.cleanup()
            self.runner = None


COLLECTOR_PAUSE_BYTES = 1 * MIB  # inputs this large are worked on with the collector held off
COLLECTOR_PAUSE_LIMIT = 5.0  # seconds a pause may last before new work stops joining it


class _CollectorPause:
    """The cyclic garbage collector held off while a ``Work`` thread works on a large input. Such a
    review allocates some hundred thousand dicts, which set off collections of the whole heap from
    inside the work (some inside orjson's parse): each holds the GIL, and so stalls the event loop,
    for up to a second here. A review's objects hold no cycles (parsed JSON): reference counting frees
    them when it ends. So that a stream of large reviews cannot keep the collector off (and the
    process's cyclic garbage growing), work joins a pause only within ``COLLECTOR_PAUSE_LIMIT`` of its
    start, and after a pause the collector stays on at least as long as the pause lasted."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        self._holders = 0
        self._since = 0.0
        self._resume_after = 0.0
        self._was_enabled = False

    def acquire(self) -> bool:
        """Hold the collector off (True), or not now (False: the work runs with it on)."""
        with self._lock:
            now = self.clock()
            if self._holders == 0:
                if now < self._resume_after:
                    return False
                self._since, self._was_enabled = now, gc.isenabled()
                gc.disable()
            elif now - self._since > COLLECTOR_PAUSE_LIMIT:
                return False
            self._holders += 1
            return True

    def release(self) -> None:
        with self._lock:
            self._holders -= 1
            if self._holders == 0:
                now = self.clock()
                self._resume_after = now + (now - self._since)
                if self._was_enabled:
                    gc.enable()


_COLLECTOR_PAUSE = _CollectorPause()


def _without_collector(work: Callable[[I], T], value: I) -> T:
    if not isinstance(value, bytes | bytearray) or len(value) < COLLECTOR_PAUSE_BYTES \
            or not _COLLECTOR_PAUSE.acquire():
        return work(value)
    try:
        return work(value)
    finally:
        _COLLECTOR_PAUSE.release()


def let_loop_run() -> None:
    """Called now and then by long pure-Python work on a ``Work`` thread: it gives up the GIL, so the
    event loop runs at once instead of waiting out the interpreter's switch interval (5 ms) at each of
    its steps, which made a probe wait over a second behind one big conversion."""
    time.sleep(0)


class Work:
    """A few threads for request work too heavy for the event loop. A request first waits for a
    thread, and only then reads its input (``read``): at most ``workers`` bodies are held and worked
    on at once, however many requests wait. A request whose caller gave up (its timeout) keeps its
    thread until the work ends, so the bound holds."""

    def __init__(self, workers: int, name: str) -> None:
        self.workers = workers
        self._executor = ThreadPoolExecutor(workers, thread_name_prefix=name)
        self._slots: asyncio.Semaphore | None = None

    async def run(self, read: Callable[[], Awaitable[I]], work: Callable[[I], T]) -> T:
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.workers)
        slots = self._slots
        await slots.acquire()
        try:
            job = asyncio.get_running_loop().run_in_executor(self._executor, _without_collector, work,
                                                             await read())
        except BaseException:
            slots.release()
            raise
        job.add_done_callback(lambda _: slots.release())
        return await asyncio.shield(job)

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
