"""``pykueue simulate`` with worker clusters (MultiKueue): the input's marking, its errors, the
documented example, and a single-cluster input left exactly as it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pykueue.api.clusters import load_clusters
from pykueue.api.loader import load_paths
from pykueue.cli import main
from pykueue.demo import demo_path
from pykueue.sim.multicluster import MultiSimulation
from pykueue.sim.result import build_result, to_json
from pykueue.sim.simulator import Simulation

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "pykueue" / "examples" / "multikueue"


def test_the_documented_dispatch_table_is_real_output(capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    doc = (ROOT / "docs" / "simulate.md").read_text()
    block = doc.split("-o table`\nshows, after the manager's tables:\n\n```text\n", 1)[1].split("\n```", 1)[0]
    assert main(["simulate", str(EXAMPLE), "-o", "table"]) == 0
    out = capsys.readouterr().out
    start = out.index("MultiKueue dispatch\n")
    assert out[start:].split("\n\n", 1)[0] == block
    assert "─ worker w1 ─" in out and "─ worker w2 ─" in out


def test_the_example_in_json(capsys: pytest.CaptureFixture[str]) -> None:
    """train-a ties at 0 s and goes to w1, train-b finds w1 full (w2), train-c waits in the manager's
    queue until train-a's 4 cpu come back at 60 s, when only w1 has room."""
    assert main(["simulate", str(EXAMPLE), "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    ran = {w["name"]: (w["clusterName"], w["admittedAt"], w["finishedAt"]) for w in doc["workloads"]}
    assert ran == {"train-a": ("w1", 0.0, 60.0), "train-b": ("w2", 10.0, 70.0), "train-c": ("w1", 60.0, 90.0)}
    assert list(doc) == ["apiVersion", "kind", "endTime", "workloads", "events", "clusterQueues", "workers",
                         "summary"]
    assert doc["endTime"] == 90.0
    assert [w["name"] for w in doc["workers"]] == ["w1", "w2"]
    w1 = {w["name"]: w for w in doc["workers"][0]["workloads"]}
    assert sorted(w1) == ["train-a", "train-c"] and w1["train-c"]["createdAt"] == 60.0
    admitted = [(e["workload"], e["clusterName"]) for e in doc["events"] if e["type"] == "Admitted"]
    assert admitted == [("team/train-a", "w1"), ("team/train-b", "w2"), ("team/train-c", "w1")]


def test_a_single_cluster_input_is_read_and_printed_as_before(capsys: pytest.CaptureFixture[str]) -> None:
    inputs, clusters, problems = load_clusters([demo_path()])
    assert clusters is None and not problems
    before, _ = load_paths([demo_path()])
    assert to_json(build_result(Simulation(inputs).run())) == to_json(build_result(Simulation(before).run()))
    assert main(["simulate", demo_path(), "-o", "json"]) == 0
    assert capsys.readouterr().out == to_json(build_result(Simulation(before).run()))


def test_a_cluster_name_that_is_not_declared_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "w3.yaml"
    bad.write_text("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\n"
                   "metadata: {name: default, annotations: {pykueue.dev/cluster: w3}}\n")
    assert main(["simulate", str(EXAMPLE), str(bad), "-o", "json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [
        f"{bad}:1: ResourceFlavor default: metadata.annotations[pykueue.dev/cluster]: 'w3' names no "
        "MultiKueueCluster among the manager's objects (declared: w1, w2)"]


def test_a_worker_object_is_checked_as_in_its_own_cluster(tmp_path: Path) -> None:
    """Names clash within one cluster only; a worker's bad object is reported at its document."""
    extra = tmp_path / "extra.yaml"
    extra.write_text("""apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: solo, annotations: {pykueue.dev/cluster: w2}}
spec: {namespaceSelector: {}, resourceGroups: [{coveredResources: [cpu], flavors: [{name: default, resources: [{name: cpu, nominalQuota: -1}]}]}]}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default, annotations: {pykueue.dev/cluster: w2}}
""")
    _, clusters, problems = load_clusters([EXAMPLE, extra])
    assert [(p.source.file, p.source.doc, p.kind, p.name) for p in problems] == [
        (str(extra), 1, "ClusterQueue", "solo"), (str(extra), 2, "ResourceFlavor", "default")]
    assert "nominalQuota" in problems[0].path
    assert "Duplicate" in problems[1].message or "duplicate" in problems[1].message


def test_report_is_refused_for_several_clusters(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", str(EXAMPLE), "--report", str(tmp_path / "r.html")]) == 2
    assert "worker clusters" in capsys.readouterr().err


def test_until_cuts_every_cluster(capsys: pytest.CaptureFixture[str]) -> None:
    """At 30 s train-c waits in the manager's queue (not dispatched: it holds no quota yet)."""
    assert main(["simulate", str(EXAMPLE), "--until", "30s", "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    c = next(w for w in doc["workloads"] if w["name"] == "train-c")
    assert (c["state"], c["reason"], c["clusterName"]) == ("Pending", "WaitingForQuota", None)
    assert doc["endTime"] == 30.0
    assert all(w["name"] != "train-c" for worker in doc["workers"] for w in worker["workloads"])


def test_the_dispatch_settles_or_stops(tmp_path: Path) -> None:
    """The example runs to its end within a step budget (a dispatch that never settled would not)."""
    _, clusters, _ = load_clusters([EXAMPLE])
    assert clusters is not None
    run = MultiSimulation(clusters, step_budget=50).run()
    assert run.end_us == 90_000_000
    assert run.cluster_name == {"team/train-a": "w1", "team/train-b": "w2", "team/train-c": "w1"}


def test_validate_reads_the_clusters_as_simulate_does(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(EXAMPLE)]) == 0
    assert capsys.readouterr().out == "1 path(s) valid\n"
    bad = tmp_path / "w3.yaml"
    bad.write_text("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\n"
                   "metadata:\n  name: default\n  annotations: {pykueue.dev/cluster: w3}\n")
    assert main(["validate", str(EXAMPLE), str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{bad}:5: ResourceFlavor default: metadata.annotations[pykueue.dev/cluster]: 'w3' names no")


def test_the_timeline_says_which_worker_admitted(capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["simulate", str(EXAMPLE), "-o", "table"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.split("\n\n", 1)[0].splitlines()]
    assert ["60s", "Admitted", "team/train-c", "research", "default", "on", "w1"] in rows
    assert ["60s", "QuotaReserved", "team/train-c", "research", "default"] in rows


def test_a_workload_deleted_in_the_manager_leaves_its_worker(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """train-a runs on w1 from 0; deleted in the manager at 30 s, its copy goes from w1 at once, so
    train-c (waiting in the manager for quota) is admitted at 30 s on w1 instead of 60 s."""
    manager = (EXAMPLE / "manager.yaml").read_text()
    without_a = manager.replace("  annotations: {pykueue.dev/runtime: 60s}\n", "  annotations: {pykueue.dev/delete-at: 30s}\n", 1)
    assert without_a != manager
    (tmp_path / "manager.yaml").write_text(without_a)
    assert main(["simulate", str(tmp_path / "manager.yaml"), str(EXAMPLE / "workers.yaml"), "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    w1 = next(w for w in doc["workers"] if w["name"] == "w1")
    assert [w["name"] for w in w1["workloads"]] == ["train-c"]
    c = next(w for w in doc["workloads"] if w["name"] == "train-c")
    assert (c["clusterName"], c["admittedAt"], c["finishedAt"]) == ("w1", 30.0, 60.0)
