"""The simulate contract seen from outside: exit codes, streams, formats, determinism."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
import yaml

from pykueue.api.clusters import load_clusters
from pykueue.api.durations import parse_duration
from pykueue.api.loader import load_paths
from pykueue.sim.multicluster import MultiSimulation
from pykueue.sim.multicluster_result import build_multi_result
from pykueue.sim.result import build_result, to_json, to_yaml, write_json, write_yaml
from pykueue.sim.simulator import Simulation

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "tests" / "scenarios" / "preempt_reclaim_lent_quota.yaml"
DEMO = ROOT / "pykueue" / "examples" / "demo.yaml"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pykueue.cli", *args], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)


def inputs_of(path: Path, tmp: Path) -> Path:
    """A scenario file without its leading Scenario document."""
    out = tmp / path.name
    out.write_text(path.read_text().partition("\n---\n")[2])
    return out


def test_json_is_the_default_off_a_terminal_and_byte_identical(tmp_path: Path) -> None:
    f = inputs_of(SCENARIO, tmp_path)
    a, b = run("simulate", str(f)), run("simulate", str(f))
    assert a.returncode == 0 and a.stderr == ""
    assert a.stdout == b.stdout
    doc = json.loads(a.stdout)
    assert doc["apiVersion"] == "pykueue.dev/v1alpha1" and doc["kind"] == "SimulationResult"
    assert list(doc) == ["apiVersion", "kind", "endTime", "workloads", "events", "clusterQueues", "summary"]


def test_yaml_output_has_the_same_document(tmp_path: Path) -> None:
    f = inputs_of(SCENARIO, tmp_path)
    as_json = json.loads(run("simulate", str(f), "--output", "json").stdout)
    as_yaml = yaml.safe_load(run("simulate", str(f), "--output", "yaml").stdout)
    assert as_yaml == as_json


def test_until_stops_the_clock(tmp_path: Path) -> None:
    f = inputs_of(SCENARIO, tmp_path)
    doc = json.loads(run("simulate", str(f), "--until", "4s").stdout)
    assert doc["endTime"] == 4.0
    assert all(e["time"] <= 4.0 for e in doc["events"])
    assert not any(e["type"] == "Preempted" for e in doc["events"])  # the reclaim happens at 5s


def test_invalid_input_exit_2_one_line_per_problem_nothing_on_stdout(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: cq}\nspec:\n"
        "  resourceGroups:\n  - coveredResources: [cpu]\n    flavors:\n"
        "    - name: f\n      resources: [{name: cpu, nominalQuota: 1, borrowingLimit: 1}]\n"
        "---\napiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n"
    )
    proc = run("simulate", str(bad))
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(f"{bad}:1: ClusterQueue cq: spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit: ")
    assert lines[1].startswith(f"{bad}:2: ")
    assert "Traceback" not in proc.stderr


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    proc = run("simulate", str(tmp_path / "nope.yaml"))
    assert proc.returncode == 2 and proc.stdout == "" and "nope.yaml" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_bad_until_is_a_clear_error(tmp_path: Path) -> None:
    proc = run("simulate", str(inputs_of(SCENARIO, tmp_path)), "--until", "soon")
    assert proc.returncode == 2 and proc.stdout == "" and "--until" in proc.stderr


def test_validate_reports_ok_and_problems(tmp_path: Path) -> None:
    ok = run("validate", str(DEMO))
    assert ok.returncode == 0
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: Q, namespace: ns}\n"
                   "spec: {clusterQueue: cq}\n")
    proc = run("validate", str(bad))
    assert proc.returncode == 2 and "metadata.name" in proc.stderr


def test_table_output_fits_80_columns(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "pykueue.cli", "simulate", str(DEMO), "--output", "table"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT, env={"COLUMNS": "80", "PATH": ""})
    assert proc.returncode == 0
    assert "Timeline" in proc.stdout and "a-urgent" in proc.stdout
    assert max(len(line) for line in proc.stdout.splitlines()) <= 80


def test_demo_runs_without_a_terminal() -> None:
    proc = run("demo", "--no-live")
    assert proc.returncode == 0
    assert "team-a/a-urgent" in proc.stdout and "Preempted" in proc.stdout


def test_demo_first_names_its_file_and_shows_the_quotas_and_workloads_it_plays() -> None:
    """Read off pykueue/examples/demo.yaml: both teams have 16 cpu and 4 T4 GPUs, then 16 cpu and 2
    A100s; a-urgent (priority 1000, 1 pod of 8 cpu and 4 GPUs) arrives at 15s and runs 15s."""
    proc = run("demo", "--no-live")
    assert proc.returncode == 0
    lines = [line.rstrip() for line in proc.stdout.splitlines()]
    assert lines[0] == "Playing pykueue/examples/demo.yaml (pykueue simulate reads the same file)"
    setup = lines[:lines.index("Timeline")]
    for team in ("team-a", "team-b"):
        at = setup.index(f"  ClusterQueue {team} in cohort research, flavors in the order it tries them:")
        assert setup[at + 1:at + 3] == ["    gpu-t4: cpu=16, nvidia.com/gpu=4", "    gpu-a100: cpu=16, nvidia.com/gpu=2"]
    urgent = next(i for i, line in enumerate(setup) if line.startswith("  team-a/a-urgent:"))
    shown = " ".join(" ".join(setup[urgent:urgent + 2]).split())  # one line, or wrapped in two
    assert shown == "team-a/a-urgent: at 15s asks cpu=8, nvidia.com/gpu=4, runs 15s, priority 1000"


def test_demo_setup_shows_borrowing_and_lending_limits(tmp_path: Path) -> None:
    from pykueue.demo import setup_lines

    f = tmp_path / "limits.yaml"
    f.write_text(
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: cq}\nspec:\n"
        "  cohortName: c\n  namespaceSelector: {}\n  resourceGroups:\n  - coveredResources: [cpu]\n    flavors:\n"
        "    - {name: f, resources: [{name: cpu, nominalQuota: 10, borrowingLimit: 2, lendingLimit: 500m}]}\n")
    inputs, problems = load_paths([f])
    assert problems == []
    assert setup_lines(inputs, str(f))[3:5] == [
        "  ClusterQueue cq in cohort c, flavors in the order it tries them:",
        "    f: cpu=10 (borrows at most 2 cpu; lends at most 500m cpu)",
    ]


def _large_result(n: int) -> dict[str, Any]:
    """A result shaped like ``build_result``'s, which shares no object between entries (a shared one
    would be an anchor in ``to_yaml`` and a copy in the streamed YAML)."""
    workloads = [
        {"kind": "Workload", "namespace": "ns", "name": f"w{i}", "queueName": "lq", "clusterQueue": "cq",
         "priority": 0, "state": "Admitted",
         "admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "main", "count": 1, "flavors": {"cpu": "f"}}]},
         "createdAt": 0.0, "admittedAt": 1.0,
         "finishedAt": None, "evictions": 0, "reason": None}
        for i in range(n)
    ]
    events = [{"time": i / 10, "type": "Admitted", "workload": f"ns/w{i}", "clusterQueue": "cq"} for i in range(n)]
    return {"apiVersion": "pykueue.dev/v1alpha1", "kind": "SimulationResult", "endTime": 1.0,
            "workloads": workloads, "events": events, "clusterQueues": [], "summary": {"é": [1, {}]}}


class _Sink:
    """A stdout that keeps only how much it was given, and the largest single write."""

    def __init__(self) -> None:
        self.size = self.largest = 0

    def write(self, text: str) -> int:
        self.size += len(text)
        self.largest = max(self.largest, len(text))
        return len(text)


def test_json_and_yaml_are_streamed_not_built_whole() -> None:
    """A million workloads made a result string of several GB; the writers must hold one piece at a
    time (traced peak a fraction of the text) and write it in bounded pieces."""
    result = _large_result(3000)
    for write, whole in ((write_json, to_json), (write_yaml, to_yaml)):
        text = whole(result)
        sink = _Sink()
        tracemalloc.start()
        try:
            write(result, sink)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert sink.size == len(text)
        assert sink.largest <= 70_000 and peak < len(text) / 3, (write.__name__, sink.largest, peak, len(text))
        out = io.StringIO()
        write(result, out)
        assert out.getvalue() == text


SCENARIOS = sorted((ROOT / "tests" / "scenarios").glob("*.yaml"))


# Inputs meant to be refused (exit 2) or to stop unsettled (exit 3) have no result to stream; their
# exit status is checked by tests/test_scenarios.py.
SETTLING = [p for p in SCENARIOS if yaml.safe_load(p.read_text().partition("\n---\n")[0]).get("exitCode", 0) == 0]


@pytest.mark.parametrize("path", SETTLING, ids=[p.stem for p in SETTLING])
def test_streamed_output_is_byte_identical_on_every_scenario(path: Path, tmp_path: Path) -> None:
    meta = yaml.safe_load(path.read_text().partition("\n---\n")[0])
    inputs, clusters, problems = load_clusters([str(inputs_of(path, tmp_path))])
    assert problems == []
    until = parse_duration(str(meta["until"])) if "until" in meta else None
    if clusters is None:
        result = build_result(Simulation(inputs, until=until).run())
    else:  # MultiKueue: the manager and its workers
        result = build_multi_result(MultiSimulation(clusters, until=until).run())
    as_json, as_yaml = io.StringIO(), io.StringIO()
    write_json(result, as_json)
    write_yaml(result, as_yaml)
    assert as_json.getvalue() == json.dumps(result, indent=2, ensure_ascii=False) + "\n"
    assert as_yaml.getvalue() == yaml.safe_dump(result, sort_keys=False, allow_unicode=True, width=120)


_COLLECTIONS_WHILE_LOADING = """
import gc, sys
from pykueue import cli
seen = []
gc.callbacks.append(lambda phase, info: seen.append(info["generation"]) if phase == "start" else None)
rarely, loaded = cli._collect_rarely, cli._loaded
def at_start():
    rarely()
    seen.clear()
def at_loaded():
    print("collections while loading:", len(seen), "collector on:", gc.isenabled(), file=sys.stderr)
    loaded()
    print("frozen:", gc.get_freeze_count() > 0, "collector on:", gc.isenabled(), file=sys.stderr)
cli._collect_rarely, cli._loaded = at_start, at_loaded
sys.argv[0] = "pykueue"
sys.exit(cli.main())
"""


def test_loading_leaves_no_young_generation_for_the_collector() -> None:
    """The collector is paused from the start of loading until what was loaded is frozen: a collection
    right after loading would traverse every object the inputs are made of, for no garbage."""
    generator = ROOT / "pykueue" / "examples" / "perf" / "baseline" / "generator.yaml"
    out = subprocess.run([sys.executable, "-c", _COLLECTIONS_WHILE_LOADING, "simulate", "--generator", str(generator),
                          "--until", "5s", "--output", "json"], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stderr.splitlines() == ["collections while loading: 0 collector on: False", "frozen: True collector on: True"]
