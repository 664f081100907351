"""The bounds every server has (``pykueue.controller.serving.limits``), against the real aiohttp servers on
loopback: the webhook server's body cap and conversion cap, its work off the event loop (the probe port
answers while a big conversion runs), the header timeout, the connection and in-flight caps, and
renegotiation off on every TLS context."""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import logging
import ssl
import threading
import time
import tracemalloc
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from aiohttp import web

from pykueue.controller.observe.health import Probes, SecureServing, Server
from pykueue.controller.serving import limits as serving
from pykueue.controller.webhooks import conversion, names
from pykueue.controller.webhooks.server import INTERNAL_ERROR, Options, WebhookServer
from tests.controller.fakes import NoCluster, until

V1BETA1 = "kueue.x-k8s.io/v1beta1"


def _workload(i: int, padding: int = 0) -> dict[str, Any]:
    return {"apiVersion": V1BETA1, "kind": "Workload",
            "metadata": {"name": f"job-{i}", "namespace": "team-a", "annotations": {"note": "x" * padding}},
            "spec": {"queueName": "user-queue", "priorityClassName": "high",
                     "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": [
                         {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}]}}


def _conversion_review(objects: list[dict[str, Any]]) -> bytes:
    return orjson.dumps({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "request": {
        "uid": "u1", "desiredAPIVersion": "kueue.x-k8s.io/v1beta2", "objects": objects}})


class _Webhooks:
    """A WebhookServer on loopback with certificates in ``tmp``, and a client context trusting them."""

    def __init__(self, tmp: Path) -> None:
        self.server = WebhookServer(NoCluster(), Options(port=0, host="127.0.0.1", cert_dir=tmp / "serving"))  # type: ignore[arg-type]
        self.tmp = tmp

    async def __aenter__(self) -> _Webhooks:
        await self.server.start()
        self.client = ssl.create_default_context(cafile=str(self.tmp / "serving" / "ca.crt"))
        self.url = f"https://127.0.0.1:{self.server.port}"
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.server.stop()


async def _status_line(reader: asyncio.StreamReader) -> bytes:
    return await asyncio.wait_for(reader.readline(), 10)


