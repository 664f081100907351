"""Bounded concurrency for the writers: a few workers over many keys."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")
WRITE_CONCURRENCY = 16


async def in_parallel(items: list[T], call: Callable[[T], Awaitable[None]], limit: int = WRITE_CONCURRENCY) -> None:
    """Await ``call`` on every item, ``limit`` at a time: a few workers share one iterator, so a pass
    over thousands of keys creates a few tasks, not one per key. A worker that raises cancels the
    others (a task group, not ``gather``): no write of a failed pass goes on behind the next one,
    where an older status could land after a newer."""
    todo = iter(items)

    async def worker() -> None:
        for item in todo:
            await call(item)

    async with asyncio.TaskGroup() as group:
        for _ in range(min(limit, len(items))):
            group.create_task(worker())
