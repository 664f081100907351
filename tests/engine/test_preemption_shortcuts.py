"""The preemption search skips ``fits`` only where it cannot change the answer.

``minimal_targets`` does not ask ``fits`` while the victims taken so far cannot cover what the
preemptor lacked (``_Shortfall``), and ``fill_back`` gives a victim back unasked when the preemptor's
slack certainly absorbs it (``_Slack``). Both are bounds on the quota arithmetic; here every run is
made twice, with the shortcuts and with them turned off (``fits`` asked after every step, the search
as it was), and the documents must be identical. The shortcuts must also have been taken, or the
comparison proves nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml

from pykueue.api.durations import parse_duration
from pykueue.api.loader import load_documents, load_paths
from pykueue.engine.preemption import common
from pykueue.perf.generator import build_manifests, parse_generator
from pykueue.sim.result import build_result
from pykueue.sim.simulator import Simulation

ROOT = Path(__file__).resolve().parents[2]
_T = TypeVar("_T")
SCENARIOS = sorted((ROOT / "tests" / "scenarios").glob("*.yaml"))

# upstream's large-scale shape (reclaimWithinCohort Any, borrowing, LowerPriority), small: 3 cohorts
# of 8 queues, 24 workloads per queue.
GENERATOR = """
cohorts:
  - className: cohort
    count: 3
    queuesSets:
    - className: cq
      count: 8
      nominalQuota: 20
      borrowingLimit: 100
      reclaimWithinCohort: Any
      withinClusterQueue: LowerPriority
      workloadsSets:
      - count: 16
        creationIntervalMs: 60
        workloads:
        - {className: small, runtimeMs: 150, priority: 50, request: 1}
      - count: 6
        creationIntervalMs: 300
        workloads:
        - {className: medium, runtimeMs: 350, priority: 100, request: 5}
      - count: 2
        creationIntervalMs: 700
        workloads:
        - {className: large, runtimeMs: 700, priority: 200, request: 20}
"""


class _Counting:
    """Counts the shortcuts taken and checks each against ``fits`` itself (a skipped question must
    have been answered no, a victim given back unasked must leave the preemptor fitting); with
    ``off``, never takes one."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, off: bool) -> None:
        self.skipped_forward = self.absorbed = 0
        remains, absorbs = common._Shortfall.remains, common._Slack.absorbs
        counter = self

        def counted_remains(shortfall: Any, victim: Any, preemptor_cq: str) -> bool:
            left = remains(shortfall, victim, preemptor_cq)
            if left:
                counter.skipped_forward += 1
                assert not common.fits(shortfall.requests, shortfall.cq.node, shortfall.allow_borrowing)
            return left and not off

        def counted_absorbs(slack: Any, victim: Any, own: bool) -> bool:
            if off:
                return False
            taken = absorbs(slack, victim, own)
            if taken:
                counter.absorbed += 1
                assert common.fits(slack.requests, slack.cq.node, slack.allow_borrowing)
            return taken

        monkeypatch.setattr(common._Shortfall, "remains", counted_remains)
        monkeypatch.setattr(common._Slack, "absorbs", counted_absorbs)


def _run_generator() -> str:
    manifests = build_manifests(parse_generator(yaml.safe_load(GENERATOR)))
    inputs, problems = load_documents(manifests, source="generator")
    assert problems == []
    return json.dumps(build_result(Simulation(inputs, record_usage=True).run()))


def test_generated_reclaim_is_the_same_without_the_shortcuts() -> None:
    with pytest.MonkeyPatch.context() as mp:
        fast = _Counting(mp, off=False)
        with_shortcuts = _run_generator()
    with pytest.MonkeyPatch.context() as mp:
        _Counting(mp, off=True)
        without = _run_generator()
    assert fast.skipped_forward > 20 and fast.absorbed > 20, (fast.skipped_forward, fast.absorbed)
    assert with_shortcuts == without


def _scenario_result(path: Path, tmp_path: Path) -> str | None:
    text = path.read_text()
    meta = yaml.safe_load(text.partition("\n---\n")[0])
    if meta.get("exitCode", 0) != 0:
        return None
    f = tmp_path / path.name
    f.write_text(text.partition("\n---\n")[2])
    inputs, problems = load_paths([str(f)])
    assert problems == []
    until = parse_duration(str(meta["until"])) if "until" in meta else None
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


def test_every_scenario_is_the_same_without_the_shortcuts(tmp_path: Path) -> None:
    counted = compare_every_scenario(tmp_path, _Counting)
    assert sum(c.skipped_forward + c.absorbed for c in counted) > 0
