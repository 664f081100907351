"""A work queue of keys, as client-go's: a key is queued once however often it is added, is never
handed to two workers at once (one added while it is processed is queued again when it is done), and
a failed key comes back after a growing delay."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable


class WorkQueue:
    def __init__(self, base_delay: float = 0.05, max_delay: float = 30.0) -> None:
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        self._queued: set[str] = set()
        self._processing: set[str] = set()
        self._dirty: set[str] = set()
        self._failures: dict[str, int] = {}
        self.base_delay = base_delay
        self.max_delay = max_delay

    def __len__(self) -> int:
        return len(self._queued)

    def add(self, key: str) -> None:
        if key in self._processing:
            self._dirty.add(key)  # handled again once the current pass is done
        elif key not in self._queued:
            self._queued.add(key)
            self._queue.put_nowait(key)

    def add_after(self, key: str, delay: float) -> None:
        asyncio.get_running_loop().call_later(delay, self.add, key)

    def retry(self, key: str) -> float:
        """Queue `key` again after its rate-limited delay; return the delay."""
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        delay = min(self.base_delay * 2**failures, self.max_delay)
        self.add_after(key, delay)
        return delay

    def forget(self, key: str) -> None:
        self._failures.pop(key, None)

    async def get(self) -> str:
        key = await self._queue.get()
        self._queued.discard(key)
        self._processing.add(key)
        return key

    def done(self, key: str) -> None:
        self._processing.discard(key)
        if key in self._dirty:
            self._dirty.discard(key)
            self.add(key)

    async def run(self, worker: Callable[[str], Awaitable[None]], on_error: Callable[[str, Exception], None]
                  ) -> None:
        """Process keys forever: `worker(key)`; on an exception, a rate-limited retry, then `on_error`
        (scheduled first, so an `on_error` that raises loses no key). A key whose worker is cancelled
        (the loop stopped) is queued again for the next run."""
        while True:
            key = await self.get()
            try:
                await worker(key)
                self.forget(key)
            except asyncio.CancelledError:
                self._dirty.add(key)  # unfinished: `done` queues it again
                raise
            except Exception as exc:  # noqa: BLE001 - one bad key must not stop the others
                self.retry(key)
                on_error(key, exc)
            finally:
                self.done(key)
