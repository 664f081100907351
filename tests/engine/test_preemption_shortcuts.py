"""The preemption search skips ``fits`` only where it cannot change the answer.

``minimal_targets`` does not ask ``fits`` while the victims taken so far cannot cover what the
preemptor lacked (``_Shortfall``), and ``fill_back`` gives a victim back unasked when the preemptor's
slack certainly absorbs it (``_Slack``). Both are bounds on the quota arithmetic; here every run is
made twice, with the shortcuts and with them turned off (``fits`` asked after every step, the search
as it was), and the documents must be identical. The shortcuts must also have been taken, or the
comparison proves nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pykueue.engine.preemption import common
from tests.engine.twice import compare_every_scenario, run_generator

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


def test_generated_reclaim_is_the_same_without_the_shortcuts() -> None:
    with pytest.MonkeyPatch.context() as mp:
        fast = _Counting(mp, off=False)
        with_shortcuts = run_generator(GENERATOR)
    with pytest.MonkeyPatch.context() as mp:
        _Counting(mp, off=True)
        without = run_generator(GENERATOR)
    assert fast.skipped_forward > 20 and fast.absorbed > 20, (fast.skipped_forward, fast.absorbed)
    assert with_shortcuts == without


def test_every_scenario_is_the_same_without_the_shortcuts(tmp_path: Path) -> None:
    counted = compare_every_scenario(tmp_path, _Counting)
    assert sum(c.skipped_forward + c.absorbed for c in counted) > 0
