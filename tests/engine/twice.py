"""Run the simulator twice, with an optimisation and with it turned off, and compare the documents:
the harness of the tests that prove a shortcut in the engine cannot change an answer."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
import yaml

from pykueue.api.clusters import load_clusters
from pykueue.api.durations import parse_duration
from pykueue.api.loader import load_documents
from pykueue.perf.generator import build_manifests, parse_generator
from pykueue.sim.multicluster import MultiSimulation
from pykueue.sim.multicluster_result import build_multi_result
from pykueue.sim.result import build_result
from pykueue.sim.simulator import Simulation

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = sorted((ROOT / "tests" / "scenarios").glob("*.yaml"))
_T = TypeVar("_T")

# Upstream's large-scale shape, small, with each queue rule in turn: heads of one cohort in the same
# cycle with different priorities, whose judgements of the shared merge differ.
RULED_GENERATOR = """
cohorts:
  - className: cohort
    count: 2
    queuesSets:
    - className: cq
      count: 10
      nominalQuota: 20
      borrowingLimit: 100
      reclaimWithinCohort: {reclaim}
      withinClusterQueue: {within}
      workloadsSets:
      - count: 14
        creationIntervalMs: 60
        workloads:
        - {{className: small, runtimeMs: 150, priority: 50, request: 1}}
      - count: 5
        creationIntervalMs: 300
        workloads:
        - {{className: medium, runtimeMs: 350, priority: 100, request: 5}}
      - count: 2
        creationIntervalMs: 700
        workloads:
        - {{className: large, runtimeMs: 700, priority: 200, request: 20}}
"""


RULES = [("Any", "LowerPriority"), ("LowerPriority", "LowerOrNewerEqualPriority"), ("Any", "Never")]


def run_generator(text: str) -> str:
    """The result document (with usage) of a perf generator's YAML."""
    inputs, problems = load_documents(build_manifests(parse_generator(yaml.safe_load(text))), source="generator")
    assert problems == []
    return json.dumps(build_result(Simulation(inputs, record_usage=True).run()))


def _scenario_result(path: Path, tmp_path: Path) -> str | None:
    text = path.read_text()
    meta = yaml.safe_load(text.partition("\n---\n")[0])
    if meta.get("exitCode", 0) != 0:
        return None
    f = tmp_path / path.name
    f.write_text(text.partition("\n---\n")[2])
    inputs, clusters, problems = load_clusters([str(f)])
    assert problems == []
    until = parse_duration(str(meta["until"])) if "until" in meta else None
    if clusters is not None:  # MultiKueue: a manager and its workers, one engine each
        return json.dumps(build_multi_result(MultiSimulation(clusters, until=until).run()))
    return json.dumps(build_result(Simulation(inputs, until=until).run()))


def compare_every_scenario(tmp_path: Path, instrument: Callable[[pytest.MonkeyPatch, bool], _T]) -> list[_T]:
    """Every scenario run with ``instrument(mp, off=False)`` in place and again with ``off=True``: the
    documents must be identical. Returns the instruments of the first runs (what they counted)."""
    counted = []
    for path in SCENARIOS:
        with pytest.MonkeyPatch.context() as mp:
            on = instrument(mp, False)
            first = _scenario_result(path, tmp_path)
        with pytest.MonkeyPatch.context() as mp:
            instrument(mp, True)
            second = _scenario_result(path, tmp_path)
        assert first == second, path.name
        counted.append(on)
    return counted
