"""Every long-running loop of the controller runs supervised: a loop that fails is logged and started
again after a growing delay, so one bug in one loop degrades that loop for a moment, never the
controller (nothing else stops, and no key is dropped: the loops read their work from the caches)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger("pykueue.controller")
BASE_SECONDS = 0.5
MAX_SECONDS = 30.0


def retry_delay(failures: int, base: float = BASE_SECONDS) -> float:
    """The controller's one backoff: doubling from ``base`` after each failure in a row, capped."""
    return min(base * 2**failures, MAX_SECONDS)


async def supervised(name: str, loop: Callable[[], Awaitable[None]], *, base: float = BASE_SECONDS) -> None:
    """Run ``loop()`` forever; when it raises (or returns), log it and run it again with backoff."""
    failures = 0
    while True:
        try:
            await loop()
            log.warning("loop ended; starting it again", extra={"fields": {"loop": name}})
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - logged and restarted, never the controller's end
            log.error("loop failed; starting it again", extra={"fields": {
                "loop": name, "error": repr(exc), "failures": failures + 1}}, exc_info=True)
        delay = retry_delay(failures, base)
        failures += 1
        await asyncio.sleep(delay)


def start(name: str, loop: Callable[[], Awaitable[None]]) -> asyncio.Task:
    return asyncio.create_task(supervised(name, loop), name=name)
