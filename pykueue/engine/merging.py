"""A lazy merge of sorted streams.

``heapq.merge`` does this, but it is Python in the standard library: in a compiled build every item
of a preemption search's candidate merge went through it interpreted. This is the same merge
without a key function, compiled with the engine.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from heapq import heapify, heappop, heapreplace
from typing import Any

_END = object()


def merge_sorted(streams: Sequence[Iterable[Any]]) -> Iterator[Any]:
    """The items of ``streams`` (each sorted) in order, as ``heapq.merge(*streams)`` yields them.

    Items must be comparable with each other; equal ones come in stream order, as ``heapq.merge``
    yields them (the stream's number is kept beside each item). As ``heapq.merge``, it takes the
    first item of every stream when first asked, and the next of a stream only once the one before
    is taken."""
    iterators = [iter(stream) for stream in streams]
    heap: list[tuple[Any, int]] = []
    for i, stream in enumerate(iterators):
        first = next(stream, _END)
        if first is not _END:
            heap.append((first, i))
    heapify(heap)
    while len(heap) > 1:
        item, i = heap[0]
        yield item
        following = next(iterators[i], _END)
        if following is _END:
            heappop(heap)
        else:
            heapreplace(heap, (following, i))
    if heap:
        item, i = heap[0]
        yield item
        yield from iterators[i]
