"""The engine's answers run in one worker thread behind a bounded queue, each with a deadline: a full
queue or a late answer is a clear 503, and the event loop never runs the work itself."""

from __future__ import annotations

import asyncio
import threading

import pytest
from aiohttp import web

from pykueue.dashboard.offload import Offload


def test_the_work_runs_off_the_event_loops_thread() -> None:
    async def main() -> None:
        offload = Offload()
        try:
            assert await offload.run(threading.get_ident) != threading.get_ident()
        finally:
            offload.close()
    asyncio.run(main())


def test_a_full_queue_is_refused_at_once_and_a_late_answer_is_503() -> None:
    release = threading.Event()

    async def main() -> None:
        offload = Offload(timeout=0.5, waiting=1)
        try:
            running = asyncio.create_task(offload.run(lambda: release.wait(30)))
            queued = asyncio.create_task(offload.run(lambda: "queued"))
            await asyncio.sleep(0)  # both take their places
            with pytest.raises(web.HTTPServiceUnavailable) as busy:
                await offload.run(lambda: "third")
            assert busy.value.text == "the engine is busy answering other pages: try again shortly\n"
            for task in (running, queued):  # the queued one waited past its deadline as well
                with pytest.raises(web.HTTPServiceUnavailable) as late:
                    await task
                assert late.value.text == "the engine did not answer within 0.5 s: try again shortly\n"
            # late work holds its place until its thread is done: still busy
            with pytest.raises(web.HTTPServiceUnavailable, match="Service Unavailable"):
                await offload.run(lambda: "fourth")
            release.set()
            assert await eventually(offload, lambda: "after") == "after"
        finally:
            release.set()
            offload.close()
    asyncio.run(main())


async def eventually(offload: Offload, work, deadline: float = 30.0) -> object:
    """``work``'s answer once the queue has room again."""
    loop = asyncio.get_running_loop()
    end = loop.time() + deadline
    while True:
        try:
            return await offload.run(work)
        except web.HTTPServiceUnavailable:
            if loop.time() > end:
                raise
            await asyncio.sleep(0.05)


def test_a_failure_in_the_work_reaches_the_caller() -> None:
    async def main() -> None:
        offload = Offload()

        def fail() -> None:
            raise ValueError("not a Job")
        try:
            with pytest.raises(ValueError, match="not a Job"):
                await offload.run(fail)
        finally:
            offload.close()
    asyncio.run(main())
