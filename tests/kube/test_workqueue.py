"""The work queue's promises, as client-go's: one entry per key however often it is added, a key added
while it is processed is processed again afterwards, a failed key comes back with a growing delay, and
neither a raising error hook nor a cancelled worker drops the key in hand."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from pykueue.kube.workqueue import WorkQueue
from tests.controller.fakes import until


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(scenario())


def test_a_key_added_many_times_is_queued_once() -> None:
    async def scenario() -> None:
        q = WorkQueue()
        for key in ("a", "b", "a", "a", "b"):
            q.add(key)
        assert len(q) == 2
        assert [await q.get(), await q.get()] == ["a", "b"]
        assert len(q) == 0

    run(scenario)


def test_a_key_added_while_it_is_processed_is_processed_once_more_afterwards() -> None:
    """Two adds during one pass of the worker: the key is not handed out again while in hand, and is
    handed out exactly once more after `done`."""
    async def scenario() -> None:
        q = WorkQueue()
        q.add("k")
        key = await q.get()
        q.add("k")
        q.add("k")
        assert len(q) == 0  # not queued beside the copy in hand
        q.done(key)
        assert len(q) == 1
        assert await q.get() == "k"
        q.done("k")
        assert len(q) == 0

    run(scenario)


def test_run_processes_a_key_added_during_its_worker_again() -> None:
    async def scenario() -> None:
        q = WorkQueue()
        calls: list[str] = []
        release = asyncio.Event()

        async def worker(key: str) -> None:
            calls.append(key)
            if len(calls) == 1:
                await release.wait()

        q.add("k")
        task = asyncio.create_task(q.run(worker, lambda k, e: None))
        await until(lambda: calls == ["k"])
        q.add("k")  # while the first pass is in the worker
        release.set()
        await until(lambda: len(calls) == 2)
        task.cancel()
        assert calls == ["k", "k"]

    run(scenario)


def test_retry_delays_double_up_to_the_cap_and_forget_resets_them() -> None:
    async def scenario() -> None:
        q = WorkQueue(base_delay=1.0, max_delay=5.0)
        assert [q.retry("k") for _ in range(5)] == [1.0, 2.0, 4.0, 5.0, 5.0]
        q.forget("k")
        assert q.retry("k") == 1.0
        assert q.retry("other") == 1.0  # per key

    run(scenario)


def test_a_failing_key_comes_back_until_it_succeeds_then_its_failures_are_forgotten() -> None:
    async def scenario() -> None:
        q = WorkQueue(base_delay=0.01)
        attempts: list[str] = []
        errors: list[tuple[str, str]] = []

        async def worker(key: str) -> None:
            attempts.append(key)
            if len(attempts) < 3:
                raise RuntimeError(f"conflict {len(attempts)}")

        q.add("k")
        task = asyncio.create_task(q.run(worker, lambda k, e: errors.append((k, str(e)))))
        await until(lambda: len(attempts) == 3)
        task.cancel()
        assert errors == [("k", "conflict 1"), ("k", "conflict 2")]
        assert q.retry("k") == 0.01  # the success forgot the two failures

    run(scenario)


def test_an_error_hook_that_raises_loses_no_key() -> None:
    """`on_error` raising ends the loop (its supervisor restarts it), but the key's retry is already
    scheduled: the next run of the loop gets it back. (Before: the retry came after the hook.)"""
    async def scenario() -> None:
        q = WorkQueue(base_delay=0.01)
        attempts: list[str] = []

        async def worker(key: str) -> None:
            attempts.append(key)
            if len(attempts) == 1:
                raise RuntimeError("conflict")

        def on_error(key: str, exc: Exception) -> None:
            raise ValueError("a bug in the error hook")

        q.add("k")
        with pytest.raises(ValueError):
            await q.run(worker, on_error)
        task = asyncio.create_task(q.run(worker, on_error))  # as the supervisor starts it again
        await until(lambda: len(attempts) == 2)
        task.cancel()
        assert attempts == ["k", "k"]

    run(scenario)


def test_a_key_whose_worker_is_cancelled_is_queued_again() -> None:
    async def scenario() -> None:
        q = WorkQueue()
        started = asyncio.Event()

        async def stuck(key: str) -> None:
            started.set()
            await asyncio.Event().wait()

        q.add("k")
        task = asyncio.create_task(q.run(stuck, lambda k, e: None))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert len(q) == 1
        assert await q.get() == "k"

    run(scenario)


def test_add_after_queues_the_key_once_its_delay_has_passed() -> None:
    async def scenario() -> None:
        q = WorkQueue()
        q.add_after("k", 0.01)
        assert len(q) == 0
        assert await asyncio.wait_for(q.get(), 5) == "k"

    run(scenario)