def test_an_admission_review_above_seven_mib_is_413_before_its_body_is_read(tmp_path: Path) -> None:
    """Content-Length 8 MiB, no body sent: the answer comes at once (the server did not wait to read)."""
    async def scenario() -> bytes:
        async with _Webhooks(tmp_path) as hooks:
            reader, writer = await asyncio.open_connection("127.0.0.1", hooks.server.port, ssl=hooks.client,
                                                           server_hostname="127.0.0.1")
            writer.write(f"POST {names.VALIDATING[0].path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         f"Content-Length: {8 << 20}\r\n\r\n".encode())
            try:
                return await _status_line(reader)
            finally:
                writer.close()
    assert asyncio.run(scenario()).startswith(b"HTTP/1.1 413")


def test_a_chunked_body_above_seven_mib_is_413_and_never_held_whole(tmp_path: Path) -> None:
    """Without a Content-Length the cap applies as the body is read: an 8 MiB ConversionReview (valid
    JSON, so with the old 64 MiB cap it was read, parsed and converted) is refused, and the process's
    Python memory peaks at less than twice the cap (the body is never all held, nor parsed)."""
    body = _conversion_review([_workload(i, padding=1200) for i in range(6000)])
    assert len(body) > 8 << 20

    async def chunks() -> AsyncIterator[bytes]:
        for start in range(0, len(body), 1 << 16):
            yield body[start:start + (1 << 16)]

    async def scenario() -> tuple[int, int]:
        async with _Webhooks(tmp_path) as hooks, aiohttp.ClientSession() as session:
            tracemalloc.start()
            try:
                async with session.post(hooks.url + names.CONVERT_PATH, data=chunks(), ssl=hooks.client,
                                        headers={"Content-Type": "application/json"}) as r:
                    status = r.status
                return status, tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()

    status, peak = asyncio.run(scenario())
    assert status == 413
    assert peak < 14 << 20, f"peak {peak / 2 ** 20:.1f} MiB"


def test_a_conversion_review_of_too_many_objects_is_refused_with_the_limit_in_its_message(tmp_path: Path) -> None:
    tiny = {"apiVersion": V1BETA1, "kind": "Workload", "metadata": {"name": "a"}}

    async def scenario() -> tuple[dict[str, Any], dict[str, Any]]:
        async with _Webhooks(tmp_path) as hooks, aiohttp.ClientSession() as session:
            answers = []
            for count in (conversion.MAX_OBJECTS, conversion.MAX_OBJECTS + 1):
                async with session.post(hooks.url + names.CONVERT_PATH, data=_conversion_review([tiny] * count),
                                        ssl=hooks.client, headers={"Content-Type": "application/json"}) as r:
                    assert r.status == 200
                    answers.append((await r.json())["response"])
            return answers[0], answers[1]

    allowed, refused = asyncio.run(scenario())
    assert allowed["result"] == {"status": "Success"} and len(allowed["convertedObjects"]) == conversion.MAX_OBJECTS
    assert refused["uid"] == "u1" and "convertedObjects" not in refused
    assert refused["result"] == {"status": "Failure", "message": (
        f"a ConversionReview of {conversion.MAX_OBJECTS + 1} objects: at most {conversion.MAX_OBJECTS} are "
        "converted per request (list in pages, e.g. kubectl --chunk-size)")}


def test_the_probe_port_answers_within_a_second_while_a_big_conversion_is_handled(tmp_path: Path) -> None:
    """A ConversionReview at the object cap (5000 objects of 20 conditions each, ~5 MiB: on the event
    loop its parse and conversion stalled it for 1.2 to 3 s here) runs on a worker thread; /healthz, on
    the same loop as the controller's lease renewal, keeps answering meanwhile."""
    objects = [_workload(i) for i in range(conversion.MAX_OBJECTS)]
    for obj in objects:  # many small values: the conversion's deep copy is the long part
        obj["status"] = {"conditions": [{"type": f"Check{j}", "status": "True"} for j in range(20)]}
    body = _conversion_review(objects)
    assert 4 << 20 < len(body) < 7 << 20

    def poll(port: int, stop: threading.Event) -> tuple[float, int]:
        """/healthz from a thread of its own, so a stalled server loop shows as a slow answer."""
        slowest, answered = 0.0, 0
        while not stop.is_set():
            started = time.perf_counter()
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=30) as r:
                assert r.status == 200
            slowest, answered = max(slowest, time.perf_counter() - started), answered + 1
            stop.wait(0.01)
        return slowest, answered

    async def scenario() -> tuple[float, int, float, dict[str, Any]]:
        probes = Server("health", "127.0.0.1:0", {"/healthz": Probes().healthz}, bounds=serving.PROBES)
        await probes.start()
        stop = threading.Event()
        poller = asyncio.create_task(asyncio.to_thread(poll, probes.port, stop))
        try:
            async with _Webhooks(tmp_path) as hooks, aiohttp.ClientSession() as session:
                started = time.perf_counter()
                async with session.post(hooks.url + names.CONVERT_PATH, data=body, ssl=hooks.client,
                                        headers={"Content-Type": "application/json"}) as r:
                    response = (await r.json())["response"]
                took = time.perf_counter() - started
        finally:
            stop.set()
            slowest, answered = await poller
            await probes.stop()
        return slowest, answered, took, response

    slowest, answered, took, response = asyncio.run(scenario())
    assert response["result"] == {"status": "Success"}
    assert len(response["convertedObjects"]) == conversion.MAX_OBJECTS
    assert answered >= 3  # the probe really ran beside the conversion
    # On a quiet machine within a second; on a loaded one the worker thread's share of the GIL slows
    # every answer, but a conversion on the loop would hold one probe for (nearly) all of its time.
    assert slowest < max(1.0, took / 3), f"/healthz took {slowest:.2f}s of a {took:.2f}s conversion"


