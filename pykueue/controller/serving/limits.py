"""The bounds every HTTP server of pykueue shares (webhooks, visibility, metrics, probes, dashboard), so
that no one client can take a server's memory, its connections or the event loop the controller's
lease renewal and probes run on.

What bounds a server, and where the figures come from (each server's own choice is in ``WEBHOOKS`` ...
``DASHBOARD`` below, and docs/security.md says why):

- the request head must arrive within ``header_timeout`` (32 s: k8s.io/apiserver's and
  controller-runtime's ``ReadHeaderTimeout``) of the connection (after its TLS handshake, itself bounded
  by the same figure, as Go's ``tlsHandshakeTimeout``) or of the first byte after the last answer;
  a client that trickles its headers (slow loris) is cut off there;
- the head is bounded in bytes as it arrives: a request line or one header field of at most
  ``max_line`` (8190 bytes), at most ``max_headers`` fields (aiohttp's parser: ``400`` past either),
  and at most ``max_head`` bytes in all (32 KiB unless a server needs more; counted by ``_Guarded``
  up to the blank line that ends the head: ``431`` and the connection closed past it), so a
  connection holds a few KiB of an unfinished head, never a MiB;
- an idle keep-alive connection is closed after ``idle_timeout`` (90 s: their ``IdleTimeout``);
- at most ``max_connections`` connections are open, and at most ``max_per_client`` from one client
  address: one more gets ``503`` with ``Retry-After`` and is closed before it is read;
- at most ``max_inflight`` requests are being handled (kube-apiserver's ``--max-requests-inflight``):
  one more gets ``429`` with ``Retry-After: 1``, as the API server answers; paths in ``long_running``
  (the dashboard's event stream) are not counted, as the API server does not count watches;
- a body is read whole before the handler runs (``_Held``, by ``Limits.bodies``, after the
  authentication, before a ``Work`` thread is taken), within ``body_timeout`` of the head
  (5 s on the webhook port, well inside the API server's 10 s webhook timeout; else ``408`` and the
  connection closed); above ``max_body`` it is ``413`` before it is read (by its Content-Length) or
  as it is read; its bytes count against the server's ``body_budget`` from their arrival until the
  answer (all bodies being read or held together: past it ``503`` with ``Retry-After: 1``), so memory
  is bounded by bytes, not by how many requests or threads wait;
- a handler gets ``request_timeout`` (kube-apiserver's ``--request-timeout``, 60 s, unless a server
  needs less), then ``504``.

``Work`` moves CPU-heavy handling (a large JSON parse, a conversion of many objects) to a few threads;
a request takes a thread only once its body is all read, so slow senders never hold one, and at most
as many bodies are worked on as there are threads, so one request never stalls the loop
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
BODY_TIMEOUT = 10.0  # a whole body, from its head: no caller of ours sends one slower
MAX_INFLIGHT = 400  # kube-apiserver --max-requests-inflight default
MIB = 1 << 20
KIB = 1 << 10
MAX_LINE = 8190  # a request line, or one header field: aiohttp's default, nginx's 8 KiB buffer
MAX_HEADERS = 100  # header fields in one head (Go has no count, only MaxHeaderBytes)
MAX_HEAD = 32 * KIB  # a whole head: ours carry a bearer token at most (Go's MaxHeaderBytes is 1 MiB)


@dataclass(frozen=True)
class Bounds:
    """What one server accepts; see the module's docstring for each figure's meaning."""

    name: str
    max_body: int
    max_connections: int
    max_inflight: int
    max_per_client: int  # connections open from one client address
    body_budget: int  # bytes of request bodies read or held at once, all requests together
    header_timeout: float = HEADER_TIMEOUT
    idle_timeout: float = IDLE_TIMEOUT
    request_timeout: float | None = REQUEST_TIMEOUT
    body_timeout: float = BODY_TIMEOUT
    max_line: int = MAX_LINE
    max_headers: int = MAX_HEADERS
    max_head: int = MAX_HEAD
    long_running: frozenset[str] = frozenset()  # paths that stream: not in-flight, no request timeout

    def __post_init__(self) -> None:
        if self.body_budget < self.max_body:
            raise ValueError(f"{self.name}: a body budget of {self.body_budget} bytes holds no body of max_body")


# controller-runtime's admission limit (pkg/webhook/admission/http.go, maxRequestSize = 7 MiB: the old
# and the new object of at most 3 MB each, as etcd stores them, and 1 MB for the rest); the API server
# gives a webhook call at most 30 s (timeoutSeconds), so the handler gets no longer. Its body must
# arrive well within the API server's default timeoutSeconds (10 s): 5 s (7 MiB is 1.4 MB/s), and
# never behind a slow one (it is read before it waits for a worker thread). The API server is one
# address (a few, with replicas) and opens a connection per concurrent call: half the connections.
WEBHOOKS = Bounds("webhooks", max_body=7 * MIB, max_connections=1024, max_inflight=MAX_INFLIGHT,
                  max_per_client=512, body_budget=64 * MIB, request_timeout=30.0, body_timeout=5.0)
# the visibility API is read-only (GET): no body worth having; the aggregator and kubectl are its
# callers, the aggregator with one X-Remote-Group header per group of the user (so more headers)
VISIBILITY = Bounds("visibility", max_body=1 * MIB, max_connections=1024, max_inflight=MAX_INFLIGHT,
                    max_per_client=512, body_budget=8 * MIB, max_headers=256, max_head=64 * KIB)
# one scraper (or a few) every interval
METRICS = Bounds("metrics", max_body=64 * KIB, max_connections=64, max_inflight=32, max_per_client=16,
                 body_budget=1 * MIB)
# the kubelet, a probe or two at a time: a short head timeout frees a slot a stray client holds
PROBES = Bounds("health", max_body=64 * KIB, max_connections=128, max_inflight=64, max_per_client=32,
                body_budget=1 * MIB, header_timeout=10.0, max_head=16 * KIB)
# people's browsers: pages, the what-if form (its own 2 MiB cap), and one event stream per open page;
# a browser's cookies make the largest heads; kubectl port-forward makes every user one address
DASHBOARD = Bounds("dashboard", max_body=2 * MIB, max_connections=256, max_inflight=64, max_per_client=64,
                   body_budget=16 * MIB, body_timeout=30.0, max_head=64 * KIB, long_running=frozenset({"/events"}))


def _refusal(status: str, message: str, retry: bool) -> bytes:
    """A whole HTTP/1.1 answer written straight to a connection about to be closed."""
    body = message.encode() + b"\n"
    return (f"HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\n"
            + ("Retry-After: 1\r\n" if retry else "")
            + f"Connection: close\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body


_REFUSAL = _refusal("503 Service Unavailable", "too many connections", retry=True)
_HEAD_TOO_LARGE = _refusal("431 Request Header Fields Too Large", "request head too large", retry=False)


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
    """One server's counters, and the middlewares that apply its request bounds: ``middleware``
    outermost (so a refused request costs no authentication review), ``bodies`` innermost (so only a
    caller let in has its body read and held); ``application`` puts them there."""

    def __init__(self, bounds: Bounds) -> None:
        self.bounds = bounds
        self.connections = 0
        self.inflight = 0
        self.body_bytes = 0  # of the bodies being read or held, against bounds.body_budget
        self.refused = 0  # connections turned away at a cap
        self.clients: dict[str, int] = {}  # client address -> its open connections
        self._guards: dict[Any, _Guarded] = {}  # transport -> its connection's guard

    def application(self, *middlewares: Any) -> web.Application:
        """An application behind ``middleware`` (outermost), then ``middlewares`` (authentication), then
        ``bodies`` (innermost: a caller's body is read only once it is let in)."""
        return web.Application(client_max_size=self.bounds.max_body,
                               middlewares=[self.middleware, *middlewares, self.bodies])

    @web.middleware
    async def middleware(self, request: web.Request,
                         handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
        guard = self._guards.get(request.transport)
        if guard is not None:
            guard.request_started()
        response: web.StreamResponse | None = None
        try:
            response = await self._bounded(request, handler)
            return response
        except web.HTTPException as exc:  # an answer too (an authentication's refusal)
            response = exc
            raise
        finally:
            # answered before its body was read (refused, or not let in): the connection is closed after
            # the answer, and what follows is the rest of that body, no head (never read nor counted)
            unread = request.body_exists and not request.content.is_eof()
            if unread and response is not None and not response.prepared:
                response.force_close()
            if guard is not None:
                guard.request_done(closing=unread or (response is not None and response.keep_alive is False))

    @web.middleware
    async def bodies(self, request: web.Request,
                     handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
        """The body read whole (``_Held``) before the handler runs; innermost, after authentication."""
        if not request.body_exists or request.path in self.bounds.long_running:
            return await handler(request)
        held = _Held(self)
        try:
            refusal = await held.read(request)
            if refusal is not None:
                return refusal
            return await handler(request)
        finally:
            held.release()

    async def _bounded(self, request: web.Request,
                       handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
        bounds = self.bounds
        if request.content_length is not None and request.content_length > bounds.max_body:
            return _closing(413, f"request body of {request.content_length} bytes: at most {bounds.max_body} "
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
        client = _client(transport)
        if self.connections >= self.bounds.max_connections:
            self._refuse("connection refused: too many open", client)
            return False
        if self.clients.get(client, 0) >= self.bounds.max_per_client:
            self._refuse("connection refused: too many open from one address", client)
            return False
        self.connections += 1
        self.clients[client] = self.clients.get(client, 0) + 1
        self._guards[transport] = guard
        guard.client = client
        return True

    def _refuse(self, message: str, client: str) -> None:
        self.refused += 1
        if self.refused == 1 or self.refused % 100 == 0:
            log.warning(message, extra={"fields": {"server": self.bounds.name, "open": self.connections,
                                                   "client": client, "fromClient": self.clients.get(client, 0),
                                                   "refused": self.refused}})

    def release(self, guard: _Guarded, transport: Any) -> None:
        self.connections -= 1
        left = self.clients.get(guard.client, 0) - 1
        if left > 0:
            self.clients[guard.client] = left
        else:
            self.clients.pop(guard.client, None)
        self._guards.pop(transport, None)


def _client(transport: Any) -> str:
    """The address a connection comes from (its host, without the port)."""
    peer = transport.get_extra_info("peername")
    if isinstance(peer, tuple) and peer:
        return str(peer[0])
    return str(peer or "")


class _Held:
    """One request's body: read whole, within ``body_timeout`` (from when the caller is let in: its head
    has arrived and the authentication passed) and ``max_body``, its bytes
    counted against the server's ``body_budget`` from their arrival until the request is answered.

    The body is read before the handler runs (so before a ``Work`` thread is taken: a slow body holds
    no worker), and handed to it as ``request.read()`` (and ``post()``, for a form) would have read it."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.taken = 0

    async def read(self, request: web.Request) -> web.Response | None:
        limits, bounds = self.limits, self.limits.bounds
        chunks: list[bytes] = []
        size = 0
        deadline = asyncio.timeout(bounds.body_timeout)
        try:
            async with deadline:
                while chunk := await request.content.readany():
                    size += len(chunk)
                    if size > bounds.max_body:
                        return _closing(413, f"request body above {bounds.max_body} bytes: at most that is "
                                             "accepted")
                    if limits.body_bytes + len(chunk) > bounds.body_budget:
                        log.warning("request refused: too many body bytes held", extra={"fields": {
                            "server": bounds.name, "held": limits.body_bytes, "budget": bounds.body_budget}})
                        return _closing(503, "too many request bodies in flight, please try again later.",
                                        {"Retry-After": "1"})
                    limits.body_bytes += len(chunk)
                    self.taken += len(chunk)
                    chunks.append(chunk)
        except TimeoutError:
            if not deadline.expired():
                raise
            log.info("request body not received in time", extra={"fields": {
                "server": bounds.name, "path": request.path, "seconds": bounds.body_timeout, "bytes": size}})
            return _closing(408, f"request body not received within {bounds.body_timeout:g}s")
        except ConnectionError:  # the client left mid-body: nobody to answer, nothing to log but this
            log.debug("request body cut off by the client", extra={"fields": {
                "server": bounds.name, "path": request.path, "bytes": size}})
            return _closing(400, "request body cut off")
        body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        del chunks
        # what BaseRequest.read() keeps the body in once it has read it: read(), text(), json() and
        # post() (of a urlencoded form) answer from it
        request._read_bytes = body
        return None

    def release(self) -> None:
        self.limits.body_bytes -= self.taken
        self.taken = 0


def _text(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(status=status, text=message + "\n", headers=headers)


def _closing(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    """An answer before (all of) the body was read: the connection is closed after it, the rest of the
    body never read."""
    response = _text(status, message, headers)
    response.force_close()
    return response


class _Guarded(asyncio.Protocol):
    """aiohttp's protocol for one connection, behind the connection caps, the header timeout and the
    head's size.

    The head timer runs from the connection (or from the first byte after an answer) until the
    request reaches ``Limits.middleware``, which aiohttp calls once the whole head is parsed. Until
    the blank line that ends the head, its bytes are counted: past ``max_head`` the connection gets
    ``431`` and is closed (aiohttp bounds one line and the count of fields, not their sum)."""

    def __init__(self, inner: asyncio.Protocol, limits: Limits) -> None:
        self.inner = inner
        self.limits = limits
        self.transport: Any = None
        self.client = ""
        self.admitted = False
        self.cut = False  # its head was refused: nothing more is read
        self.idle = False
        self._timer: asyncio.TimerHandle | None = None
        self._head: int | None = None  # bytes of the head so far, None once it ended
        self._tail = b""  # the last bytes of the head so far, for an end split across reads

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
        self._head, self._tail = 0, b""
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
        self._head = None

    def request_done(self, closing: bool = False) -> None:
        """The answer is ready; unless it closes the connection (what follows is the rest of a body
        never read, no head), the next byte begins the next request."""
        self.idle = not closing

    def _head_fits(self, data: bytes) -> bool:
        """Count ``data`` into the head until its end (CRLF CRLF, or a bare LF LF); False past max_head."""
        window = self._tail + data
        ends = [i + len(mark) for mark in (b"\r\n\r\n", b"\n\n") if (i := window.find(mark)) >= 0]
        assert self._head is not None
        if ends:
            self._head += min(ends) - len(self._tail)
            self._head, fits = None, self._head <= self.limits.bounds.max_head
            return fits
        self._head += len(data)
        self._tail = window[-3:]
        return self._head <= self.limits.bounds.max_head

    def data_received(self, data: bytes) -> None:
        if not self.admitted:
            return
        if self.idle:  # the next request begins: its head is timed and counted
            self._arm()
        if self.cut:
            return
        if self._head is not None and not self._head_fits(data):
            self._refuse_head()
            return
        self.inner.data_received(data)

    def _refuse_head(self) -> None:
        """A head past ``max_head``: 431, and the connection closed; aiohttp sees none of what passed it."""
        log.debug("request head too large", extra={"fields": {
            "server": self.limits.bounds.name, "bytes": self.limits.bounds.max_head}})
        self.cut = True
        self._disarm()
        self.transport.write(_HEAD_TOO_LARGE)
        self.transport.close()

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
            self.limits.release(self, self.transport)
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
                                    keepalive_timeout=bounds.idle_timeout, shutdown_timeout=self.shutdown_timeout,
                                    max_line_size=bounds.max_line, max_field_size=bounds.max_line,
                                    max_headers=bounds.max_headers)
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
    """A few threads for request work too heavy for the event loop. A request's input is read first
    (``read``: for a request body, ``Limits`` has read it already, within the server's body deadline
    and byte budget), and only then does the request wait for a thread: a slow sender never holds
    one, and at most ``workers`` inputs are worked on at once, however many requests wait. A request
    whose caller gave up (its timeout) keeps its thread until the work ends, so the bound holds."""

    def __init__(self, workers: int, name: str) -> None:
        self.workers = workers
        self._executor = ThreadPoolExecutor(workers, thread_name_prefix=name)
        self._slots: asyncio.Semaphore | None = None

    async def run(self, read: Callable[[], Awaitable[I]], work: Callable[[I], T]) -> T:
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.workers)
        slots = self._slots
        value = await read()
        await slots.acquire()
        try:
            job = asyncio.get_running_loop().run_in_executor(self._executor, _without_collector, work, value)
        except BaseException:
            slots.release()
            raise
        del value
        job.add_done_callback(lambda _: slots.release())
        return await asyncio.shield(job)

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
