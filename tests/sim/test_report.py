"""The HTML report: built from a real simulation through the public loading path, then inspected."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pykueue.sim.report import (
    MAX_POINTS,
    _choose_cohorts,
    _choose_units,
    _Sweep,
    _time_to_admission,
    _Topology,
    write_report,
)
from pykueue.sim.report_plot import resample
from pykueue.sim.simulator import US, Run
from tests.sim.report_worlds import FLAVOR, cluster_queue, local_queue, reclaim_scenario, simulate, workload

pytest.importorskip("plotly")

CPU = ("default-flavor", "cpu")


def _figure_html(page: str, div_id: str) -> str:
    """The HTML of one figure (from its div to the next figure's), with plotly's JSON escapes of / undone."""
    start = page.index(f'id="{div_id}"')
    nxt = page.find('id="fig-', start + 1)
    return page[start: nxt if nxt >= 0 else len(page)].replace("\\u002f", "/")


@pytest.fixture(scope="module")
def reclaim(tmp_path_factory: pytest.TempPathFactory) -> tuple[Run, dict]:
    return simulate(tmp_path_factory.mktemp("reclaim"), reclaim_scenario())


def test_the_scenario_preempts_as_the_report_expects(reclaim: tuple[Run, dict]) -> None:
    _, result = reclaim
    preempted = [(e["workload"], e["by"], e["reason"]) for e in result["events"] if e["type"] == "Preempted"]
    assert preempted == [
        ("team-b/b-5", "team-a/a-1", "InCohortReclamation"),
        ("team-b/b-4", "team-a/a-1", "InCohortReclamation"),
    ]


def test_report_is_one_self_contained_page(reclaim: tuple[Run, dict], tmp_path: Path) -> None:
    run, result = reclaim
    out = tmp_path / "report.html"
    write_report(run, result, str(out))
    page = out.read_text(encoding="utf-8")

    assert page.startswith("<!DOCTYPE html>")
    assert page.count("<html") == 1
    assert 'src="http' not in page and "<script src=" not in page  # nothing to fetch: opens offline
    assert page.count("plotly.js v") >= 1  # the plotly bundle's banner, inline
    assert len(page) > 1_000_000  # ... and the bundle itself
    for title in (
        "Usage per cluster queue and flavor",
        "Borrowed and lent default-flavor · cpu (cores) per cluster queue",
        "Borrowed and lent default-flavor · memory (GiB) per cluster queue",
        "Usage per cohort over time",
        "Time to admission per workload class",
        "Pending workloads over time per cluster queue",
        "Preemptions on the timeline (2 in all)",
    ):
        assert title in page, title
    assert "Fair sharing" not in page  # fair sharing is off in this run
    for name in ("team-a", "team-b", "research"):
        assert f'"name":"{name}"' in page, name
    # header: end time and final states
    assert "<th>end time</th><td>30 s</td>" in page
    assert "<th>· Finished</th><td>8</td>" in page
    assert "<th>preemptions</th><td>2</td>" in page

    preemptions = _figure_html(page, "fig-preemptions")
    for victim in ("team-b/b-5", "team-b/b-4"):
        assert victim in preemptions
    assert "team-a/a-1" in preemptions and "InCohortReclamation" in preemptions
    # the time-to-admission table: the labelled class, and the queue standing in for unlabelled workloads
    assert re.search(r"<td>batch</td><td>6</td><td>0</td>", page)
    assert re.search(r"<td>team-a</td><td>2</td><td>0</td><td>2</td>", page)  # a-1 waits 0 s, c-1 4 s


def test_report_bytes_are_deterministic(tmp_path: Path) -> None:
    run, result = simulate(tmp_path, reclaim_scenario())
    write_report(run, result, str(tmp_path / "one.html"))
    write_report(run, result, str(tmp_path / "two.html"))
    again, again_result = simulate(tmp_path, reclaim_scenario())  # a second simulation of the same file
    write_report(again, again_result, str(tmp_path / "three.html"))
    one = (tmp_path / "one.html").read_bytes()
    assert one == (tmp_path / "two.html").read_bytes()
    assert one == (tmp_path / "three.html").read_bytes()


def _sweep(run: Run) -> _Sweep:
    topo = _Topology.of(run)
    units, _ = _choose_units(topo)
    sweep = _Sweep(run, topo, units, _choose_cohorts(topo))
    sweep.replay()
    return sweep


def _at(points: list[tuple[int, tuple[float, ...]]], seconds: float) -> tuple[float, ...]:
    """The step value in force at a time."""
    value = points[0][1]
    for t, snap in points:
        if t <= seconds * US:
            value = snap
    return value


def test_borrowed_and_lent_follow_the_cohort(reclaim: tuple[Run, dict]) -> None:
    sweep = _sweep(reclaim[0])
    a, b = sweep.units["team-a"].points, sweep.units["team-b"].points
    usage, nominal, within, borrowed, lent = (sweep.index(CPU, w)
                                              for w in ("usage", "nominal", "within", "borrowed", "lent"))

    def cpu(points: list, t: float) -> tuple[float, ...]:
        snap = _at(points, t)
        return snap[usage], snap[nominal], snap[within], snap[borrowed], snap[lent]

    # 0-5 s: team-b runs 6 of its 4 cpu, borrowing 2 that idle team-a lends
    assert cpu(b, 1) == (6000, 4000, 4000, 2000, 0)
    assert cpu(a, 1) == (0, 4000, 0, 0, 2000)
    # 5-10 s: a-1 reclaimed them; nobody borrows, two b workloads wait
    assert cpu(b, 7) == (4000, 4000, 4000, 0, 0)
    assert cpu(a, 7) == (4000, 4000, 4000, 0, 0)
    assert _at(b, 7)[sweep.pending_index] == 2
    # 10-20 s: team-a runs c-1 only; team-b borrows 2 again, out of team-a's 3 idle cpu
    assert cpu(b, 15) == (6000, 4000, 4000, 2000, 0)
    assert cpu(a, 15) == (1000, 4000, 1000, 0, 2000)
    # 20 s on: b-0..b-3 finished, no borrowing left
    assert cpu(a, 25)[4] == 0 and cpu(b, 25)[3] == 0
    cohort = sweep.cohorts["research"].points
    k = sweep.cohort_index(CPU)
    assert (_at(cohort, 1)[k], _at(cohort, 1)[k + 1]) == (6000, 8000)
    assert (_at(cohort, 7)[k], _at(cohort, 15)[k]) == (8000, 7000)


def test_time_to_admission_classes(reclaim: tuple[Run, dict]) -> None:
    run, result = reclaim
    tta = _time_to_admission(run, result, _Topology.of(run))
    assert tta.by_class == {"batch": [0.0] * 6, "team-a": [0.0, 4.0]}


def test_fair_sharing_adds_the_share_chart(tmp_path: Path) -> None:
    run, result = simulate(tmp_path, reclaim_scenario(fair=True))
    assert run.engine.config.fair_sharing.enable
    out = tmp_path / "fair.html"
    write_report(run, result, str(out))
    page = out.read_text(encoding="utf-8")
    assert "Fair sharing: weighted share over time per cluster queue" in page
    shares = _sweep(run).units["team-b"].points
    assert max(snap[-1] for _, snap in shares) > 0  # team-b's share while it borrows


def test_many_queues_are_drawn_per_cohort(tmp_path: Path) -> None:
    docs = [FLAVOR]
    for i in range(40):
        cohort = f"co-{i % 2}"
        docs += [cluster_queue(f"cq-{i:02d}", cohort, cpu=2), local_queue(f"ns-{i:02d}", f"cq-{i:02d}")]
        docs += [workload(f"ns-{i:02d}", f"w-{j}", f"{j}s", "3s", 1) for j in range(3)]
    run, result = simulate(tmp_path, docs)
    out = tmp_path / "many.html"
    write_report(run, result, str(out))
    page = out.read_text(encoding="utf-8")
    assert "40 cluster queues are drawn as 2 series, one per cohort" in page
    assert "Usage per cohort and flavor" in page
    usage = _figure_html(page, "fig-usage")
    assert '"name":"co-0"' in usage and '"name":"co-1"' in usage
    assert "cq-07" not in usage  # no per-queue trace
    sweep = _sweep(run)
    assert list(sweep.units) == ["co-0", "co-1"]
    # 20 queues x 2 cpu of nominal quota per cohort; at 2.5 s each queue runs w-0, w-1, w-2
    snap = _at(sweep.units["co-0"].points, 2.5)
    assert snap[sweep.index(CPU, "nominal")] == 40_000
    assert snap[sweep.index(CPU, "usage")] == 40_000  # 2 running per queue, the third borrows nothing
    assert snap[sweep.pending_index] == 20


def test_resample_is_a_time_weighted_mean() -> None:
    ts = [0, 10, 30]
    vals = [(1.0,), (3.0,), (0.0,)]
    x, y = resample(ts, vals, 40, 4)
    assert x == [0, 10, 20, 30]
    assert y == [(1.0,), (3.0,), (3.0,), (0.0,)]
    x, y = resample(ts, vals, 40, 2)
    assert y == [(2.0,), (1.5,)]


def test_long_runs_are_resampled_and_stay_small(tmp_path: Path) -> None:
    """A queue whose usage changes at every one of many instants is drawn with at most MAX_POINTS points."""
    docs = [FLAVOR, cluster_queue("solo", "alone", cpu=1), local_queue("solo", "solo")]
    n = MAX_POINTS + 300
    docs += [workload("solo", f"w-{i}", f"{i}s", "500ms", 1) for i in range(n)]
    run, result = simulate(tmp_path, docs)
    assert len(run.samples) > MAX_POINTS
    out = tmp_path / "long.html"
    write_report(run, result, str(out))
    page = out.read_text(encoding="utf-8")
    assert "time-weighted means over" in page
    usage = _figure_html(page, "fig-usage")
    xs = re.search(r'"x":\[([^\]]*)\]', usage)
    assert xs is not None and len(xs.group(1).split(",")) <= MAX_POINTS + 1


def test_nominal_quota_follows_timed_changes_and_cohort_trees(tmp_path: Path) -> None:
    """A ClusterQueue replaced at 10s steps its nominal line; a parent cohort sums its children's trees."""
    grown = cluster_queue("team-a", "research", cpu=6).replace(
        "metadata: {name: team-a}", 'metadata: {name: team-a, annotations: {pykueue.dev/at: "10s"}}'
    )
    parent = """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: research}
spec:
  parentName: org
  resourceGroups:
  - coveredResources: ["cpu", "memory"]
    flavors:
    - name: default-flavor
      resources: [{name: cpu, nominalQuota: 2}, {name: memory, nominalQuota: 0}]
"""
    docs = [FLAVOR, parent, cluster_queue("team-a", "research"), grown, cluster_queue("team-c", "org"), local_queue("team-a", "team-a"),
            workload("team-a", "a-1", "0s", "20s", 1)]
    run, result = simulate(tmp_path, docs)
    sweep = _sweep(run)
    nominal = sweep.index(CPU, "nominal")
    a = sweep.units["team-a"].points
    assert (_at(a, 5)[nominal], _at(a, 15)[nominal]) == (4000, 6000)
    k = sweep.cohort_index(CPU)
    research, org = sweep.cohorts["research"].points, sweep.cohorts["org"].points
    # research: team-a's quota plus its own 2; org: that plus team-c's 4
    assert (_at(research, 5)[k + 1], _at(research, 15)[k + 1]) == (6000, 8000)
    assert (_at(org, 5)[k + 1], _at(org, 15)[k + 1]) == (10_000, 12_000)
    assert _at(org, 5)[k] == 1000
    write_report(run, result, str(tmp_path / "tree.html"))