def _probe_server(**bounds: Any) -> Server:
    return Server("health", "127.0.0.1:0", {"/healthz": Probes().healthz},
                  bounds=dataclasses.replace(serving.PROBES, **bounds))


async def _closed(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, trickle: bytes, deadline: float) -> float:
    """Send ``trickle`` a byte at a time (every 50 ms) until the server closes; the seconds it took."""
    started = time.monotonic()
    for byte in (trickle[i:i + 1] for i in range(len(trickle))):
        if reader.at_eof() or time.monotonic() - started > deadline:
            break
        try:
            writer.write(byte)
            await writer.drain()
        except ConnectionError:
            break
        try:
            if await asyncio.wait_for(reader.read(1), 0.05) == b"":
                break
        except TimeoutError:
            pass
    return time.monotonic() - started


def test_a_client_that_trickles_its_headers_is_cut_off_at_the_header_timeout() -> None:
    """Slow loris: a byte every 50 ms never finishes the head. The connection is closed after the
    header timeout (1 s here, 10 s on the probe port), on a first request and on one that follows a
    whole request on the same keep-alive connection; an idle keep-alive connection outlives it."""
    head = b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + b"X-Slow: " + b"a" * 400

    async def scenario() -> tuple[float, float, bytes]:
        server = _probe_server(header_timeout=1.0)
        await server.start()
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            first = await _closed(reader, writer, head, deadline=15)
            writer.close()
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            assert (await _status_line(reader)).startswith(b"HTTP/1.1 200")
            await reader.readuntil(b"ok")
            await asyncio.sleep(1.5)  # idle longer than the header timeout: still open (idle is 90 s)
            writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            again = await _status_line(reader)
            await reader.readuntil(b"ok")
            second = await _closed(reader, writer, head, deadline=15)
            writer.close()
            return first, second, again
        finally:
            await server.stop()

    first, second, again = asyncio.run(scenario())
    assert again.startswith(b"HTTP/1.1 200")
    assert 0.9 <= first < 10, first
    assert 0.9 <= second < 10, second


def test_connections_above_the_cap_get_503_and_are_closed_until_one_ends() -> None:
    async def scenario() -> None:
        server = _probe_server(max_connections=2)
        await server.start()
        try:
            held = [await asyncio.open_connection("127.0.0.1", server.port) for _ in range(2)]
            await until(lambda: server.limits.connections == 2)
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            refusal = await asyncio.wait_for(reader.read(), 10)  # everything, then the close
            assert refusal.startswith(b"HTTP/1.1 503") and b"Retry-After: 1" in refusal, refusal
            writer.close()
            assert server.limits.refused == 1
            held[0][1].close()
            await until(lambda: server.limits.connections == 1)
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            assert (await _status_line(reader)).startswith(b"HTTP/1.1 200")
            writer.close()
            held[1][1].close()
        finally:
            await server.stop()

    asyncio.run(scenario())


def test_requests_above_the_in_flight_cap_get_429_and_slow_ones_504() -> None:
    """The second concurrent request on a server that allows one is 429 with Retry-After, as the API
    server's max-in-flight filter answers; a handler past the request timeout is 504; a long-running
    path (a stream) is neither counted nor timed."""
    async def scenario() -> None:
        limits = serving.Limits(dataclasses.replace(serving.DASHBOARD, max_inflight=1, request_timeout=0.5,
                                                    long_running=frozenset({"/stream"})))
        release = asyncio.Event()

        async def wait(_: web.Request) -> web.Response:
            await release.wait()
            return web.Response(text="done")

        app = limits.application()
        app.router.add_get("/wait", wait)
        app.router.add_get("/stream", wait)
        listener = serving.Listener(app, limits, "127.0.0.1", 0)
        await listener.start()
        base = f"http://127.0.0.1:{listener.port}"
        try:
            async with aiohttp.ClientSession() as session:
                async def get(path: str) -> tuple[int, str, str]:
                    async with session.get(base + path) as r:
                        return r.status, r.headers.get("Retry-After", ""), await r.text()

                first = asyncio.create_task(get("/wait"))
                await until(lambda: limits.inflight == 1)
                stream = asyncio.create_task(get("/stream"))
                assert await get("/wait") == (429, "1", "Too many requests, please try again later.\n")
                assert (await first)[0] == 504  # nobody released it within 0.5 s
                await asyncio.sleep(0.6)
                assert not stream.done()  # not timed
                release.set()
                assert (await stream)[0] == 200
        finally:
            await listener.stop()

    asyncio.run(scenario())


