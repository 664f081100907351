"""``Engine.pending_condition`` (the controller's cheap check, every few seconds, of whether a pending
workload's message moved) says what the full snapshot says, at any point of any run."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from pykueue.api.loader import load_paths
from pykueue.sim.simulator import Simulation
from tests.engine.sim_worlds import World, manifests, worlds


@settings(max_examples=40, deadline=None)
@given(world=worlds(two=True), until_ms=st.integers(0, 20_000))
def test_pending_condition_matches_the_snapshot(world: World, until_ms: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "world.yaml"
        path.write_text(manifests(world))
        inputs, problems = load_paths([str(path)])
    assert not problems, problems
    engine = Simulation(inputs, until=until_ms / 1000).run().engine
    keys = engine.workload_keys()
    for key in keys:
        snapshot = engine.workload_status(key)
        assert snapshot is not None
        assert engine.pending_condition(key) == (snapshot.reason, snapshot.message), key
    assert engine.pending_condition("nowhere/none") is None
