"""``pykueue explain``: the history, queue position, quota view and what-if of one workload."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pykueue.cli import main
from tests.objects import workload_yaml

SCENARIOS = Path(__file__).parent.parent / "scenarios"

QUEUES = """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default-flavor}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: ["cpu"]
    flavors: [{name: default-flavor, resources: [{name: cpu, nominalQuota: 4}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: q, namespace: default}
spec: {clusterQueue: cq}
"""


def workload(name: str, cpu: str, count: int, notes: str) -> str:
    return workload_yaml(name, cpu=cpu, count=count, notes=notes)


@pytest.fixture
def inputs(tmp_path: Path) -> Path:
    """running holds 3 of 4 cpu for 10 minutes; waiting (3 cpu, at 5s) and later (2 cpu, at 6s) queue
    behind it: waiting is first in line and 2 cpu short, later second and 1 cpu short."""
    f = tmp_path / "in.yaml"
    f.write_text(QUEUES + workload("running", "1", 3, "pykueue.dev/runtime: 10m")
                 + workload("waiting", "1", 3, "pykueue.dev/arrival: 5s")
                 + workload("later", "2", 1, "pykueue.dev/arrival: 6s"))
    return f


def explain_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    assert main(["explain", *argv, "-o", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_pending_workload_shows_position_quota_and_what_is_missing(inputs: Path, capsys) -> None:
    doc = explain_json(capsys, "default/later", str(inputs), "--until", "1m")
    assert doc["state"] == "Pending"
    assert doc["reason"] == "WaitingForQuota"
    assert doc["message"] == ("couldn't assign flavors to pod set main: insufficient unused quota for cpu in "
                              "flavor default-flavor, 1 more needed")
    # second in line behind waiting: position 1, counted from 0 as kueuectl and `pykueue pending` count
    assert doc["queue"] == {"position": 1, "positionInLocalQueue": 1, "length": 2, "ahead": ["default/waiting"],
                            "aheadCount": 1}
    [row] = doc["quota"]
    assert (row["requested"], row["nominal"], row["used"], row["available"], row["atMost"]) == ("2", "4", "3", "1", "4")
    assert any(line.startswith("1 more cpu free in flavor default-flavor") for line in doc["toBeAdmitted"])
    assert any("1 workload(s) ahead" in line for line in doc["toBeAdmitted"])


def test_a_request_beyond_what_the_queue_can_ever_have_says_so(tmp_path: Path, capsys) -> None:
    f = tmp_path / "in.yaml"
    f.write_text(QUEUES + workload("huge", "5", 1, "pykueue.dev/arrival: 0s"))
    doc = explain_json(capsys, "huge", str(f))
    assert doc["reason"] == "ExceedsMaxQuota"
    assert doc["toBeAdmitted"] == [
        "more cpu quota: it asks for 5 and the ClusterQueue can never have more than 4 in flavor "
        "default-flavor (nominal quota plus what it may borrow)"
    ]


def test_history_shows_evictions_and_the_backoff_before_each_requeue(tmp_path: Path, capsys) -> None:
    text = (SCENARIOS / "lifecycle_pods_ready_timeout_backoff_deactivation.yaml").read_text()
    f = tmp_path / "in.yaml"
    f.write_text(text.partition("\n---\n")[2])
    doc = explain_json(capsys, "default/all-or-nothing-job", str(f))
    evictions = [(h["time"], h["reason"], h.get("requeuedAfter")) for h in doc["history"] if h["type"] == "Evicted"]
    assert evictions == [(120.0, "PodsReadyTimeout", 60.0), (300.0, "PodsReadyTimeout", 120.0),
                         (540.0, "PodsReadyTimeout", 240.0), (900.0, "Deactivated", None)]
    assert doc["state"] == "Inactive"
    assert doc["message"] == "The workload is deactivated due to exceeding the maximum number of re-queuing retries"
    assert "spec.active set back to true" in doc.get("toBeAdmitted", ["spec.active set back to true"])


def test_what_if_reports_when_and_on_which_flavor(inputs: Path, tmp_path: Path, capsys) -> None:
    job = tmp_path / "job.yaml"
    job.write_text("""\
apiVersion: batch/v1
kind: Job
metadata:
  name: new-job
  namespace: default
  labels: {kueue.x-k8s.io/queue-name: q}
  annotations: {pykueue.dev/arrival: 30s}
spec:
  parallelism: 1
  completions: 1
  suspend: true
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
""")
    doc = explain_json(capsys, "--what-if", str(job), str(inputs))
    assert doc["workload"] == "default/new-job"
    # running holds 3 cpu until 600s; waiting (3) goes first then, and later (2) after it: the
    # new job's 1 cpu fits beside running's 3 at once, at its arrival.
    assert doc["firstAdmittedAt"] == 30.0
    assert doc["flavors"] == {"cpu": "default-flavor"}
    assert main(["explain", "--what-if", str(job), str(inputs), "-o", "table"]) == 0
    out = capsys.readouterr().out
    assert "admitted at 30s on cpu=default-flavor" in out


def test_an_unknown_workload_is_one_line_with_a_suggestion(inputs: Path, capsys) -> None:
    assert main(["explain", "default/waitng", str(inputs)]) == 2
    err = capsys.readouterr().err
    assert err.strip() == ("pykueue explain: error: no managed Job or Workload default/waitng in the inputs; "
                           "did you mean default/waiting?")


def test_table_output_fits_80_columns(inputs: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["explain", "default/later", str(inputs), "--until", "1m", "-o", "table"]) == 0
    out = capsys.readouterr().out
    assert "position 1 in ClusterQueue cq (2 pending), 1 in LocalQueue q" in " ".join(out.split())
    assert "ahead: default/waiting" in out
    assert max(len(line) for line in out.splitlines()) <= 80
    assert [line for line in out.splitlines() if line != line.rstrip()] == []  # no trailing spaces


def test_the_flavor_that_could_ever_fit_is_the_one_named(capsys) -> None:
    """b-sweep asks for 8 GPUs: gpu-a100 can never hold that (at most 4), gpu-t4 can (at most 8)."""
    from pykueue.demo import demo_path

    doc = explain_json(capsys, "team-b/b-sweep", demo_path(), "--until", "20s")
    assert doc["toBeAdmitted"][0].startswith("8 more nvidia.com/gpu free in flavor gpu-t4:")


def test_the_readme_example_is_real_output(capsys, monkeypatch) -> None:
    from rich.console import Console

    from pykueue.demo import demo_path
    from pykueue.sim import table

    readme = (Path(__file__).parent.parent.parent / "README.md").read_text()
    marker = "$ pykueue explain team-b/b-train-2 pykueue/examples/demo.yaml --until 20s\n"
    shown = readme.split(marker, 1)[1].split("```", 1)[0]
    monkeypatch.setattr(table, "terminal", lambda: Console(width=80, force_terminal=False, color_system=None))
    assert main(["explain", "team-b/b-train-2", demo_path(), "--until", "20s", "-o", "table"]) == 0
    out = capsys.readouterr().out
    assert out.strip() == shown.strip()  # as printed: no line ends in spaces
