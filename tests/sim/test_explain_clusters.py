"""``pykueue explain`` on a MultiKueue input: a manager workload says where MultiKueue has it; a worker's
object is addressed as WORKER:NAMESPACE/NAME; a wrong address is one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pykueue.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "pykueue" / "examples" / "multikueue"
LOST = ROOT / "tests" / "scenarios" / "multikueue_lost_worker_given_up_after_the_timeout.yaml"


def _explain(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    assert main(["explain", *args, "-o", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_manager_workload_says_where_it_ran(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _explain(capsys, "team/train-c", str(EXAMPLE))
    assert doc["state"] == "Finished"
    assert doc["multiKueue"] == {"summary": "finished; it ran in w1", "clusterName": "w1",
                                 "copies": [{"worker": "w1", "state": "Finished"}],
                                 "admittedThrough": [{"time": 60.0, "worker": "w1"}]}


def test_a_workload_waiting_in_the_manager(capsys: pytest.CaptureFixture[str]) -> None:
    """At 30 s train-c waits for the manager's quota: not dispatched yet."""
    doc = _explain(capsys, "team/train-c", str(EXAMPLE), "--until", "30s")
    assert doc["state"] == "Pending" and doc["queue"]["position"] == 0
    assert doc["multiKueue"]["summary"] == "waiting in the manager: it is dispatched once it holds quota there"
    assert doc["multiKueue"]["copies"] == []


def test_a_lost_worker_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inputs = tmp_path / "in.yaml"
    inputs.write_text(LOST.read_text().split("\n---\n", 1)[1])
    doc = _explain(capsys, "team/a", str(inputs), "--until", "60s")
    assert doc["multiKueue"]["summary"] == ("admitted through w1, where its job runs; the manager cannot reach w1 "
                                            "since 30s (workerLostTimeout counts from then)")


def test_a_worker_copy_by_its_address(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _explain(capsys, "w1:team/train-c", str(EXAMPLE))
    assert (doc["cluster"], doc["state"], doc["workload"]) == ("w1", "Finished", "team/train-c")
    assert [h["time"] for h in doc["history"] if h["type"] == "Admitted"] == [60.0]
    assert "multiKueue" not in doc


@pytest.mark.parametrize(("target", "message"), [
    ("w3:team/train-c", "w3:team/train-c: no worker cluster 'w3' (declared: w1, w2)"),
    ("w2:team/train-c", "w2:team/train-c: worker w2 holds no copy of team/train-c at the end of the run "
                        "(see pykueue explain team/train-c for where it went)"),
    ("team/nope", "no managed Job or Workload team/nope in the manager's objects"),
])
def test_a_wrong_address_is_one_line(target: str, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", target, str(EXAMPLE)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == f"pykueue explain: error: {message}\n"


def test_the_table_ends_with_where_it_ran(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["explain", "team/train-b", str(EXAMPLE), "-o", "table"]) == 0
    out = capsys.readouterr().out
    assert out.endswith("MultiKueue  finished; it ran in w2\n  copy in w2: Finished\n  admitted through w2 at 10s\n")
