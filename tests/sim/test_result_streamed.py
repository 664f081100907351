"""The streamed result (entries made while written, the summary folded as they pass) has exactly the
bytes of the built one, in JSON and YAML, and holds no entry it has written."""

from __future__ import annotations

import gc
import io
import weakref
from collections.abc import Callable

import pytest

from pykueue.api.loader import load_documents
from pykueue.perf.generator import build_manifests, parse_generator
from pykueue.perf.run import summary_of
from pykueue.perf.summary import ManifestFacts, Recorder, manifest_facts
from pykueue.sim.entries import Entries
from pykueue.sim.result import build_result, streamed_result
from pykueue.sim.result_json import write_json
from pykueue.sim.result_yaml import write_yaml
from pykueue.sim.simulator import Run, Simulation

# Two queues of one cohort, 3 cpu each, borrowing; small and large workloads of two priorities, so the
# run has preemptions, evictions, re-admissions and waiting (about 100 workloads and 400 events).
WORLD = {
    "cohorts": [{
        "className": "co", "count": 1,
        "queuesSets": [{
            "className": "cq", "count": 2, "nominalQuota": 3, "borrowingLimit": 3,
            "reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority",
            "workloadsSets": [
                {"count": 30, "creationIntervalMs": 100,
                 "workloads": [{"className": "small", "runtimeMs": 300, "priority": 50, "request": 1}]},
                {"count": 20, "creationIntervalMs": 250,
                 "workloads": [{"className": "large", "runtimeMs": 700, "priority": 200, "request": 3}]},
            ],
        }],
    }]
}


def _run() -> tuple[Run, ManifestFacts]:
    manifests = build_manifests(parse_generator(WORLD))
    inputs, problems = load_documents(manifests, source="world")
    assert not problems
    return Simulation(inputs).run(), manifest_facts(manifests)


@pytest.mark.parametrize("writer", [write_json, write_yaml], ids=["json", "yaml"])
def test_streamed_result_is_the_built_result_byte_for_byte(writer: Callable[..., None]) -> None:
    run, facts = _run()
    recorder = Recorder(facts)
    built = build_result(run)
    built["summary"] = summary_of(built, facts)
    assert len(built["workloads"]) == 100
    assert sum(e["type"] == "Evicted" for e in built["events"]) > 0  # the world preempts
    expected, streamed = io.StringIO(), io.StringIO()
    writer(built, expected)
    writer(streamed_result(run, recorder), streamed)
    assert streamed.getvalue() == expected.getvalue()
    assert recorder.done == built["summary"]
    assert recorder.done["workloadClasses"]["small"]["count"] == 60
    assert recorder.done["workloadClasses"]["large"]["count"] == 40


def test_without_a_recorder_the_summary_is_empty_as_built() -> None:
    run, _ = _run()
    expected, streamed = io.StringIO(), io.StringIO()
    write_json(build_result(run), expected)
    write_json(streamed_result(run), streamed)
    assert streamed.getvalue() == expected.getvalue()
    assert streamed.getvalue().endswith('  "summary": {}\n}\n')


def test_an_empty_entries_is_written_as_an_empty_list() -> None:
    items = [("workloads", Entries(0, lambda: iter(()))), ("n", 1)]
    for writer, text in ((write_json, '{\n  "workloads": [],\n  "n": 1\n}\n'), (write_yaml, "workloads: []\nn: 1\n")):
        out = io.StringIO()
        writer(iter(items), out)
        assert out.getvalue() == text


class _Entry(dict):
    """A dict that can be watched for being freed."""


def test_entries_written_are_not_held() -> None:
    refs: list[weakref.ref] = []

    def make():
        for i in range(500):
            entry = _Entry(name=f"w{i}", n=i)
            refs.append(weakref.ref(entry))
            yield entry

    out = io.StringIO()
    write_json(iter([("workloads", Entries(500, make))]), out)
    gc.collect()
    assert len(refs) == 500
    assert sum(r() is not None for r in refs) == 0
    assert out.getvalue().count('"name": "w') == 500


def test_entries_not_known_finite_are_checked_for_nan() -> None:
    import json

    entries = [{"t": float("nan") if i == 3 else i / 4, "r": None} for i in range(10)]
    out = io.StringIO()
    write_json(iter([("events", Entries(10, lambda: iter(entries)))]), out)
    assert out.getvalue() == json.dumps({"events": entries}, indent=2, ensure_ascii=False) + "\n"
    assert '"t": NaN' in out.getvalue()


def test_streamed_entries_share_one_assignments_list_per_admission_and_the_built_result_does_not() -> None:
    """The streaming writers may read one podSetAssignments list in many entries (made once per
    admission); ``build_result`` gives each entry its own, or ``yaml.safe_dump`` would write anchors."""
    import yaml

    run, _ = _run()
    items = dict(streamed_result(run))
    entries = [*items["workloads"], *items["events"]]
    lists = [e["podSetAssignments"] for e in entries if "podSetAssignments" in e]
    lists += [e["admission"]["podSetAssignments"] for e in entries if e.get("admission")]
    assert len(lists) > 100
    assert len({id(x) for x in lists}) < len(lists) / 10  # a few admissions, shared
    built = build_result(run)
    built_lists = [e["admission"]["podSetAssignments"] for e in built["workloads"] if e["admission"]]
    built_lists += [e["podSetAssignments"] for e in built["events"] if "podSetAssignments" in e]
    assert len({id(x) for x in built_lists}) == len(built_lists)
    assert "&id" not in yaml.safe_dump(built, sort_keys=False)
