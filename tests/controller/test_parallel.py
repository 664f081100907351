"""`in_parallel`: at most `limit` calls at once, every item called, and a call that raises stops the
others instead of leaving them writing behind the failed pass."""

from __future__ import annotations

import asyncio

import pytest

from pykueue.controller.runtime.parallel import in_parallel


def test_every_item_is_called_with_at_most_limit_at_once() -> None:
    async def scenario() -> tuple[list[int], int]:
        done: list[int] = []
        running = peak = 0

        async def call(item: int) -> None:
            nonlocal running, peak
            running += 1
            peak = max(peak, running)
            await asyncio.sleep(0)
            running -= 1
            done.append(item)

        await in_parallel(list(range(10)), call, limit=3)
        return done, peak

    done, peak = asyncio.run(scenario())
    assert sorted(done) == list(range(10)) and peak == 3


def test_a_call_that_raises_cancels_the_calls_in_flight() -> None:
    async def scenario() -> list[str]:
        seen: list[str] = []

        async def call(item: str) -> None:
            if item == "bad":
                raise RuntimeError("boom")
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                seen.append(f"{item} cancelled")
                raise

        with pytest.raises(ExceptionGroup) as raised:
            await in_parallel(["slow", "bad"], call, limit=2)
        assert [str(e) for e in raised.value.exceptions] == ["boom"]
        return seen

    assert asyncio.run(scenario()) == ["slow cancelled"]
