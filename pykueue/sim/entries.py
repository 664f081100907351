"""A list of the result document made entry by entry while it is written."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any


class Entries:
    """A list of the result made entry by entry while it is written (``write_json`` and ``write_yaml``
    take it where a list may stand): a million workloads' entries are never all in memory at once.
    ``seen`` is called with each entry as it is made. ``finite``: no float in the entries is NaN or
    infinite (the writer need not look for one: times made from integer microseconds)."""

    __slots__ = ("count", "make", "seen", "finite")

    def __init__(self, count: int, make: Callable[[], Iterator[dict[str, Any]]],
                 seen: Callable[[dict[str, Any]], None] | None = None, finite: bool = False) -> None:
        self.count, self.make, self.seen, self.finite = count, make, seen, finite

    def __bool__(self) -> bool:
        return self.count > 0

    def __iter__(self) -> Iterator[dict[str, Any]]:
        seen = self.seen
        if seen is None:
            yield from self.make()
            return
        for entry in self.make():
            seen(entry)
            yield entry