def test_every_tls_context_refuses_renegotiation(tmp_path: Path) -> None:
    assert serving.server_context().options & ssl.OP_NO_RENEGOTIATION
    metrics = SecureServing.self_signed(None)
    try:
        assert metrics.context.options & ssl.OP_NO_RENEGOTIATION
        assert serving.context_like(metrics.context).options & ssl.OP_NO_RENEGOTIATION
    finally:
        metrics.close()

    async def scenario() -> None:
        async with _Webhooks(tmp_path) as hooks:
            assert hooks.server.context is not None and hooks.server.context.options & ssl.OP_NO_RENEGOTIATION

    asyncio.run(scenario())


def test_each_server_keeps_to_the_upstream_anchors() -> None:
    assert (serving.WEBHOOKS.max_body, serving.WEBHOOKS.request_timeout) == (7 << 20, 30.0)
    for bounds in (serving.WEBHOOKS, serving.VISIBILITY, serving.METRICS, serving.PROBES, serving.DASHBOARD):
        assert bounds.header_timeout <= 32 and bounds.idle_timeout == 90
        assert bounds.max_inflight <= serving.MAX_INFLIGHT and bounds.max_connections <= 1024


def test_a_failing_admission_handler_answers_a_fixed_message_and_logs_the_error(tmp_path: Path, caplog) -> None:
    """A ClusterQueue whose metadata is not an object makes the validator raise: the API client gets
    500 with a fixed message (no exception text, which may hold internals), the log has the error."""
    review = orjson.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "u2", "operation": "CREATE",
        "object": {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": 5}}})
    path = next(h.path for h in names.VALIDATING if h.kind == "ClusterQueue")

    async def scenario() -> dict[str, Any]:
        async with _Webhooks(tmp_path) as hooks, aiohttp.ClientSession() as session, session.post(
                hooks.url + path, data=review, ssl=hooks.client, headers={"Content-Type": "application/json"}) as r:
            return (await r.json())["response"]

    with caplog.at_level(logging.ERROR, logger="pykueue.webhooks"):
        response = asyncio.run(scenario())
    assert response == {"uid": "u2", "allowed": False, "status": {
        "code": 500, "reason": response["status"]["reason"], "message": INTERNAL_ERROR}}
    assert "attribute" not in response["status"]["message"]  # the exception's text stays in the log
    [record] = caplog.records
    assert record.getMessage() == "webhook failed" and "has no attribute" in record.fields["error"]


def test_the_collector_pause_cannot_be_held_open_by_a_stream_of_large_reviews(monkeypatch) -> None:
    """Work on a large input holds the cyclic collector off; new work joins a pause only in its first
    5 s, and after it the collector stays on as long as the pause lasted (so at least half the time)."""
    clock = [0.0]
    pause = serving._CollectorPause(lambda: clock[0])
    gc.enable()  # the state this test starts from, whatever the tests before it left
    try:
        assert pause.acquire() and not gc.isenabled()
        clock[0] = 4.0
        assert pause.acquire()  # joins the running pause
        clock[0] = 6.0
        assert not pause.acquire()  # past the limit: runs with the collector on... once it is on again
        pause.release()
        assert not gc.isenabled()
        clock[0] = 8.0
        pause.release()
        assert gc.isenabled()
        clock[0] = 15.0
        assert not pause.acquire()  # 8 s paused: on until 16 s
        clock[0] = 16.0
        assert pause.acquire() and not gc.isenabled()
        pause.release()
    finally:
        gc.enable()
    assert gc.isenabled()
    monkeypatch.setattr(serving, "_COLLECTOR_PAUSE", serving._CollectorPause())  # none paused before
    small = serving._without_collector(lambda raw: gc.isenabled(), b"{}")
    large = serving._without_collector(lambda raw: gc.isenabled(), b" " * serving.COLLECTOR_PAUSE_BYTES)
    assert (small, large) == (True, False) and gc.isenabled()


# ---- bodies: read whole, within a deadline and a byte budget, before a worker is taken ------------

def _admission_review(uid: str) -> bytes:
    return orjson.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": uid, "operation": "CREATE", "object": {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "f"}}}})


async def _trickle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, head: bytes, every: float,
                   limit: float) -> tuple[bytes, float]:
    """Send ``head``, then a body byte every ``every`` seconds until the server answers (its status
    line, and the seconds it took) or ``limit`` passes (b"", limit)."""
    started = time.monotonic()
    writer.write(head)
    answer = asyncio.ensure_future(reader.readline())
    try:
        while time.monotonic() - started < limit:
            done, _ = await asyncio.wait({answer}, timeout=every)
            if done:
                return answer.result(), time.monotonic() - started
            try:
                writer.write(b" ")
                await writer.drain()
            except ConnectionError:
                break
        done, _ = await asyncio.wait({answer}, timeout=1)
        return (answer.result() if done else b""), time.monotonic() - started
    finally:
        answer.cancel()
        writer.close()


