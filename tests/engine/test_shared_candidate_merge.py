"""A cycle's heads share one merge of a cohort's candidates, and each still gets its own answer.

While the scheduler nominates a cycle's heads, ``ClassicalPolicy`` merges the over-quota queues'
admitted workloads in victim order once per (subtree, excluded subtree, resources) and every head's
search reads that merge, judging it for itself (its own queue's workloads left out, its priority
rules and borrowing variants applied). Here every run is made twice, with the shared merge and with
each search merging its own queues as before, and the documents must be identical; the merge must
also have been shared, or the comparison proves nothing.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pykueue.engine.preemption import Preemptor
from pykueue.engine.preemption.classical import ClassicalPolicy
from tests.engine.twice import RULED_GENERATOR, RULES, compare_every_scenario, run_generator


class _Sharing:
    """Counts the searches that read a merge another search made first; with ``off``, no merge is
    shared (the nominations run without the cache, as every search inside a search does)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, off: bool) -> None:
        self.made = self.reused = 0
        merged_of = ClassicalPolicy._merged_of
        counter = self

        def counted(policy: Any, frs: Any, root: Any, skip: Any) -> Any:
            before = None if policy.merged_cache is None else len(policy.merged_cache)
            found = merged_of(policy, frs, root, skip)
            if found is not None and before is not None:
                if len(policy.merged_cache) > before:
                    counter.made += 1
                else:
                    counter.reused += 1
            return found

        monkeypatch.setattr(ClassicalPolicy, "_merged_of", counted)
        if off:
            @contextlib.contextmanager
            def unshared(preemptor: Preemptor) -> Iterator[None]:
                yield

            monkeypatch.setattr(Preemptor, "nominating_heads", unshared)


@pytest.mark.parametrize(("reclaim", "within"), RULES)
def test_generated_reclaim_is_the_same_without_the_shared_merge(reclaim: str, within: str) -> None:
    with pytest.MonkeyPatch.context() as mp:
        shared = _Sharing(mp, off=False)
        with_sharing = run_generator(RULED_GENERATOR.format(reclaim=reclaim, within=within))
    with pytest.MonkeyPatch.context() as mp:
        unshared = _Sharing(mp, off=True)
        without = run_generator(RULED_GENERATOR.format(reclaim=reclaim, within=within))
    assert unshared.made == unshared.reused == 0
    assert shared.reused >= 10 and shared.made >= 5, (shared.made, shared.reused)
    assert with_sharing == without
    preempted = json.loads(with_sharing)["events"]
    assert any(e["type"] == "Preempted" for e in preempted)  # the searches found victims


def test_every_scenario_is_the_same_without_the_shared_merge(tmp_path: Path) -> None:
    counted = compare_every_scenario(tmp_path, _Sharing)
    assert sum(c.made for c in counted) > 0
