"""The engine's cheap read models say what the full ones say, at any point of any run: the
controller's pending-condition check (``Engine.pending_condition``) and the queue counts kept by class."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from pykueue.api.loader import load_paths
from pykueue.engine.engine import Engine
from pykueue.engine.workload import State
from pykueue.sim.simulator import Simulation
from tests.engine.sim_worlds import Job, World, manifests, worlds


def engine_at(world: World, until_ms: int) -> Engine:
    """The engine of ``simulate`` on the world, stopped at ``until_ms``."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "world.yaml"
        path.write_text(manifests(world))
        inputs, problems = load_paths([str(path)])
    assert not problems, problems
    return Simulation(inputs, until=until_ms / 1000).run().engine


@settings(max_examples=40, deadline=None)
@given(world=worlds(two=True), until_ms=st.integers(0, 20_000))
def test_pending_condition_matches_the_snapshot(world: World, until_ms: int) -> None:
    engine = engine_at(world, until_ms)
    keys = engine.workload_keys()
    for key in keys:
        snapshot = engine.workload_status(key)
        assert snapshot is not None
        assert engine.pending_condition(key) == (snapshot.reason, snapshot.message), key
    assert engine.pending_condition("nowhere/none") is None


@settings(max_examples=40, deadline=None)
@given(world=worlds(two=True), until_ms=st.integers(0, 20_000))
def test_queue_counts_match_the_members(world: World, until_ms: int) -> None:
    """A ClusterQueue's inadmissible count (kept by class) is the number of its pending members
    whose class is set aside, and a LocalQueue's counts (kept as workloads move) are its workloads
    by state, counted one by one."""
    engine = engine_at(world, until_ms)
    for name in engine.cluster_queue_names():
        status = engine.cluster_queue_status(name)
        pending = engine.cqs[name].pending
        members = pending.members()
        assert status is not None and status.pending == len(members)
        assert status.pending_inadmissible == sum(1 for w in members if pending.is_parked(w.key)), name
    counted = {}
    for key in engine.local_queue_names():
        infos = [i for i in engine.workloads.values() if f"{i.spec.namespace}/{i.spec.queue_name}" == key]
        counted[key] = (sum(1 for i in infos if i.state is State.PENDING), sum(1 for i in infos if i.has_quota),
                        sum(1 for i in infos if i.state is State.ADMITTED))
    kept = {k: (s.pending, s.reserving, s.admitted) for k, s in engine.local_queue_statuses().items()}
    assert kept == counted


def test_inadmissible_counts_parked_members_only() -> None:
    """Two full ClusterQueues with two more workloads each: BestEffortFIFO sets both aside
    (inadmissible 2), StrictFIFO keeps its head in line (inadmissible 0), as upstream counts them."""
    jobs = tuple(Job(name=f"{n}{cq}", cq=cq, count=1, cpu_m=cpu, priority=0, arrival_ms=0, runtime_ms=10_000)
                 for cq in (0, 1) for n, cpu in (("a", 2000), ("b", 1000), ("c", 2000)))
    world = World(nominal=(2, 2), borrowing=(None, None), lending=(None, None),
                  strategies=("BestEffortFIFO", "StrictFIFO"), weights=(None, None), cohort=False, fair=False,
                  jobs=jobs)
    engine = engine_at(world, 1000)
    counts = {}
    for name in ("cq0", "cq1"):
        status = engine.cluster_queue_status(name)
        assert status is not None
        counts[name] = (status.pending, status.pending_inadmissible)
    assert counts == {"cq0": (2, 2), "cq1": (2, 0)}
