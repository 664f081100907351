"""``--output table`` is for people on an 80-column terminal (issue 10): nothing wider, no name wrapped
across lines, the LocalQueue and ClusterQueue columns of ``kubectl get workloads``, why each workload
waits, a summary at the end; a generator run prints its figures and verdict, not its rows; a run that
could not settle still shows what happened up to the stop; the piped demo shows what it promises."""

from __future__ import annotations

import io
import json
import random
from pathlib import Path

import pytest
from rich.console import Console

from pykueue.api.loader import load_paths
from pykueue.cli import main
from pykueue.sim.result import build_result
from pykueue.sim.simulator import Simulation
from pykueue.sim.table import Column, Row, nominal_quotas, print_table, render, shorten, wrap
from tests.sim.settle_objects import queue, workload

LONG_A = "a" * 30 + "-training-run-with-a-long-name-00001"[:30]  # 60 characters
LONG_B = "b" * 30 + "-evaluation-run-with-long-name-2"[:30]
LQ = "research-queue"

SCENARIO = f"""\
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {{name: default}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {{name: research-cluster-queue}}
spec:
  namespaceSelector: {{}}
  resourceGroups:
  - coveredResources: ["cpu"]
    flavors:
    - {{name: default, resources: [{{name: cpu, nominalQuota: 4}}]}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {{name: {LQ}, namespace: default}}
spec: {{clusterQueue: research-cluster-queue}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {{name: {LONG_A}, namespace: default}}
spec:
  queueName: {LQ}
  podSets: [{{name: main, count: 3, template: {{spec: {{restartPolicy: Never, containers: [{{name: c, image: x, resources: {{requests: {{cpu: "1"}}}}}}]}}}}}}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {{name: {LONG_B}, namespace: default, annotations: {{pykueue.dev/arrival: "1s"}}}}
spec:
  queueName: {LQ}
  podSets: [{{name: main, count: 3, template: {{spec: {{restartPolicy: Never, containers: [{{name: c, image: x, resources: {{requests: {{cpu: "1"}}}}}}]}}}}}}]
"""

GENERATOR = """\
cohorts:
  - className: cohort
    count: 1
    queuesSets:
    - className: cq
      count: 2
      nominalQuota: 20
      borrowingLimit: 100
      reclaimWithinCohort: Any
      withinClusterQueue: LowerPriority
      workloadsSets:
      - count: 5
        creationIntervalMs: 100
        workloads:
        - {className: small, runtimeMs: 200, priority: 50, request: 1}
      - count: 2
        creationIntervalMs: 500
        workloads:
        - {className: large, runtimeMs: 1000, priority: 200, request: 20}
"""


def table_of(path: Path, **kwargs: object) -> list[str]:
    inputs, problems = load_paths([str(path)])
    assert not problems
    run = Simulation(inputs).run()
    out = io.StringIO()
    console = Console(width=80, file=out, record=True, color_system=None)
    render(build_result(run), console, quotas=nominal_quotas(run.engine), **kwargs)  # type: ignore[arg-type]
    return out.getvalue().splitlines()


def test_shorten_and_wrap_never_split_a_word() -> None:
    assert shorten("default/abcdefghij", 9) == "defa…ghij"
    assert len(shorten("x" * 100, 80)) == 80
    assert wrap("insufficient unused quota for cpu in flavor default, 2 more needed", 30) == [
        "insufficient unused quota for", "cpu in flavor default, 2 more", "needed"]
    assert wrap("a " + "y" * 50, 20) == ["a", shorten("y" * 50, 20)]


def test_table_fits_80_columns_and_keeps_long_names_whole(tmp_path: Path) -> None:
    f = tmp_path / "in.yaml"
    f.write_text(SCENARIO)
    lines = table_of(f)
    assert max(len(line) for line in lines) <= 80
    for name in (f"default/{LONG_A}", f"default/{LONG_B}"):
        assert any(name in line for line in lines), name
        # wherever the name starts, it is whole or visibly shortened: never continued on the next line
        for line in lines:
            if name[:24] in line:
                assert name in line or "…" in line, line


