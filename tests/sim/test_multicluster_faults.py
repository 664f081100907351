"""``pykueue simulate`` with worker clusters: lost and deleted workers, the annotations that script them,
and the managedBy rule (the scenarios in tests/scenarios/multikueue_*.yaml play the whole runs)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from pykueue.api.clusters import load_clusters
from pykueue.api.timing import parse_nominate, parse_unreachable
from pykueue.cli import main
from pykueue.sim.multicluster import unmanaged

ROOT = Path(__file__).resolve().parents[2]
LOST = ROOT / "tests" / "scenarios" / "multikueue_lost_worker_given_up_after_the_timeout.yaml"


def _inputs(tmp_path: Path, old: str, new: str) -> Path:
    """The lost-worker scenario's inputs with one text replaced."""
    text = LOST.read_text().split("\n---\n", 1)[1]
    assert old in text
    path = tmp_path / "in.yaml"
    path.write_text(text.replace(old, new))
    return path


def _run(path: Path, capsys: pytest.CaptureFixture[str]) -> dict:
    assert main(["simulate", str(path), "-o", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def _admissions(doc: dict) -> list[tuple[float, str, str | None]]:
    return [(e["time"], e["type"], e.get("clusterName")) for e in doc["events"]
            if e["workload"] == "team/a" and e["type"] in ("Admitted", "Evicted", "Finished")]


def test_a_deleted_worker_is_lost_for_good(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Its MultiKueueCluster deleted at 30s while the config still lists it: the controller cannot reach
    it and waits workerLostTimeout (60s) as for any lost worker: a is given up at 90, runs on w2."""
    doc = _run(_inputs(tmp_path, 'pykueue.dev/unreachable: "30s-"', "pykueue.dev/delete-at: 30s"), capsys)
    assert _admissions(doc) == [(0.0, "Admitted", "w1"), (90.0, "Evicted", None), (90.0, "Admitted", "w2"),
                                (390.0, "Finished", None)]


def test_a_worker_seen_again_restarts_the_lost_wait(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Lost at 30, back at 50 (its copy still admitted: nothing changes), lost again at 60: the 60s wait
    counts from 60, so a is given up at 120, not at 90."""
    doc = _run(_inputs(tmp_path, '"30s-"', '"30s-50s,60s-"'), capsys)
    assert _admissions(doc) == [(0.0, "Admitted", "w1"), (120.0, "Evicted", None), (120.0, "Admitted", "w2"),
                                (420.0, "Finished", None)]


def test_the_lost_wait_is_the_configured_timeout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = _run(_inputs(tmp_path, "workerLostTimeout: 60s", "workerLostTimeout: 100s"), capsys)
    assert _admissions(doc)[1] == (130.0, "Evicted", None)


def test_windows_and_a_deletion_make_one_outage_list(tmp_path: Path) -> None:
    path = _inputs(tmp_path, 'pykueue.dev/unreachable: "30s-"',
                   'pykueue.dev/unreachable: "10s-20s,40s-80s,90s-100s", pykueue.dev/delete-at: 60s')
    _, clusters, problems = load_clusters([path])
    assert not problems and clusters is not None
    assert clusters.federation.unreachable == {"w1": ((10.0, 20.0), (40.0, math.inf))}


@pytest.mark.parametrize(("value", "why"), [
    ("30s", "expected START-END"), ("1m-30s", "later than the start"), ("10s-20s,15s-30s", "increasing order"),
    ("x-", "x-"), ("", "expected START-END"),
])
def test_bad_unreachable_windows(value: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        parse_unreachable(value)


def test_nominate_script() -> None:
    assert parse_nominate("w2@0s; w1, w2@5m") == ((("w2",), 0.0), (("w1", "w2"), 300.0))
    with pytest.raises(ValueError, match="increasing"):
        parse_nominate("w1@5m;w2@1m")
    with pytest.raises(ValueError, match="WORKER"):
        parse_nominate("w1")


def test_the_annotations_are_refused_on_other_kinds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _inputs(tmp_path, "annotations: {pykueue.dev/runtime: 300s}",
                   'annotations: {pykueue.dev/runtime: 300s, pykueue.dev/unreachable: "1s-"}')
    assert main(["simulate", str(path), "-o", "json"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [f"{path}:9: Job team/a: metadata.annotations[pykueue.dev/unreachable]: only a "
                   "MultiKueueCluster can carry pykueue.dev/unreachable"]
    path = _inputs(tmp_path, 'pykueue.dev/unreachable: "30s-"', 'pykueue.dev/unreachable: "soon"')
    assert main(["simulate", str(path), "-o", "json"]) == 2
    assert "MultiKueueCluster w1: metadata.annotations[pykueue.dev/unreachable]: 'soon': expected" in \
        capsys.readouterr().err


@pytest.mark.parametrize(("kind", "managed_by", "rejected"), [
    ("Job", None, False), ("Job", "kueue.x-k8s.io/multikueue", False), ("Job", "kubernetes.io/job-controller", False),
    ("JobSet", "jobset.sigs.k8s.io/jobset-controller", False), ("RayJob", "ray.io/kuberay-operator", False),
    ("RayCluster", "ray.io/kuberay-operator", False), ("Pod", None, False),
    # the webhook replaces only the kind's own controller: another kind's stays, and is refused
    ("Job", "jobset.sigs.k8s.io/jobset-controller", True), ("Job", "example.com/x", True),
    ("JobSet", "example.com/x", True),
])
def test_managed_by(kind: str, managed_by: str | None, rejected: bool) -> None:
    why = unmanaged(managed_by, kind)
    assert (why is not None) == rejected
    if rejected:
        assert why == ('The owner is not managed by Kueue: Expecting spec.managedBy to be '
                       f'"kueue.x-k8s.io/multikueue" not "{managed_by}"')


def test_a_workload_given_as_such_has_no_adapter() -> None:
    """The controller finds no owner to hand over (upstream's "No multikueue adapter found")."""
    assert unmanaged(None, "Workload") == "No multikueue adapter found"
    assert unmanaged("example.com/x", "Workload") == "No multikueue adapter found"


def test_a_copy_that_ended_unseen_ends_the_workload_when_its_worker_is_back(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """a (runs 150s) is given up at 90 and admitted through w2; its old copy in w1 ends at 150, unseen.
    w1 is back at 200: the finished copy finishes the manager's workload then, and the copy in w2 (due
    at 240) is removed, never finishing there."""
    path = _inputs(tmp_path, '"30s-"', '"30s-200s"')
    path.write_text(path.read_text().replace("pykueue.dev/runtime: 300s", "pykueue.dev/runtime: 150s"))
    doc = _run(path, capsys)
    assert _admissions(doc) == [(0.0, "Admitted", "w1"), (90.0, "Evicted", None), (90.0, "Admitted", "w2"),
                                (200.0, "Finished", None)]
    w2 = next(w for w in doc["workers"] if w["name"] == "w2")
    assert [(e["time"], e["type"]) for e in w2["events"] if e["workload"] == "team/a"] == [
        (0.0, "QuotaReserved"), (0.0, "Admitted"), (90.0, "QuotaReserved"), (90.0, "Admitted")]  # the tie at 0 lost
    assert w2["workloads"] == []


def test_a_worker_back_gets_the_copies_it_missed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """w1 unreachable from 0 to 100 and w2 too small (2 cpu): a holds its quota in the manager with no
    copy it can use; when w1 is back at 100 AllAtOnce nominates it, its copy is admitted at once."""
    path = _inputs(tmp_path, '"30s-"', '"0s-100s"')
    head, _, w2 = path.read_text().rpartition("nominalQuota: 4")
    path.write_text(head + "nominalQuota: 2" + w2)
    doc = _run(path, capsys)
    assert _admissions(doc) == [(100.0, "Admitted", "w1"), (400.0, "Finished", None)]
    w1 = next(w for w in doc["workers"] if w["name"] == "w1")
    assert [(w["name"], w["createdAt"]) for w in w1["workloads"]] == [("a", 100.0)]


def test_a_stale_copy_is_removed_when_its_worker_is_back(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """a is given up at 90 (admitted through w2 then) and deleted in the manager at 150: its copy in w2
    goes at once, the one in w1 (unreachable) only when w1 is back at 200, so its job there stops
    before its end at 300."""
    path = _inputs(tmp_path, '"30s-"', '"30s-200s"')
    path.write_text(path.read_text().replace("annotations: {pykueue.dev/runtime: 300s}",
                                             "annotations: {pykueue.dev/runtime: 300s, pykueue.dev/delete-at: 150s}"))
    doc = _run(path, capsys)
    assert _admissions(doc) == [(0.0, "Admitted", "w1"), (90.0, "Evicted", None), (90.0, "Admitted", "w2")]
    for worker in doc["workers"]:
        assert worker["workloads"] == [], worker["name"]
        assert not [e for e in worker["events"] if e["type"] == "Finished"]
    assert doc["endTime"] == 90.0


def test_a_nominate_script_never_played_is_a_warning(tmp_path: Path) -> None:
    """With a built-in dispatcher (here the default, AllAtOnce) the script is never played; a name no
    MultiKueueCluster declares is never nominated."""
    path = _inputs(tmp_path, "annotations: {pykueue.dev/runtime: 300s}",
                   'annotations: {pykueue.dev/runtime: 300s, pykueue.dev/nominate: "w9@0s"}')
    inputs, _, problems = load_clusters([path])
    assert not problems
    assert [(w.name, w.message) for w in inputs.warnings] == [
        ("a", "the dispatcher kueue.x-k8s.io/multikueue-dispatcher-all-at-once nominates by itself: the script "
              "is never played")]
    path.write_text(path.read_text().replace("workerLostTimeout: 60s", "workerLostTimeout: 60s, dispatcherName: x.io/d"))
    inputs, _, problems = load_clusters([path])
    assert not problems
    assert [(w.name, w.message) for w in inputs.warnings] == [("a", "w9 names no MultiKueueCluster: never nominated")]