def test_a_review_is_answered_at_once_behind_as_many_slow_bodies_as_there_are_workers(tmp_path: Path) -> None:
    """Two (the webhook server's worker threads) connections trickle their bodies, a byte every
    0.1 s: a normal review sent meanwhile is answered at once (it took 29 s when a request took its
    worker before reading its body: the API server gives up at 10 s), and the slow ones get 408 at the
    body deadline (5 s), their bytes given back."""
    path = next(h.path for h in names.VALIDATING if h.kind == "ResourceFlavor")

    async def scenario() -> tuple[float, dict[str, Any], list[tuple[bytes, float]], int]:
        async with _Webhooks(tmp_path) as hooks, aiohttp.ClientSession() as session:
            slow = []
            for _ in range(hooks.server.work.workers):
                reader, writer = await asyncio.open_connection("127.0.0.1", hooks.server.port, ssl=hooks.client,
                                                               server_hostname="127.0.0.1")
                head = (f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                        f"Content-Length: {1 << 20}\r\n\r\n").encode()
                slow.append(asyncio.create_task(_trickle(reader, writer, head, every=0.1, limit=15)))
            await until(lambda: hooks.server.limits.body_bytes >= 2 * hooks.server.work.workers)
            started = time.perf_counter()
            async with session.post(hooks.url + path, data=_admission_review("fast"), ssl=hooks.client,
                                    headers={"Content-Type": "application/json"},
                                    timeout=aiohttp.ClientTimeout(total=20)) as r:
                assert r.status == 200
                response = (await r.json())["response"]
            took = time.perf_counter() - started
            answers = [await task for task in slow]
            return took, response, answers, hooks.server.limits.body_bytes

    took, response, answers, held = asyncio.run(scenario())
    assert response["uid"] == "fast" and response["allowed"] is True
    assert took < 2.0, f"the review took {took:.2f}s behind two slow bodies"
    for status, seconds in answers:
        assert status.startswith(b"HTTP/1.1 408"), status
        assert serving.WEBHOOKS.body_timeout - 0.5 <= seconds < serving.WEBHOOKS.body_timeout + 5, seconds
    assert held == 0