def test_workloads_show_the_local_queue_and_why_they_wait(tmp_path: Path) -> None:
    f = tmp_path / "in.yaml"
    f.write_text(SCENARIO)
    lines = table_of(f)
    start = lines.index("Workloads")
    header = lines[start + 1]
    assert header.split()[:4] == ["NAME", "QUEUE", "RESERVED", "IN"]
    body = "\n".join(lines[start:])
    assert LQ in body  # the LocalQueue, as kubectl's QUEUE column
    assert "research-cluster-queue" in body  # RESERVED IN
    # the pending workload's row is followed by its reason and upstream's message, with the numbers
    row = next(i for i in range(start, len(lines)) if "Pending" in lines[i])
    detail = " ".join(line.strip() for line in lines[row + 1:row + 3])
    assert detail.startswith("WaitingForQuota: couldn't assign flavors to pod set main: insufficient unused quota "
                             "for cpu in flavor default, ")
    assert detail.endswith(" more needed")


def test_a_column_too_narrow_shortens_with_an_ellipsis_never_wraps() -> None:
    out = io.StringIO()
    console = Console(width=40, file=out, color_system=None)
    print_table(console, (Column("NAME", key=True), Column("QUEUE", shrink=True), Column("STATE")),
                [Row(["ns/" + "n" * 45, "q" * 30, "Pending"], details=["why " * 15])])
    lines = out.getvalue().splitlines()
    assert max(len(line) for line in lines) <= 40
    assert lines[1] == shorten("ns/" + "n" * 45, 40)  # the name on its own line, shortened only past the width
    assert "…" in lines[2] and "Pending" in lines[2]
    assert all(line.strip().startswith("why") for line in lines[3:]) and len(lines) == 3 + 2


def test_the_output_ends_with_a_summary(tmp_path: Path) -> None:
    f = tmp_path / "in.yaml"
    f.write_text(SCENARIO)
    lines = table_of(f)
    summary = "\n".join(lines[lines.index("Summary"):])
    # the time of the last event (the admission at 0s): the later arrival that waits produces none
    assert "end time        0s" in summary
    assert "workloads       2 (1 Pending, 1 Admitted)" in summary
    assert "research-cluster-queue" in summary
    assert "usage default: cpu=3/4" in summary  # usage against nominal quota


def test_borrowing_is_marked_in_the_usage(tmp_path: Path) -> None:
    text = SCENARIO.replace("spec:\n  namespaceSelector: {}", "spec:\n  cohortName: all\n  namespaceSelector: {}")
    text += """---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: lender}
spec:
  cohortName: all
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: ["cpu"]
    flavors:
    - {name: default, resources: [{name: cpu, nominalQuota: 4}]}
"""
    f = tmp_path / "in.yaml"
    f.write_text(text)
    lines = table_of(f)
    assert "  usage default: cpu=6/4 (+2 borrowed)" in lines


def test_detail_lines_of_events_say_who_preempted(tmp_path: Path) -> None:
    lines = table_of(Path(__file__).resolve().parents[2] / "pykueue" / "examples" / "demo.yaml")
    at = next(i for i, line in enumerate(lines) if "Preempted " in line and "team-b/b-train-2" in line)
    assert lines[at + 1].strip() == "by team-a/a-urgent"
    assert max(len(line) for line in lines) <= 80


