"""The flavor assigner's requests per pod-set tuple (``flavors.prepared``, kept in a ``Shared``): made
once per tuple and queue kind, shared by every nomination of every workload with that tuple, and never
confused between tuples that are equal but distinct, or between queues that cover ``pods`` and those
that do not."""

from __future__ import annotations

from pykueue.engine import model
from pykueue.engine.flavors import prepare, prepared
from pykueue.engine.workload import Shared


def _pod_sets(cpu: int = 2, count: int = 3) -> tuple[model.PodSet, ...]:
    return (model.PodSet("main", count, {"memory": 5, "cpu": cpu}), model.PodSet("side", 1, {"cpu": 1}))


def test_requests_are_count_times_per_pod_in_name_order_with_pods_when_covered() -> None:
    pod_sets = _pod_sets()
    assert prepare(pod_sets, [3, 1], False) == [
        (pod_sets[0], 3, {"memory": 15, "cpu": 6}, ["cpu", "memory"]),
        (pod_sets[1], 1, {"cpu": 1}, ["cpu"]),
    ]
    main = prepare(pod_sets, [2, 0], True)[0]
    assert main[2:] == ({"memory": 10, "cpu": 4, "pods": 2}, ["cpu", "memory", "pods"])


def test_one_tuple_is_prepared_once_per_queue_kind() -> None:
    cache = Shared()
    pod_sets = _pod_sets()
    first = prepared(cache, pod_sets, False)
    assert prepared(cache, pod_sets, False) is first
    with_pods = prepared(cache, pod_sets, True)
    assert with_pods is not first and with_pods[0][2]["pods"] == 3
    assert first == prepare(pod_sets, [3, 1], False)


def test_equal_content_in_another_tuple_is_its_own_entry() -> None:
    cache = Shared()
    a, b = _pod_sets(cpu=2), _pod_sets(cpu=7)
    assert prepared(cache, a, False)[0][2]["cpu"] == 6
    assert prepared(cache, b, False)[0][2]["cpu"] == 21
    assert prepared(cache, a, False)[0][2]["cpu"] == 6


def test_a_tuple_whose_identity_is_reused_is_not_mistaken_for_the_old_one() -> None:
    """The entry holds its tuple, so while it is cached no other tuple can take its id; a lookup also
    checks identity, so an entry can only ever answer for its own tuple."""
    cache = Shared()
    pod_sets = _pod_sets(cpu=2)
    prepared(cache, pod_sets, False)
    del pod_sets
    for cpu in range(3, 40):  # new tuples, some of which could reuse freed ids if nothing held them
        fresh = _pod_sets(cpu=cpu)
        assert prepared(cache, fresh, False)[0][2]["cpu"] == 3 * cpu


def test_past_the_limit_the_entries_are_dropped_and_answers_stay_right() -> None:
    cache = Shared(limit=3)
    kept = [_pod_sets(cpu=c) for c in range(1, 8)]
    for pod_sets in kept:
        prepared(cache, pod_sets, False)
    assert len(cache._by_id) <= 3
    for c, pod_sets in enumerate(kept, start=1):
        assert prepared(cache, pod_sets, False)[0][2]["cpu"] == 3 * c
