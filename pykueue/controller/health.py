"""Plain HTTP endpoints of the controller process: `/metrics`, `/healthz` and `/readyz`.

Served by aiohttp on the controller's own asyncio loop: an answer to `/healthz` proves that loop is
turning (a wedged loop answers nothing, so the kubelet restarts the pod), and `/metrics` can read the
engine without a lock. Addresses are controller-runtime's: `:8080` every interface, `HOST:PORT`,
`[::1]:PORT`, and `0` for off.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from aiohttp import web

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
                 routes: dict[str, Callable[[], tuple[int, bytes, str]]]) -> None:
        self.name = name
        self.bind = parse_bind(address)
        self.routes = routes
        self.runner: web.AppRunner | None = None

    async def start(self) -> None:
        """Listen, or do nothing when the address is 0; a port in use fails here, at start-up."""
        if self.bind is None:
            return
        app = web.Application()
        for path, handler in self.routes.items():
            app.router.add_get(path, self._wrap(handler))
        self.runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self.runner.setup()
        host, port = self.bind
        site = web.TCPSite(self.runner, host, port, reuse_address=True)
        await site.start()
        log.info("serving", extra={"fields": {"server": self.name, "address": f"{host or ''}:{port}",
                                              "paths": ",".join(self.routes)}})

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()
            self.runner = None

    @staticmethod
    def _wrap(handler: Callable[[], tuple[int, bytes, str]]):
        async def handle(request: web.Request) -> web.Response:
            status, body, content_type = handler()
            return web.Response(status=status, body=body, headers={"Content-Type": content_type})
        return handle


class Probes:
    """`/healthz` answers while the loop turns; `/readyz` asks `ready`, which the command sets to what
    readiness means in its mode (informers synced; or, for a standby replica, the lease observed)."""

    def __init__(self) -> None:
        self.ready: Callable[[], bool] = lambda: False

    def healthz(self) -> tuple[int, bytes, str]:
        return 200, b"ok", "text/plain; charset=utf-8"

    def readyz(self) -> tuple[int, bytes, str]:
        if self.ready():
            return 200, b"ok", "text/plain; charset=utf-8"
        return 503, b"not ready", "text/plain; charset=utf-8"
