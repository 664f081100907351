"""Properties of queue order and of the published fair share, on the random worlds of ``sim_worlds``.

Each fact is recomputed from the inputs and the rules, not from the engine's own structures:

- StrictFIFO: in a StrictFIFO queue without preemption, a workload is never admitted before one of the
  same queue that came earlier (arrival, then document order) with the same or a higher priority: the
  head blocks the queue until it is admitted, and an earlier workload of at least the same priority
  is always ahead of a later one.
- weightedShare: with fair sharing, each ClusterQueue's ``status.fairSharing.weightedShare`` is, at any
  moment, what it borrows beyond its nominal quota in per mille of what its cohort can lend (each
  member's nominal quota, or its lendingLimit when it has one), divided by its weight and rounded up.
"""

from __future__ import annotations

import math
from fractions import Fraction

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.engine.sim_worlds import World, ms, run, simulate, worlds

SETTINGS = settings(max_examples=150, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(worlds())
def test_strict_fifo_never_admits_a_later_workload_first(world: World) -> None:
    got = simulate(world)
    admitted = {j.name: ms(got[j.name]["admittedAt"]) for j in world.jobs}
    for i, strategy in enumerate(world.strategies):
        if strategy != "StrictFIFO":
            continue
        jobs = [j for j in world.jobs if j.cq == i]  # document order
        for x, a in enumerate(jobs):
            for b in jobs[x + 1:]:
                if a.arrival_ms <= b.arrival_ms and a.priority >= b.priority:
                    assert admitted[a.name] is not None and (admitted[b.name] is None or admitted[a.name] <= admitted[b.name]), (
                        f"{b.name} admitted at {admitted[b.name]} before {a.name} at {admitted[a.name]}")


def millicores(text: str) -> int:
    return int(text[:-1]) if text.endswith("m") else int(Fraction(text) * 1000)


@SETTINGS
@given(worlds(fair=True, two=True), st.integers(0, 60).map(lambda k: k * 250))
def test_weighted_share_is_borrowed_over_lendable_per_mille_over_weight_rounded_up(world: World, until_ms: int) -> None:
    result = run(world, until_ms)
    lendable = sum(1000 * (nominal if lend is None else lend) for nominal, lend in zip(world.nominal, world.lending, strict=True))
    for cq in result["clusterQueues"]:
        i = int(cq["name"][2:])
        used = millicores(cq["usage"].get("f", {}).get("cpu", "0"))
        borrowed = max(0, used - 1000 * world.nominal[i])
        weight = Fraction(world.weights[i] or "1")
        want = 0 if borrowed == 0 else math.ceil(Fraction(borrowed * 1000, lendable) / weight)
        assert cq["weightedShare"] == want, (cq, borrowed, lendable, weight)