def _echo_listener(**bounds: Any) -> tuple[serving.Limits, serving.Listener]:
    """A plain-HTTP listener whose POST /echo answers the length of the body it read."""
    limits = serving.Limits(dataclasses.replace(serving.DASHBOARD, **bounds))

    async def echo(request: web.Request) -> web.Response:
        return web.Response(text=str(len(await request.read())))

    app = limits.application()
    app.router.add_post("/echo", echo)
    return limits, serving.Listener(app, limits, "127.0.0.1", 0)


def test_a_body_past_its_deadline_is_408_and_bodies_past_the_budget_are_503_and_their_bytes_given_back() -> None:
    async def scenario() -> None:
        limits, listener = _echo_listener(body_timeout=0.5, max_body=64 * 1024, body_budget=96 * 1024)
        await listener.start()
        base = f"http://127.0.0.1:{listener.port}"
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", listener.port)
            head = b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n"
            status, seconds = await _trickle(reader, writer, head, every=0.05, limit=5)
            assert status.startswith(b"HTTP/1.1 408") and 0.4 <= seconds < 3, (status, seconds)
            await until(lambda: limits.body_bytes == 0 and limits.inflight == 0)

            # 60 KiB held by a body not finished: the next 60 KiB do not fit in 96 KiB
            reader, writer = await asyncio.open_connection("127.0.0.1", listener.port)
            writer.write(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 65536\r\n\r\n" + b"a" * 61440)
            await until(lambda: limits.body_bytes == 61440)
            async with aiohttp.ClientSession() as session:
                async with session.post(base + "/echo", data=b"b" * 61440) as r:
                    assert (r.status, r.headers.get("Retry-After")) == (503, "1"), r.status
                await until(lambda: limits.body_bytes == 61440)  # the refused one's bytes given back
                writer.write(b"a" * 4096)  # the first one ends: answered, and its bytes given back
                assert (await _status_line(reader)).startswith(b"HTTP/1.1 200")
                await until(lambda: limits.body_bytes == 0)
                async with session.post(base + "/echo", data=b"b" * 61440) as r:
                    assert (r.status, await r.text()) == (200, "61440")
            writer.close()
        finally:
            await listener.stop()

    asyncio.run(scenario())


# ---- heads: bounded per line, per count, in total; connections per client address ----------------

HEAD_BOUNDS = {"max_line": 1024, "max_headers": 20, "max_head": 4096, "max_per_client": 20,
               "max_connections": 1024, "header_timeout": 20.0}


async def _open(port: int, source: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))


async def _answer_to(port: int, source: str, head: bytes, timeout: float = 5) -> bytes:
    """The status line answering ``head`` (which may be unfinished), sent from ``source``; b"" if
    the server closed without one."""
    reader, writer = await _open(port, source)
    try:
        writer.write(head)
        return await asyncio.wait_for(reader.readline(), timeout)
    except ConnectionError:
        return b""
    finally:
        writer.close()


