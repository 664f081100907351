"""Every long-running loop of the controller runs supervised: a loop that fails is logged and started
again after a growing delay, so one bug in one loop degrades that loop for a moment, never the
controller (nothing else stops, and no key is dropped: the loops keep their work in their dirty sets
and caches).

A loop that keeps failing is more than a moment, though: each supervised loop's failures in a row are
kept in ``LOOPS``, and ``/healthz`` fails (health.py) once one has failed ``FAILING_AFTER`` times, so
the kubelet restarts a controller that cannot do its work instead of leaving it up and idle."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

log = logging.getLogger("pykueue.controller")
BASE_SECONDS = 0.5
MAX_SECONDS = 30.0
FAILING_AFTER = 5  # failures in a row that make a loop, and /healthz, unhealthy
HEALTHY_AFTER_SECONDS = MAX_SECONDS  # a run this long (longer than any backoff) ends a streak of failures


def retry_delay(failures: int, base: float = BASE_SECONDS) -> float:
    """The controller's one backoff: doubling from ``base`` after each failure in a row, capped."""
    return min(base * 2**failures, MAX_SECONDS)


@dataclass
class LoopHealth:
    """One supervised loop's streak of failures; a run that lasts ``healthy_after`` ends it, counted
    as soon as it has lasted that long, not only when it fails again."""

    name: str
    clock: Callable[[], float]
    healthy_after: float
    failures: int = 0  # in a row, as of the last failure
    error: str = ""  # the last failure's
    running_since: float | None = None  # the current run's start, or None while backing off

    def failures_in_a_row(self) -> int:
        if self.running_since is not None and self.clock() - self.running_since >= self.healthy_after:
            return 0
        return self.failures


LOOPS: dict[str, LoopHealth] = {}  # the supervised loops running in this process, by name


def failing(threshold: int = FAILING_AFTER) -> list[LoopHealth]:
    """The loops that have failed ``threshold`` times in a row and not run fine since."""
    return [h for h in LOOPS.values() if h.failures_in_a_row() >= threshold]


async def supervised(name: str, loop: Callable[[], Awaitable[None]], *, base: float = BASE_SECONDS,
                     healthy_after: float = HEALTHY_AFTER_SECONDS,
                     clock: Callable[[], float] = time.monotonic) -> None:
    """Run ``loop()`` forever; when it raises (or returns), log it and run it again with backoff.
    Its health is in ``LOOPS[name]`` while this runs (a loop of the same name started later, by a new
    leader term, replaces it)."""
    health = LoopHealth(name, clock, healthy_after)
    LOOPS[name] = health
    try:
        while True:
            health.running_since = clock()
            failure: Exception | None = None
            try:
                await loop()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - logged and restarted, never the controller's end
                failure = exc
            health.failures = health.failures_in_a_row() + 1
            health.running_since, health.error = None, "returned" if failure is None else repr(failure)
            fields = {"loop": name, "error": health.error, "failures": health.failures}
            if failure is None:
                log.warning("loop ended; starting it again", extra={"fields": fields})
            else:
                log.error("loop failed; starting it again", extra={"fields": fields}, exc_info=failure)
            failure = None  # its traceback holds the failed run's frames: not kept through the backoff
            await asyncio.sleep(retry_delay(health.failures - 1, base))
    finally:
        if LOOPS.get(name) is health:
            del LOOPS[name]


def start(name: str, loop: Callable[[], Awaitable[None]]) -> asyncio.Task:
    return asyncio.create_task(supervised(name, loop), name=name)
