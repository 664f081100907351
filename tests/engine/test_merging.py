"""``merge_sorted`` is ``heapq.merge`` without a key: the same items in the same order (ties by
stream), pulled from the streams as lazily."""

from __future__ import annotations

import heapq
from collections.abc import Iterator

from hypothesis import given
from hypothesis import strategies as st

from pykueue.engine.merging import merge_sorted


@given(st.lists(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 3)), max_size=8), max_size=6))
def test_same_order_as_heapq_merge(raw: list[list[tuple[int, int]]]) -> None:
    # (key, stream, position) items: equal keys from several streams show which stream goes first.
    streams = [sorted(s) for s in raw]
    tagged = [[(key, sub, n, i) for n, (key, sub) in enumerate(s)] for i, s in enumerate(streams)]
    untied = [[(key, sub) for key, sub, _, _ in s] for s in tagged]
    assert list(merge_sorted(tagged)) == list(heapq.merge(*tagged))
    # Equal items (tuples without the tags) still come out as heapq.merge gives them.
    assert list(merge_sorted(untied)) == list(heapq.merge(*untied))


def _counting(items: list[int], pulled: list[int]) -> Iterator[int]:
    for item in items:
        pulled.append(item)
        yield item


def test_pulls_one_item_ahead_per_stream() -> None:
    pulled: list[int] = []
    merged = merge_sorted([_counting([1, 4, 9], pulled), _counting([2, 3, 10], pulled), _counting([], pulled)])
    assert pulled == []  # nothing before the first item is asked for
    assert next(merged) == 1
    assert pulled == [1, 2]  # the head of every stream
    assert next(merged) == 2
    assert pulled == [1, 2, 4]  # the stream 1 came from, refilled when the next is asked for
    assert list(merged) == [3, 4, 9, 10]
    assert sorted(pulled) == [1, 2, 3, 4, 9, 10]


def test_iterables_and_empty() -> None:
    assert list(merge_sorted([])) == []
    assert list(merge_sorted([[], []])) == []
    assert list(merge_sorted([[5, 7], (6,)])) == [5, 6, 7]
