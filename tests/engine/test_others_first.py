"""A walk without borrowing whose preemptor needs its own victims takes every other queue's first.

``ClassicalPolicy._others_first`` answers such a walk without taking the victims one at a time:
each other queue's valid victims removed at once, its own walked, the others given back in turn
with the slack's shortcut. Every run here is made twice, with it and with it turned off (the walk
one victim at a time, as upstream's loop), and the documents must be identical; the path must have
been taken, or the comparison proves nothing. Random variations of the generator's shape add
nested cohorts (where it must fall back), lending and borrowing limits of every queue.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pykueue.api.loader import load_documents
from pykueue.engine.events import EngineError
from pykueue.engine.preemption import classical
from pykueue.perf.generator import build_manifests, parse_generator
from pykueue.sim.result import build_result
from pykueue.sim.simulator import Simulation
from tests.engine.twice import RULED_GENERATOR, RULES

V2 = "kueue.x-k8s.io/v1beta2"


class _OthersFirst:
    """Counts the walks ``_others_first`` answered and those it left to the whole walk; with
    ``off``, it is never asked."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, off: bool) -> None:
        self.answered = self.declined = 0
        others_first = classical.ClassicalPolicy._others_first
        counter = self

        def counted(policy: Any, *args: Any) -> Any:
            found = others_first(policy, *args)
            if found is None:
                counter.declined += 1
            else:
                counter.answered += 1
            return found

        monkeypatch.setattr(classical.ClassicalPolicy, "_others_first", counted)
        if off:
            monkeypatch.setattr(classical, "_lacks_own_quota", lambda cq, requests: False)


def _both(run: Any) -> tuple[str, str, _OthersFirst]:
    with pytest.MonkeyPatch.context() as mp:
        on = _OthersFirst(mp, off=False)
        first = run()
    with pytest.MonkeyPatch.context() as mp:
        off = _OthersFirst(mp, off=True)
        second = run()
    assert off.answered == off.declined == 0
    return first, second, on


@pytest.mark.parametrize(("reclaim", "within"), RULES)
def test_generated_reclaim_is_the_same_without_others_first(reclaim: str, within: str) -> None:
    text = RULED_GENERATOR.format(reclaim=reclaim, within=within)

    def run() -> str:
        inputs, problems = load_documents(build_manifests(parse_generator(yaml.safe_load(text))), source="generator")
        assert problems == []
        return json.dumps(build_result(Simulation(inputs, record_usage=True).run()))

    first, second, on = _both(run)
    assert first == second
    if within != "Never":  # without own victims no walk lacks its own quota and can still fit
        assert on.answered >= 10, (on.answered, on.declined)


# ------------------------------------------------------------------------------------ random worlds

@st.composite
def _worlds(draw: st.DrawFn) -> list[dict[str, Any]]:
    """The generator's shape (``RULED_GENERATOR``), varied: the rules, each queue's borrowing and lending limits,
    and maybe the second cohort nested in the first (its queues' victims are then deeper than a
    preemptor of the first cohort reaches in one step: the walk decides)."""
    reclaim, within = draw(st.sampled_from(RULES))
    manifests = build_manifests(parse_generator(yaml.safe_load(RULED_GENERATOR.format(reclaim=reclaim, within=within))))
    for doc in manifests:
        if doc["kind"] != "ClusterQueue":
            continue
        quota = doc["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]
        quota.pop("borrowingLimit", None)
        borrowing = draw(st.none() | st.integers(0, 100))
        if borrowing is not None:
            quota["borrowingLimit"] = borrowing
        lending = draw(st.none() | st.integers(0, 20))
        if lending is not None:
            quota["lendingLimit"] = lending
    if draw(st.booleans()):
        manifests.append({"apiVersion": V2, "kind": "Cohort", "metadata": {"name": "cohort-1"},
                          "spec": {"parentName": "cohort-0"}})
    return manifests


def _run_world(manifests: list[dict[str, Any]]) -> str:
    inputs, problems = load_documents(manifests, source="generator")
    assert not problems, problems
    try:
        return json.dumps(build_result(Simulation(inputs, record_usage=True).run()))
    except EngineError as exc:  # a configuration that preempts back and forth: the same error both ways
        return f"error: {exc}"


_TAKEN = {"answered": 0, "declined": 0}


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(_worlds())
def test_random_worlds_are_the_same_without_others_first(manifests: list[dict[str, Any]]) -> None:
    first, second, on = _both(lambda: _run_world(copy.deepcopy(manifests)))
    assert first == second
    _TAKEN["answered"] += on.answered
    _TAKEN["declined"] += on.declined


def test_random_worlds_take_both_ways() -> None:
    """The worlds above reach the path and its fallback (nested cohorts) many times."""
    if _TAKEN["answered"] == 0:  # run alone: play the examples first
        test_random_worlds_are_the_same_without_others_first()
    assert _TAKEN["answered"] >= 100 and _TAKEN["declined"] >= 20, _TAKEN
