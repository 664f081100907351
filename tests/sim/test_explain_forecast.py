"""``pykueue explain``'s "Expected start": the engine's forecast from the instant ``--until`` names, with
the input's run times as the figures (source ``given``), the user's ``pykueue.dev/expected-runtime``
(``annotation``), and what finished in the run (``learned``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pykueue.api.loader import load_paths
from pykueue.cli import main
from pykueue.engine.model import US
from pykueue.engine.workload import State
from pykueue.sim.forecasts import forecast_at_end
from pykueue.sim.simulator import Simulation
from tests.objects import workload_yaml
from tests.sim.test_explain import QUEUES


def explain_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    assert main(["explain", *argv, "-o", "json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def four(tmp_path: Path) -> Path:
    """cq has 4 cpu: a (4 cpu) runs 30 s from 0; b and c (2 cpu, 10 s and 20 s) and d (4 cpu) arrive at
    1, 2, 3 s; e (4 cpu) at 4 s with no run time but an expected one; f (4 cpu) at 5 s with neither."""
    f = tmp_path / "in.yaml"
    f.write_text(QUEUES
                 + workload_yaml("a", cpu="4", notes="pykueue.dev/runtime: 30s")
                 + workload_yaml("b", cpu="2", notes="pykueue.dev/arrival: 1s, pykueue.dev/runtime: 10s")
                 + workload_yaml("c", cpu="2", notes="pykueue.dev/arrival: 2s, pykueue.dev/runtime: 20s")
                 + workload_yaml("d", cpu="4", notes="pykueue.dev/arrival: 3s, pykueue.dev/runtime: 5s")
                 + workload_yaml("e", cpu="4", notes="pykueue.dev/arrival: 4s, pykueue.dev/expected-runtime: 1m")
                 + workload_yaml("f", cpu="4", notes="pykueue.dev/arrival: 5s"))
    return f


def test_pending_workloads_are_forecast_behind_the_running_one(four: Path, capsys) -> None:
    # At 10 s: a ends at 30 s, then b and c start together; d (4 cpu) when c ends (30 + 20 = 50 s),
    # e when d ends (55 s).
    b = explain_json(capsys, "default/b", str(four), "--until", "10s")["forecast"]
    assert b["predictedAdmissionTime"] == 30.0 and b["flavors"] == {"cpu": "default-flavor"}
    assert b["waitsFor"] == [{"workload": "default/a", "expectedEnd": 30.0, "runtimeSource": "given"}]
    assert b["runtimeSources"] == ["given"] and not b["guess"]
    d = explain_json(capsys, "default/d", str(four), "--until", "10s")["forecast"]
    assert d["predictedAdmissionTime"] == 50.0
    assert d["waitsFor"] == [{"workload": "default/c", "expectedEnd": 50.0, "runtimeSource": "given"}]
    e = explain_json(capsys, "default/e", str(four), "--until", "10s")["forecast"]
    assert e["predictedAdmissionTime"] == 55.0 and not e["guess"]
    # f waits for e, whose end is the user's figure (1 minute from 55 s): f at 115 s on that annotation
    f = explain_json(capsys, "default/f", str(four), "--until", "10s")["forecast"]
    assert f["predictedAdmissionTime"] == 115.0
    assert f["waitsFor"] == [{"workload": "default/e", "expectedEnd": 115.0, "runtimeSource": "annotation"}]
    assert f["runtimeSources"] == ["annotation", "given"] and not f["guess"]


def test_the_simulation_then_admits_them_when_forecast(four: Path, capsys) -> None:
    full = {k: explain_json(capsys, f"default/{k}", str(four))["history"] for k in "bcde"}
    admitted = {k: next(h["time"] for h in hist if h["type"] == "Admitted") for k, hist in full.items()}
    assert admitted == {"b": 30.0, "c": 30.0, "d": 50.0, "e": 55.0}


def test_a_workload_behind_one_that_never_ends_has_no_time_and_is_a_guess(four: Path, capsys) -> None:
    # g (4 cpu) arrives after f, which has no figure at all: once f starts (at 115 s), g never does
    path = four.parent / "more.yaml"
    path.write_text(four.read_text() + workload_yaml("g", cpu="4", notes="pykueue.dev/arrival: 6s"))
    g = explain_json(capsys, "default/g", str(path), "--until", "10s")["forecast"]
    assert g["predictedAdmissionTime"] is None and g["guess"]
    assert g["waitsFor"] == [{"workload": "default/f", "expectedEnd": None, "runtimeSource": "unknown"}]


def test_a_small_workload_behind_a_big_one_starts_in_the_gap(four: Path, capsys) -> None:
    # BestEffortFIFO: g (1 cpu) arriving at 6 s fits when b ends at 40 s (c holds 2 cpu; d, ahead of it,
    # needs 4), as the engine decides it
    path = four.parent / "more.yaml"
    path.write_text(four.read_text() + workload_yaml("g", cpu="1", notes="pykueue.dev/arrival: 6s"))
    g = explain_json(capsys, "default/g", str(path), "--until", "10s")["forecast"]
    assert g["predictedAdmissionTime"] == 40.0
    assert g["waitsFor"] == [{"workload": "default/b", "expectedEnd": 40.0, "runtimeSource": "given"}]


def test_the_table_shows_the_expected_start(four: Path, capsys) -> None:
    assert main(["explain", "default/d", str(four), "--until", "10s", "-o", "table"]) == 0
    out = capsys.readouterr().out
    assert "Expected start  at 50s on cpu=default-flavor" in out
    assert "- waits for default/c: ends at 50s (runtime given)" in out


def test_a_workload_holding_quota_has_no_forecast(four: Path, capsys) -> None:
    assert "forecast" not in explain_json(capsys, "default/a", str(four), "--until", "10s")


def test_a_bad_expected_runtime_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "in.yaml"
    f.write_text(QUEUES + workload_yaml("x", notes="pykueue.dev/expected-runtime: soon"))
    _, problems = load_paths([str(f)])
    assert any("pykueue.dev/expected-runtime" in str(p) for p in problems)


def _inputs(tmp_path: Path, jobs: list[tuple[int, int]]) -> Path:
    f = tmp_path / "prop.yaml"
    f.write_text(QUEUES + "".join(
        workload_yaml(f"w{i}", cpu=str(cpu), notes=f"pykueue.dev/runtime: {runtime}s")
        for i, (cpu, runtime) in enumerate(jobs)))
    return f


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(jobs=st.lists(st.tuples(st.integers(1, 4), st.integers(1, 50)), min_size=1, max_size=8),
       until=st.integers(0, 60))
def test_with_every_run_time_known_and_no_arrival_the_forecast_is_what_happens(
        tmp_path: Path, jobs: list[tuple[int, int]], until: int) -> None:
    path = _inputs(tmp_path, jobs)
    inputs, problems = load_paths([str(path)])
    assert not problems
    partial = Simulation(inputs, until=until)
    run = partial.run()
    fc = forecast_at_end(partial, run.end_us)
    whole = Simulation(load_paths([str(path)])[0]).run()
    for key, p in fc.predictions.items():
        w = whole.engine.workload_status(key)
        assert w is not None and w.state is State.FINISHED
        assert p.admission_us == w.admitted_us, (key, p, w.admitted_us / US)
        assert not p.guess
    pending_at_until = {w.key for w in run.engine.workload_statuses() if w.state is State.PENDING}
    assert set(fc.predictions) == pending_at_until
