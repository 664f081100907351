"""The engine's answers outside the serving process's event loop and memory.

An answer (a workload's explain, the what-if box) converts every live object and plays one instant of
the simulation: seconds for a large cluster. When the controller serves the dashboard, its event loop
also renews the leader lease, answers admission webhooks and ``/healthz``. A worker thread is not
enough: it holds the GIL, and every time the loop thread gives the GIL up for a system call (each TLS
read and write) it waits up to the switch interval to get it back, so a burst of connections during
an answer stalled the loop for over a second. So the answers run in one worker process (spawned, not
forked: the serving process has threads), which also keeps a runaway answer's memory out of the
controller. At most ``waiting`` answers queue behind the running one: a request past that is refused
at once, one that waits longer than ``timeout`` is answered 503 (the worker finishes its work and
frees its place), and a worker that died is replaced. The worker's own memory is capped
(``MEMORY_LIMIT``, its data segment: ``RLIMIT_DATA``), so a runaway answer fails there with
``MemoryError`` (a 503) instead of growing the pod's cgroup until the kernel's out-of-memory killer
picks a process of it, possibly the controller (the worker shares its cgroup: a container cannot make
a child cgroup without privileges the chart does not grant). The worker's start (a new
interpreter importing the engine: seconds on a busy machine) is awaited before an answer's deadline
runs, and one worker serves the process (a test's many dashboards share it).
"""

from __future__ import annotations

import asyncio
import copyreg
import dataclasses
import multiprocessing
import resource
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from aiohttp import web

from pykueue.engine import model

T = TypeVar("T")
TIMEOUT_SECONDS = 20.0
WAITING = 3  # answers queued behind the running one before more are refused
START_SECONDS = 120.0  # for a new worker to import what it runs
MEMORY_LIMIT = 512 * 1024 * 1024  # the worker's data segment; the chart's pod limit is 1 GiB in all
_POOL: list[ProcessPoolExecutor] = []  # the process's worker, started on first use


def _limit_memory(limit: int) -> None:
    """In the worker, before any work: its heap and anonymous mappings at most ``limit`` bytes."""
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))


def _by_constructor(obj: Any) -> tuple[type, tuple[Any, ...]]:
    cls = type(obj)
    return cls, tuple(getattr(obj, f.name) for f in dataclasses.fields(cls))


def _engine_values_travel_by_constructor() -> None:
    """The engine's frozen dataclasses (the Config sent with each answer) cross to the worker as their
    constructor call: a compiled (mypyc) frozen class refuses the attribute-by-attribute restore that
    pickle does by default."""
    for value in vars(model).values():
        if (isinstance(value, type) and dataclasses.is_dataclass(value) and value.__module__ == model.__name__
                and all(f.init for f in dataclasses.fields(value))):
            copyreg.pickle(value, _by_constructor)


_engine_values_travel_by_constructor()


def _unavailable(text: str, retry: int) -> web.HTTPServiceUnavailable:
    return web.HTTPServiceUnavailable(text=text + "\n", headers={"Retry-After": str(retry)})


class Offload:
    """The worker process for the engine, a bounded queue before it, a deadline per answer."""

    def __init__(self, timeout: float = TIMEOUT_SECONDS, waiting: int = WAITING) -> None:
        self.timeout = timeout
        self._places = asyncio.Semaphore(1 + waiting)
        self._started: asyncio.Future[object] | None = None

    def start(self, work: Callable[[], object]) -> None:
        """Start the worker ahead of the first answer, ``work`` (an import, say) its first task; the
        answers wait for it before their deadlines run."""
        if not _POOL:
            _POOL.append(ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                                             initializer=_limit_memory, initargs=(MEMORY_LIMIT,)))
        self._started = asyncio.get_running_loop().run_in_executor(_POOL[0], work)

    async def run(self, work: Callable[..., T], *args: Any) -> T:
        """``work(*args)`` in the worker process (both picklable: a module's function and plain data);
        503 when the queue is full, the answer is late, or the worker died."""
        if self._places.locked():
            raise _unavailable("the engine is busy answering other pages: try again shortly", 5)
        await self._places.acquire()
        try:
            started = self._started
            if not _POOL or started is None or (started.done() and started.exception() is not None):
                self.start(int)  # no worker yet, or it died: a new one
            assert self._started is not None
            await asyncio.wait_for(asyncio.shield(self._started), START_SECONDS)
            future = asyncio.get_running_loop().run_in_executor(_POOL[0], work, *args)
        except (TimeoutError, BrokenProcessPool):
            self._places.release()
            self._replace()
            raise _unavailable("the engine's worker did not start: try again shortly", 10) from None
        except BaseException:
            self._places.release()
            raise
        future.add_done_callback(self._done)
        try:
            return await asyncio.wait_for(asyncio.shield(future), self.timeout)
        except TimeoutError:
            raise _unavailable(f"the engine did not answer within {self.timeout:g} s: try again shortly", 10) from None
        except MemoryError:
            raise _unavailable(f"the answer needs more than the engine's worker may take ({MEMORY_LIMIT >> 20} MiB)",
                               10) from None
        except BrokenProcessPool:
            self._replace()
            raise _unavailable("the engine's worker stopped (out of memory?): try again", 1) from None

    def _replace(self) -> None:
        """The next answer starts a new worker."""
        if _POOL:
            _POOL.pop().shutdown(wait=False, cancel_futures=True)
        self._started = None

    def _done(self, future: asyncio.Future[object]) -> None:
        """The worker is done (not before: its place is held while it works, answered or not)."""
        self._places.release()
        if not future.cancelled():
            future.exception()  # read, so a late failure nobody awaits is not logged as lost
