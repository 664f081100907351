"""Partial admission when more than one pod set can shrink: upstream's reducer and its give-back step.

Upstream's webhook (and ``pykueue validate``) allow ``minCount`` on one pod set of a Workload, so the
simulator cannot be given two; the reducer in ``pkg/scheduler/flavorassigner/podset_reducer.go``
handles any number, and the engine's reducer is the same. Its shrink budget is spent from the last pod
set towards the first; a binary search finds the smallest budget that fits; then pod sets that were
cut more than needed grow back, first to last, each as far as still fits. These tests drive the
engine directly with such workloads: one queue, one flavor, cpu only, nothing else running.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pykueue.engine import model as m
from pykueue.engine.engine import Engine


def admitted_counts(quota_m: int, pod_sets: list[tuple[int, int | None, int]]) -> list[int] | None:
    """Counts per pod set the engine admits at once, or None. ``pod_sets``: (count, minCount, cpu_m)."""
    e = Engine()
    e.apply_resource_flavor(m.ResourceFlavor("f"))
    e.apply_cluster_queue(m.ClusterQueue(
        name="cq", namespace_selector=m.LabelSelector(),
        resource_groups=(m.ResourceGroup(("cpu",), (m.FlavorQuotas("f", {"cpu": m.ResourceQuota(quota_m)}),)),)))
    e.apply_local_queue(m.LocalQueue("ns", "q", "cq"))
    e.add_workload(m.Workload("ns", "w", "q", tuple(
        m.PodSet(f"ps{i}", count, {"cpu": cpu}, min_count=min_count)
        for i, (count, min_count, cpu) in enumerate(pod_sets))))
    admitted = [ev for ev in e.schedule(0) if ev.type == "Admitted"]
    if not admitted:
        return None
    assert admitted[0].admission is not None
    return [psa.count for psa in admitted[0].admission.pod_set_assignments]


def test_give_back_restores_a_pod_set_cut_needlessly() -> None:
    """10 cpu; big: 4 x 3 cpu (min 1), small: 4 x 1 cpu (min 2): 16 cpu in full. Budgets cut small
    first: 1 -> 15, 2 -> 14 (small at its minimum), 3 -> big 3: 11, 4 -> big 2: 8 fits. The search
    settles on big 2, small 2 (8 cpu); giving back: big 3 needs 11, no; small back to 4 needs 10, yes."""
    assert admitted_counts(10_000, [(4, 1, 3000), (4, 2, 1000)]) == [2, 4]


def test_give_back_grows_a_pod_set_part_of_the_way() -> None:
    """11 cpu; big: 4 x 3 cpu (min 1), small: 6 x 1 cpu (min 1): 18 cpu in full. The smallest budget is
    6 (small 1, big 3: 10 cpu); big cannot grow (13); small grows to 2 (11 cpu) but not to 3 (12)."""
    assert admitted_counts(11_000, [(4, 1, 3000), (6, 1, 1000)]) == [3, 2]


def test_one_shrinkable_pod_set_among_fixed_ones() -> None:
    """What the simulator accepts: only the middle pod set may shrink. 7 cpu; 1 x 2, 5 x 1 (min 2),
    1 x 2: 4 cpu are fixed, so the middle one gets 3."""
    assert admitted_counts(7_000, [(1, None, 2000), (5, 2, 1000), (1, None, 2000)]) == [1, 3, 1]


def test_nothing_when_even_the_minimum_does_not_fit() -> None:
    assert admitted_counts(4_000, [(4, 1, 3000), (4, 2, 1000)]) is None  # 3 + 2 = 5 cpu at least


@st.composite
def cases(draw: st.DrawFn) -> tuple[list[tuple[int, int | None, int]], int]:
    """Pod sets (count, minCount or None, cpu per pod) and a quota, mostly between what the minimum
    counts and the full counts need, where the reducer has work to do."""
    pod_sets = []
    for _ in range(draw(st.integers(1, 3))):
        count = draw(st.integers(1, 6))
        min_count = draw(st.one_of(st.integers(1, count), st.integers(1, count), st.none()))
        pod_sets.append((count, min_count, draw(st.sampled_from((500, 1000, 2000, 3000)))))
    least = sum((c if mn is None else mn) * cpu for c, mn, cpu in pod_sets)
    full = sum(c * cpu for c, _, cpu in pod_sets)
    return pod_sets, draw(st.integers(max(1, least - 1000), full + 1000))


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_admitted_counts_fit_and_none_could_grow(case: tuple[list[tuple[int, int | None, int]], int]) -> None:
    """Whatever the counts, they respect minCount and the quota, and each pod set is as large as it can
    be given the others: no single pod set could take one more pod and still fit (the give-back step
    makes that so; the search alone leaves later pod sets cut more than needed)."""
    pod_sets, quota_m = case
    counts = admitted_counts(quota_m, pod_sets)
    full = [c for c, _, _ in pod_sets]
    least = [c if mn is None else mn for c, mn, _ in pod_sets]
    cpu = [c for _, _, c in pod_sets]

    def usage(cs: list[int]) -> int:
        return sum(n * c for n, c in zip(cs, cpu, strict=True))

    if usage(full) <= quota_m:
        assert counts == full
        return
    if usage(least) > quota_m:
        assert counts is None
        return
    assert counts is not None
    assert all(lo <= n <= hi for lo, n, hi in zip(least, counts, full, strict=True)), counts
    assert usage(counts) <= quota_m
    for i, n in enumerate(counts):
        if n < full[i]:
            assert usage(counts) + cpu[i] > quota_m, (i, counts)