def test_six_hundred_half_sent_heads_are_cut_at_the_head_limit_and_the_per_client_cap() -> None:
    """300 connections from one address each hold an unfinished head of 1 KiB: 20 (the per-client
    cap) are kept, the others get 503 at once; 300 more from 15 other addresses each send 6 KiB of
    an unfinished head: each is cut at 4 KiB with 431. A normal request from yet another address is
    answered meanwhile; a header line past max_line, or too many fields, are refused before the rest
    is sent. (The test's loops are bounded: every read has a timeout, the whole within ~20 s.)"""
    line = b"X-Pad: " + b"p" * 490 + b"\r\n"
    held_head = b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + line * 2
    big_head = b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + line * 12

    async def scenario() -> None:
        server = _probe_server(**HEAD_BOUNDS)
        await server.start()
        port, limits = server.port, server.limits
        held: list[asyncio.StreamWriter] = []
        started = time.monotonic()
        try:
            refused = 0
            for _ in range(300):
                reader, writer = await _open(port, "127.0.0.1")
                held.append(writer)
                writer.write(held_head)
                if len(held) > HEAD_BOUNDS["max_per_client"]:
                    answer = await asyncio.wait_for(reader.read(), 5)  # the refusal, then the close
                    assert answer.startswith(b"HTTP/1.1 503") and b"Retry-After: 1" in answer, answer
                    refused += 1
            assert refused == 280
            assert limits.clients == {"127.0.0.1": 20} and limits.connections == 20

            sources = [f"127.0.0.{i}" for i in range(2, 17)]
            answers = await asyncio.gather(*(_answer_to(port, sources[i % 15], big_head) for i in range(300)))
            assert all(a.startswith(b"HTTP/1.1 431") for a in answers), {a for a in answers}
            await until(lambda: limits.connections == 20)  # the cut ones are gone, the held ones stay

            ok = await _answer_to(port, "127.0.0.100", b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            assert ok.startswith(b"HTTP/1.1 200"), ok
            full = await _answer_to(port, "127.0.0.1", b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            assert full.startswith(b"HTTP/1.1 503"), full  # that address is at its cap

            # one field past max_line (1 KiB), its line never ended; then 30 fields (max_headers 20)
            long_line = await _answer_to(port, "127.0.0.101", b"GET /healthz HTTP/1.1\r\nX-Long: " + b"l" * 2000)
            assert long_line.split(b" ")[1] in (b"400", b"431"), long_line  # aiohttp's parser: HTTP/1.0 400
            many = b"GET /healthz HTTP/1.1\r\n" + b"".join(f"X-{i}: v\r\n".encode() for i in range(30))
            too_many = await _answer_to(port, "127.0.0.102", many)
            assert too_many.split(b" ")[1] in (b"400", b"431"), too_many
        finally:
            for writer in held:
                writer.close()
            await server.stop()
        assert time.monotonic() - started < 20

    asyncio.run(scenario())


def test_each_server_bounds_its_heads_and_its_bodies_in_time_and_bytes() -> None:
    for bounds in (serving.WEBHOOKS, serving.VISIBILITY, serving.METRICS, serving.PROBES, serving.DASHBOARD):
        assert bounds.max_line <= 8190 and bounds.max_headers <= 256 and bounds.max_head <= 64 * 1024
        assert bounds.max_per_client < bounds.max_connections
        assert bounds.max_body <= bounds.body_budget <= 64 << 20
        assert bounds.body_timeout <= 30
    assert serving.WEBHOOKS.body_timeout <= 5  # well within the API server's default webhook timeout (10 s)


def test_a_caller_not_let_in_has_no_body_read_and_its_connection_closed_after_the_answer() -> None:
    """``Limits.bodies`` runs after the authentication: a refused caller's body (64 KiB, most of it
    sent before the answer) is never read nor counted in the budget, and the answer closes the
    connection: what follows is the rest of that body (aiohttp reads it away, for at most its
    lingering time, 10 s), not a head (no 431), and no request after it is answered."""
    async def scenario() -> None:
        @web.middleware
        async def refuse(request: web.Request, handler: Any) -> web.StreamResponse:
            raise web.HTTPUnauthorized(text="who are you\n")

        limits = serving.Limits(dataclasses.replace(serving.DASHBOARD, max_head=1024))
        app = limits.application(refuse)

        async def echo(request: web.Request) -> web.Response:
            return web.Response(text=str(len(await request.read())))

        app.router.add_post("/echo", echo)
        listener = serving.Listener(app, limits, "127.0.0.1", 0)
        await listener.start()
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", listener.port)
            writer.write(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 65536\r\n\r\n" + b"a" * 61440)
            await asyncio.sleep(0.2)  # answered by now; the rest of the body follows
            writer.write(b"a" * 4096 + b"GET /echo HTTP/1.1\r\nHost: x\r\n\r\n")
            answer = await asyncio.wait_for(reader.read(), 10)  # all of it, then the close
            writer.close()
            assert answer.startswith(b"HTTP/1.1 401") and answer.endswith(b"who are you\n"), answer
            assert b"431" not in answer and limits.body_bytes == 0
        finally:
            await listener.stop()

    asyncio.run(scenario())