def test_generator_in_table_mode_prints_the_summary_and_verdict_not_rows(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    gen = tmp_path / "generator.yaml"
    gen.write_text(GENERATOR)
    ok = tmp_path / "ok.yaml"
    ok.write_text("clusterQueueClassesMinUsage: {cq: 50}\nwlClassesMaxAvgTimeToAdmissionMs: {large: 1000, small: 1000}\n")
    assert main(["simulate", "--generator", str(gen), "--rangespec", str(ok), "--output", "table"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "Timeline" not in out and "small-0-0-0" not in out  # rows stay behind --output json|yaml
    assert "workloads       14 (14 Finished)" in out
    assert any(line.split() == ["large", "4", "250ms", "500ms", "1.25s", "0"] for line in lines)
    assert any(line.split() == ["cq", "2", "76.11%"] for line in lines)
    assert "rangespec: pass" in out

    strict = tmp_path / "strict.yaml"
    strict.write_text("cmd: {maxWallMs: 1000}\nclusterQueueClassesMinUsage: {cq: 50}\n"
                      "wlClassesMaxAvgTimeToAdmissionMs: {large: 100, small: 100000}\n")
    assert main(["simulate", "--generator", str(gen), "--rangespec", str(strict), "-o", "table"]) == 1
    captured = capsys.readouterr()
    assert "rangespec: FAILED, 2 figure(s) out of range" in captured.out
    assert "cmd.maxWallMs: wall time 2700ms is greater than maximum expected 1000ms" in captured.out
    assert captured.err.splitlines()[0] == "cmd.maxWallMs: wall time 2700ms is greater than maximum expected 1000ms"


# ----------------------------------------------------------------------------- runs that stop (exit 3)


def ping_pong(n: int = 250) -> str:
    """Ten queues of a cohort, ``withinClusterQueue: LowerPriority`` and ``reclaimWithinCohort: Any``
    (tests/engine/test_preemption_loop.py as a file): at 0.218 s workloads preempt each other for ever."""
    rng = random.Random(7)
    docs = ["apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: default}\n"]
    for i in range(10):
        docs.append(f"apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {{name: cq{i}}}\nspec:\n"
                    "  cohortName: all\n  namespaceSelector: {}\n"
                    "  preemption: {withinClusterQueue: LowerPriority, reclaimWithinCohort: Any}\n"
                    "  resourceGroups:\n  - coveredResources: [cpu]\n"
                    "    flavors: [{name: default, resources: [{name: cpu, nominalQuota: 10}]}]\n")
        docs.append(f"apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {{name: q{i}, namespace: ns}}\n"
                    f"spec: {{clusterQueue: cq{i}}}\n")
    for k in range(n):
        cpu = rng.choice(("500m", "1", "1500m", "2", "2500m"))
        priority = rng.choice((0, 10, 20))
        docs.append(
            f"apiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\nmetadata: {{name: w{k:06d}, namespace: ns, "
            f"annotations: {{pykueue.dev/arrival: \"{k}ms\", pykueue.dev/runtime: \"{1 + k % 7}s\"}}}}\n"
            f"spec:\n  queueName: q{k % 10}\n  priority: {priority}\n"
            "  podSets: [{name: main, count: 1, template: {spec: {restartPolicy: Never, containers: "
            f"[{{name: c, image: x, resources: {{requests: {{cpu: \"{cpu}\"}}}}}}]}}}}}}]\n")
    return "---\n".join(docs)


def test_a_loop_still_writes_the_run_so_far_and_names_its_members(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "loop.yaml"
    f.write_text(queue(checks=True) + workload("w", 'pykueue.dev/admission-checks: "prov=Retry@0s"'))
    assert main(["simulate", str(f), "--output", "json"]) == 3
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    assert result["endTime"] == 0.0
    assert [e["type"] for e in result["events"][-3:]] == ["QuotaReserved", "Evicted", "Requeued"]
    assert sum(e["type"] == "QuotaReserved" for e in result["events"]) == 50
    assert result["workloads"][0]["evictions"] == 50
    err = captured.err.splitlines()
    assert err[0].startswith("simulation stopped: admission loop: workload default/w got quota and was evicted")
    assert err[1] == ("in the loop: workloads default/w; cluster queues cq "
                      "(the output has the events up to the stop, at 0s)")
    assert len(err) == 2


def test_a_preemption_loop_names_every_workload_and_queue_in_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    f = tmp_path / "ping.yaml"
    f.write_text(ping_pong())
    assert main(["simulate", str(f), "--output", "yaml"]) == 3
    captured = capsys.readouterr()
    assert "endTime: 0.218" in captured.out
    err = captured.err.splitlines()
    assert err[0].startswith("simulation stopped: preemption loop: workload ns/w000201 was admitted and preempted 50")
    assert err[1] == ("in the loop: workloads ns/w000007, ns/w000051, ns/w000098, ns/w000177, ns/w000201; "
                      "cluster queues cq1, cq7, cq8 (the output has the events up to the stop, at 0.218s)")

    assert main(["simulate", str(f), "-o", "table"]) == 3
    lines = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert lines[1].startswith("... ") and lines[1].endswith("earlier events (--output json has them all)")
    assert lines[-1] != "" and any(line.startswith("stopped         preemption loop") for line in lines)


# ----------------------------------------------------------------------------------------- the demo


def test_the_piped_demo_shows_the_flavor_fallback_and_the_borrowing(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["demo", "--no-live"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80
    row = next(line for line in lines if line.startswith("team-a/a-eval "))
    assert row.split()[-1] == "gpu-a100"  # the flavor it got: the fallback from gpu-t4
    happened = " ".join(line.strip() for line in lines[lines.index("What happened"):])
    assert "Borrowing: team-b borrowed from cohort research, up to 8 nvidia.com/gpu of gpu-t4 (nominal 4), " \
           "at 2s-15s, 30s-40s, 60s-70s." in happened
    assert "Flavor fallback: team-a/a-eval got gpu-a100 at 10s: gpu-t4, which team-a tries first" in happened
    assert "Preemption: team-a/a-urgent preempted team-b/b-train-2 at 15s" in happened


def test_the_readme_excerpt_is_real_output(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/simulate.md shows the table of the demo cut at 22 s: it must be what the command prints."""
    monkeypatch.setenv("COLUMNS", "80")
    readme = (Path(__file__).resolve().parents[2] / "docs" / "simulate.md").read_text()
    block = readme.split("--until 22s -o table`, after its timeline):\n\n```text\n", 1)[1].split("\n```", 1)[0]
    assert main(["simulate", str(Path(__file__).resolve().parents[2] / "pykueue" / "examples"), "--until", "22s",
                 "-o", "table"]) == 0
    out = capsys.readouterr().out
    assert out[out.index("Workloads\n"):].rstrip("\n") == block


def test_a_workload_waiting_again_shows_no_admission_time(capsys: pytest.CaptureFixture[str]) -> None:
    """b-train-2 was admitted at 2s and preempted at 15s: at 22s it is Pending, so its ADMITTED cell is
    empty ("-"), as kueuectl leaves EXEC TIME empty for a workload that is not admitted; the JSON keeps
    ``admittedAt`` (the last admission, as the simulate spec fixes it)."""
    from pykueue.demo import demo_path

    assert main(["simulate", demo_path(), "--until", "22s", "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    train2 = next(w for w in doc["workloads"] if w["name"] == "b-train-2")
    assert (train2["state"], train2["admittedAt"]) == ("Pending", 2.0)
    assert main(["simulate", demo_path(), "--until", "22s", "-o", "table"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("team-b/b-train-2"))
    assert row.split() == ["team-b/b-train-2", "gpu-queue", "-", "Pending", "-", "-"]
    finished = next(line for line in table_of_demo_end() if line.startswith("team-b/b-train-1"))
    assert finished.split()[3:5] == ["Finished", "0s"]  # a finished workload keeps the time it ran from


def table_of_demo_end() -> list[str]:
    from pykueue.demo import demo_path

    inputs, problems = load_paths([demo_path()])
    assert not problems
    result = build_result(Simulation(inputs).run())
    out = io.StringIO()
    render(result, Console(file=out, width=80, force_terminal=False, color_system=None))
    return out.getvalue().splitlines()
