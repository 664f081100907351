"""The engine's answers off the event loop.

An answer (a workload's explain, the what-if box) converts every live object and plays one instant of
the simulation: seconds for a large cluster. When the controller serves the dashboard, its event loop
also renews the leader lease, answers admission webhooks and ``/healthz``, so the answers run in one
worker thread, at most ``waiting`` of them queued behind it: a request past that is refused at once,
and one that waits longer than ``timeout`` is answered 503 (the thread finishes its work and frees
its place; a thread cannot be stopped halfway).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from aiohttp import web

T = TypeVar("T")
TIMEOUT_SECONDS = 20.0
WAITING = 3  # answers queued behind the running one before more are refused


class Offload:
    """One worker thread for the engine, a bounded queue before it, a deadline per answer."""

    def __init__(self, timeout: float = TIMEOUT_SECONDS, waiting: int = WAITING) -> None:
        self.timeout = timeout
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dashboard-engine")
        self._places = asyncio.Semaphore(1 + waiting)

    async def run(self, work: Callable[[], T]) -> T:
        """``work()`` in the worker thread; 503 when the queue is full or the answer is late."""
        if self._places.locked():
            raise web.HTTPServiceUnavailable(text="the engine is busy answering other pages: try again shortly\n",
                                             headers={"Retry-After": "5"})
        await self._places.acquire()
        future = asyncio.get_running_loop().run_in_executor(self._pool, work)
        future.add_done_callback(self._done)
        try:
            return await asyncio.wait_for(asyncio.shield(future), self.timeout)
        except TimeoutError:
            raise web.HTTPServiceUnavailable(
                text=f"the engine did not answer within {self.timeout:g} s: try again shortly\n",
                headers={"Retry-After": "10"}) from None

    def _done(self, future: asyncio.Future[object]) -> None:
        """The thread is done (not before: its place is held while it works, answered or not)."""
        self._places.release()
        if not future.cancelled():
            future.exception()  # read, so a late failure nobody awaits is not logged as lost

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
