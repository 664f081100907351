"""The simulate contract seen from outside: exit codes, streams, formats, determinism."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

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
