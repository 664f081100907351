"""``pykueue explain`` on a workload whose lost worker came back with an older admission: the job runs
in the returned worker while ``clusterName`` keeps naming the other (immutable once set), and the
explanation says both."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pykueue.cli import main

BACK = Path(__file__).resolve().parents[1] / "scenarios" / "multikueue_lost_worker_back_with_an_older_admission.yaml"
WHY = "(clusterName still names w2: w1's copy, admitted first, won back on its return, and clusterName is " \
      "immutable once set)"


def _explain(tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    inputs = tmp_path / "in.yaml"
    inputs.write_text(BACK.read_text().split("\n---\n", 1)[1])
    assert main(["explain", "team/a", str(inputs), *args, "-o", "json"]) == 0
    return json.loads(capsys.readouterr().out)["multiKueue"]


def test_while_it_runs_the_job_and_the_cluster_name_differ(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = _explain(tmp_path, capsys, "--until", "250s")
    assert doc["summary"] == f"admitted through w2; its job runs in w1 {WHY}"
    assert doc["clusterName"] == "w2"
    assert doc["copies"] == [{"worker": "w1", "state": "Admitted"}]  # w2's was removed at 200
    assert doc["admittedThrough"] == [{"time": 0.0, "worker": "w1"}, {"time": 90.0, "worker": "w2"}]


def test_once_finished_it_ran_in_the_returned_worker(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = _explain(tmp_path, capsys)
    assert doc["summary"] == f"finished; it ran in w1 {WHY}"
    assert doc["clusterName"] == "w2"
