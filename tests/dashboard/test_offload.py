"""The engine's answers run in one worker process behind a bounded queue, each with a deadline: a full
queue or a late answer is a clear 503, a worker that dies is replaced, and the serving process never
runs the work itself."""

from __future__ import annotations

import asyncio
import os
import resource
import time

import pytest
from aiohttp import web

from pykueue.dashboard.offload import MEMORY_LIMIT, Offload


def fail(message: str) -> None:
    raise ValueError(message)


def die() -> None:
    os._exit(9)  # as the kernel's out-of-memory killer would end it


def offloaded(check, **kw) -> None:
    async def main() -> None:
        await check(Offload(**kw))
    asyncio.run(main())


def test_the_work_runs_in_another_process_and_its_failures_reach_the_caller() -> None:
    async def check(offload: Offload) -> None:
        assert await offload.run(os.getpid) != os.getpid()
        with pytest.raises(ValueError, match="not a Job"):
            await offload.run(fail, "not a Job")
    offloaded(check)


async def eventually(offload: Offload, work, *args, deadline: float = 60.0) -> object:
    """``work``'s answer once the queue has room again."""
    loop = asyncio.get_running_loop()
    end = loop.time() + deadline
    while True:
        try:
            return await offload.run(work, *args)
        except web.HTTPServiceUnavailable:
            if loop.time() > end:
                raise
            await asyncio.sleep(0.05)


def test_a_full_queue_is_refused_at_once_and_a_late_answer_is_503() -> None:
    async def check(offload: Offload) -> None:
        await offload.run(str, "started")  # the worker is up: the deadlines below measure the work
        offload.timeout = 1.0
        running = asyncio.create_task(offload.run(time.sleep, 3))
        queued = asyncio.create_task(offload.run(str, "queued"))
        await asyncio.sleep(0)  # both take their places
        with pytest.raises(web.HTTPServiceUnavailable) as busy:
            await offload.run(str, "third")
        assert busy.value.text == "the engine is busy answering other pages: try again shortly\n"
        assert busy.value.headers["Retry-After"] == "5"
        for task in (running, queued):  # the queued one waited past its deadline as well
            with pytest.raises(web.HTTPServiceUnavailable) as late:
                await task
            assert late.value.text == "the engine did not answer within 1 s: try again shortly\n"
        # late work holds its place until the worker is done with it: still busy
        with pytest.raises(web.HTTPServiceUnavailable, match="Service Unavailable"):
            await offload.run(str, "fourth")
        assert await eventually(offload, str, "after") == "after"
    offloaded(check, waiting=1)


def test_a_worker_that_dies_is_replaced() -> None:
    async def check(offload: Offload) -> None:
        first = await offload.run(os.getpid)
        with pytest.raises(web.HTTPServiceUnavailable) as died:
            await offload.run(die)
        assert died.value.text == "the engine's worker stopped (out of memory?): try again\n"
        assert await eventually(offload, os.getpid) not in (first, os.getpid())
    offloaded(check)


def data_limit() -> int:
    return resource.getrlimit(resource.RLIMIT_DATA)[0]


def hog() -> int:
    return len(bytearray(2 * MEMORY_LIMIT))  # a runaway answer


def test_a_runaway_answer_fails_in_the_worker_within_its_memory_cap() -> None:
    """The worker's data segment is capped: an answer that needs twice the cap is a 503 naming it, the
    serving process's own limit untouched, and the same worker answers the next request."""
    async def check(offload: Offload) -> None:
        assert await offload.run(data_limit) == MEMORY_LIMIT
        assert data_limit() != MEMORY_LIMIT
        first = await offload.run(os.getpid)
        with pytest.raises(web.HTTPServiceUnavailable) as big:
            await offload.run(hog)
        assert big.value.text == "the answer needs more than the engine's worker may take (512 MiB)\n"
        assert await offload.run(os.getpid) == first
    offloaded(check)
