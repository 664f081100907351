"""What the HTML report shows a reader: verdict and summary first, inputs, usage per flavor, the workload
timeline, pending reasons, one colour per queue, one panel per queue class. Each test reads the page
the way a browser would get it: the figures' JSON embedded in the HTML."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pykueue.api.loader import load_paths
from pykueue.perf.run import load_generator_inputs, summary_of
from pykueue.sim import report_timeline
from pykueue.sim.report import queue_classes_from_manifests, write_report
from pykueue.sim.report_timeline import build_timelines, choose, pending_reason_points
from pykueue.sim.result import build_result
from pykueue.sim.simulator import US, Run, Simulation
from tests.sim.report_worlds import FLAVOR, cluster_queue, local_queue, reclaim_scenario, simulate, workload

pytest.importorskip("plotly")

Figure = tuple[list[dict[str, Any]], dict[str, Any]]


def _figures(page: str) -> dict[str, Figure]:
    """Every chart's (traces, layout), as the page hands them to ``Plotly.newPlot``."""
    decoder = json.JSONDecoder()
    out: dict[str, Figure] = {}
    for m in re.finditer(r'Plotly\.newPlot\(\s*"(fig-[^"]+)",\s*', page):
        data, end = decoder.raw_decode(page, m.end())
        comma = re.match(r"\s*,\s*", page[end:])
        assert comma is not None
        layout, _ = decoder.raw_decode(page, end + comma.end())
        out[m.group(1)] = (data, layout)
    return out


def _first_chart(page: str) -> int:
    return page.index('class="plotly-graph-div"')


def _page(run: Run, result: dict[str, Any], tmp_path: Path, **kwargs: Any) -> str:
    out = tmp_path / "report.html"
    write_report(run, result, str(out), **kwargs)
    return out.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def reclaim(tmp_path_factory: pytest.TempPathFactory) -> tuple[Run, dict, str, dict[str, Figure]]:
    tmp = tmp_path_factory.mktemp("reclaim")
    run, result = simulate(tmp, reclaim_scenario())
    page = _page(run, result, tmp)
    return run, result, page, _figures(page)


# --------------------------------------------------------------------------------- generator runs

GENERATOR = """\
cohorts:
- className: cohort
  count: 2
  queuesSets:
  - className: cq
    count: 3
    nominalQuota: 2
    borrowingLimit: 2
    reclaimWithinCohort: Any
    withinClusterQueue: LowerPriority
    workloadsSets:
    - count: 3
      creationIntervalMs: 100
      workloads:
      - {className: small, runtimeMs: 300, priority: 50, request: 1}
  - className: big
    count: 1
    nominalQuota: 4
    workloadsSets:
    - count: 2
      creationIntervalMs: 200
      workloads:
      - {className: large, runtimeMs: 500, priority: 100, request: 3}
"""

PASSING = """\
cmd: {maxWallMs: 100000}
clusterQueueClassesMinUsage: {cq: 0, big: 0}
wlClassesMaxAvgTimeToAdmissionMs: {small: 100000, large: 100000}
"""


def _generator_run(tmp_path: Path) -> tuple[Run, dict, dict[str, str], str]:
    gen = tmp_path / "generator.yaml"
    gen.write_text(GENERATOR)
    inputs, problems, manifests = load_generator_inputs(str(gen))
    assert not problems
    run = Simulation(inputs, record_usage=True).run()
    result = build_result(run)
    result["summary"] = summary_of(result, manifests)
    return run, result, queue_classes_from_manifests(manifests), str(gen)


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Run, dict, dict[str, str], str]:
    return _generator_run(tmp_path_factory.mktemp("generator"))


def test_verdict_and_summary_come_before_the_first_chart(generated: tuple, tmp_path: Path) -> None:
    run, result, classes, gen = generated
    spec = tmp_path / "rangespec.yaml"
    spec.write_text(PASSING)
    page = _page(run, result, tmp_path, inputs=[gen], rangespec=str(spec), queue_classes=classes)
    first = _first_chart(page)
    verdict = page.index("<section id='verdict' class='verdict pass'>")
    assert verdict < first
    assert "PASS: every figure is in range" in page[verdict:first]
    assert page.index("id='summary-workload-classes'") < first
    assert page.index("id='summary-queue-classes'") < first
    assert re.search(r"<td>small</td><td>18</td>", page[:first])  # 2 cohorts x 3 queues x 3 workloads
    assert re.search(r"<td>cq</td><td>6</td>", page[:first])
    assert "<td>wall time (ms)</td>" in page[verdict:first]

    failing = tmp_path / "failing.yaml"
    failing.write_text(PASSING.replace("maxWallMs: 100000", "maxWallMs: 1"))
    page = _page(run, result, tmp_path, rangespec=str(failing), queue_classes=classes)
    first = _first_chart(page)
    verdict = page.index("<section id='verdict' class='verdict fail'>")
    assert verdict < first
    assert "FAIL: 1 figure out of range" in page[verdict:first]
    assert "cmd.maxWallMs: wall time" in page[verdict:first]
    assert "class='bad'" in page[verdict:first]

    # The CLI may hand over the lines it computed itself.
    page = _page(run, result, tmp_path, verdict=["wlClassesMaxAvgTimeToAdmissionMs.small: too slow"])
    first = _first_chart(page)
    assert page.index("FAIL: 1 figure out of range") < first
    assert page.index("wlClassesMaxAvgTimeToAdmissionMs.small: too slow") < first
    assert "id='verdict'" not in _page(run, result, tmp_path)  # no range spec, no verdict

    # A run that stopped early says so first, and its partial figures are not judged.
    page = _page(run, result, tmp_path, rangespec=str(failing), stopped="requeue loop: workload a/b was evicted")
    first = _first_chart(page)
    assert page.index("The simulation stopped early") < page.index("id='verdict'") < first
    assert "requeue loop: workload a/b was evicted" in page[:first]
    top = page[:page.index('<section id="usage">')]  # the header, without plotly's bundle
    assert "not checked" in top and "FAIL" not in top


def test_the_generator_report_has_one_panel_per_queue_class(generated: tuple, tmp_path: Path) -> None:
    run, result, classes, _ = generated
    assert len(classes) == 8 and set(classes.values()) == {"cq", "big"}
    page = _page(run, result, tmp_path, queue_classes=classes)
    data, layout = _figures(page)["fig-usage"]
    titles = [a["text"] for a in layout["annotations"]]
    assert titles == ["big (2 queues) · rf · cpu (cores)", "cq (6 queues) · rf · cpu (cores)"]
    assert "Usage per queue class and flavor" in layout["title"]["text"]
    usage = [t for t in data if not t["meta"].get("nominal")]
    assert sorted(t["meta"]["series"] for t in usage) == ["big", "cq"]
    nominal = {t["meta"]["series"]: max(t["y"]) for t in data if t["meta"].get("nominal")}
    assert nominal == {"big": 8, "cq": 12}  # the class's queues' quotas together
    assert "8 cluster queues are drawn as 2 series, one per queue class" in page
    # Without the classes the same run draws one panel per queue.
    page = _page(run, result, tmp_path)
    assert len(_figures(page)["fig-usage"][1]["annotations"]) == 8


# ------------------------------------------------------------------------------------------- inputs


def test_every_input_file_is_listed(tmp_path: Path) -> None:
    docs = reclaim_scenario()
    folder = tmp_path / "setup"
    folder.mkdir()
    (folder / "a.yaml").write_text("---\n".join(docs[:3]))
    (folder / "b.yml").write_text("---\n".join(docs[3:5]))
    (folder / "notes.txt").write_text("not an input")
    workloads = tmp_path / "workloads.yaml"
    workloads.write_text("---\n".join(docs[5:]))
    inputs, problems = load_paths([str(folder), str(workloads)])
    assert not problems
    run = Simulation(inputs, record_usage=True).run()
    page = _page(run, build_result(run), tmp_path, inputs=[str(folder), str(workloads)])
    first = _first_chart(page)
    listed = re.findall(r"<li><code>([^<]*)</code></li>", page[:first])
    assert listed == [str(folder / "a.yaml"), str(folder / "b.yml"), str(workloads)]
    assert "Inputs (3 files)" in page[:first]


# -------------------------------------------------------------------------------- usage per flavor

TWO_FLAVORS = """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: on-demand}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: spot}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: mixed}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: ["cpu", "memory"]
    flavors:
    - name: on-demand
      resources: [{name: cpu, nominalQuota: 2}, {name: memory, nominalQuota: 8Gi}]
    - name: spot
      resources: [{name: cpu, nominalQuota: 4}, {name: memory, nominalQuota: 8Gi}]
"""


def test_usage_is_drawn_per_flavor_never_summed(tmp_path: Path) -> None:
    docs = [TWO_FLAVORS, local_queue("team", "mixed"), workload("team", "w-2", "0s", "10s", 2), workload("team", "w-3", "1s", "10s", 3)]
    run, result = simulate(tmp_path, docs)
    admitted = {w["name"]: w["admission"]["podSetAssignments"][0]["flavors"]["cpu"] for w in result["workloads"]}
    assert admitted == {"w-2": "on-demand", "w-3": "spot"}
    data, layout = _figures(_page(run, result, tmp_path))["fig-usage"]
    peak = {(t["meta"]["flavor"], t["meta"]["resource"], bool(t["meta"].get("nominal"))): max(t["y"]) for t in data}
    assert peak[("on-demand", "cpu", False)] == 2
    assert peak[("spot", "cpu", False)] == 3  # 5 would be the flavors summed
    assert peak[("on-demand", "cpu", True)] == 2
    assert peak[("spot", "cpu", True)] == 4
    assert peak[("spot", "memory", False)] == 1  # GiB
    titles = [a["text"] for a in layout["annotations"]]
    assert titles == ["mixed · on-demand · cpu (cores)", "mixed · on-demand · memory (GiB)",
                      "mixed · spot · cpu (cores)", "mixed · spot · memory (GiB)"]


# ---------------------------------------------------------------------------------------- timeline


def _segments(timeline: Any) -> list[tuple[float, float, str]]:
    return [(s.start, s.end, s.state) for s in timeline.segments]


def test_workload_timeline_follows_the_event_log(reclaim: tuple) -> None:
    run, result, page, figures = reclaim
    timelines = {t.key: t for t in build_timelines(run, result, 30.0)}
    b5 = timelines["team-b/b-5"]
    assert _segments(b5) == [(0.0, 5.0, "admitted"), (5.0, 10.0, "pending"), (10.0, 30.0, "admitted")]
    assert b5.segments[1].note == "waiting since eviction (Preempted), later admitted"
    assert [m.time for m in b5.evictions] == [5.0]
    assert "preempted by team-a/a-1 (InCohortReclamation)" in b5.evictions[0].note
    assert _segments(timelines["team-a/a-1"]) == [(5.0, 10.0, "admitted"), (10.0, 30.0, "finished")]
    c1 = timelines["team-a/c-1"]
    assert _segments(c1) == [(6.0, 10.0, "pending"), (10.0, 20.0, "admitted"), (20.0, 30.0, "finished")]
    assert c1.segments[0].note == "waiting since arrival, later admitted"

    data, layout = figures["fig-timeline"]
    bars = {t["name"]: t for t in data if t["type"] == "bar"}
    assert set(bars) == {"pending", "admitted", "finished"}
    pending = bars["pending"]
    assert sorted(zip(pending["y"], pending["base"], pending["x"], strict=True)) == [
        ("team-a/c-1", 6, 4), ("team-b/b-4", 5, 5), ("team-b/b-5", 5, 5)]
    (crosses,) = [t for t in data if t["name"] == "eviction"]
    assert sorted(crosses["y"]) == ["team-b/b-4", "team-b/b-5"]
    assert "Workload timeline (8 of 8 workloads)" in layout["title"]["text"]


def test_the_timeline_is_bounded_and_says_what_it_leaves_out(reclaim: tuple, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    run, result, _, _ = reclaim
    timelines = build_timelines(run, result, 30.0)
    picked = choose(timelines, ["team-a", "team-b"], limit=4)
    shown = [t.key for t in picked.shown]
    assert len(shown) == 4 and {"team-b/b-4", "team-b/b-5"} <= set(shown)  # the evicted ones are kept
    assert len(picked.left_out) == 4
    assert shown == sorted(shown, key=lambda k: (k.split("/")[0] != "team-a", k))  # grouped by queue

    monkeypatch.setattr(report_timeline, "MAX_GANTT_ROWS", 4)
    page = _page(run, result, tmp_path)
    data, layout = _figures(page)["fig-timeline"]
    assert "Workload timeline (4 of 8 workloads)" in layout["title"]["text"]
    assert len({y for t in data for y in t["y"]}) == 4
    note = re.search(r"<p class='note'>(4 workloads not drawn[^<]*)</p>", page)
    assert note is not None
    for t in picked.left_out:
        assert t.key in note.group(1)


# ------------------------------------------------------------------------------------------ colours


def _span_colors(axis: dict[str, Any]) -> dict[str, str]:
    return {re.sub(r"<[^>]+>", "", text): re.search(r"color:(#[0-9a-f]{6})", text).group(1)  # type: ignore[union-attr]
            for text in axis["ticktext"]}


def test_a_queue_has_one_colour_in_every_chart(reclaim: tuple) -> None:
    _, _, _, figures = reclaim
    seen: dict[str, dict[str, set[str]]] = {"team-a": {}, "team-b": {}}

    def saw(queue: str, chart: str, color: str) -> None:
        seen[queue].setdefault(chart, set()).add(color)

    data, layout = figures["fig-usage"]
    for t in data:
        if not t["meta"].get("nominal"):
            saw(t["meta"]["series"], "usage line", t["line"]["color"])
    for a in layout["annotations"]:
        saw(a["text"].split(" · ")[0], "usage panel title", a["font"]["color"])
    for t in figures["fig-pending"][0]:
        saw(t["name"], "pending line", t["line"]["color"])
    for a in figures["fig-borrow-lend-0"][1]["annotations"]:
        saw(a["text"], "borrow/lend panel title", a["font"]["color"])
    for key, color in _span_colors(figures["fig-timeline"][1]["yaxis"]).items():
        saw(key.split("/")[0], "timeline row", color)  # each team's namespace is its queue's
    for queue, color in _span_colors(figures["fig-preemptions"][1]["yaxis2"]).items():
        saw(queue, "preemption row", color)
    for t in figures["fig-time-to-admission"][0]:
        if t["type"] == "box" and t["name"] in seen:
            saw(t["name"], "time to admission", t["marker"]["color"])

    charts = {"usage line", "usage panel title", "pending line", "borrow/lend panel title", "timeline row",
              "preemption row"}
    assert charts <= set(seen["team-a"]) and charts <= set(seen["team-b"])
    assert "time to admission" in seen["team-a"]  # its unlabelled workloads are classed by queue
    colors = {q: set().union(*by_chart.values()) for q, by_chart in seen.items()}
    assert len(colors["team-a"]) == 1 and len(colors["team-b"]) == 1, seen
    assert colors["team-a"] != colors["team-b"]


# ------------------------------------------------------------------------------------ pending reasons


def _value_at(labels: list[str], points: list, label: str, seconds: float) -> float:
    i = labels.index(label)
    value = 0.0
    for t, snap in points:
        if t <= seconds * US:
            value = snap[i]
    return value


def test_pending_reasons_are_derived_from_the_log(tmp_path: Path) -> None:
    docs = reclaim_scenario() + [workload("team-a", "huge", "2s", "1s", 100)]  # never fits: pending to the end
    run, result = simulate(tmp_path, docs)
    (huge,) = [w for w in result["workloads"] if w["name"] == "huge"]
    assert huge["state"] == "Pending" and huge["reason"]
    timelines = build_timelines(run, result, 30.0)
    labels, points = pending_reason_points(report_timeline._intervals_from_log(timelines))
    evicted = "waiting since eviction (Preempted), later admitted"
    arrived = "waiting since arrival, later admitted"
    assert _value_at(labels, points, evicted, 7) == 2  # b-4 and b-5, from 5 s to 10 s
    assert _value_at(labels, points, arrived, 7) == 1  # c-1, from 6 s to 10 s
    assert _value_at(labels, points, huge["reason"], 1) == 0
    assert _value_at(labels, points, huge["reason"], 25) == 1  # its final reason, from its arrival on
    assert _value_at(labels, points, evicted, 12) == 0

    page = _page(run, result, tmp_path)
    data, layout = _figures(page)["fig-pending-reasons"]
    assert {t["name"] for t in data} == {evicted, arrived, huge["reason"]}
    assert all(t["stackgroup"] == "reasons" and t["line"]["shape"] == "hv" for t in data)
    assert "does not record reasons over time" in page


def test_recorded_reasons_are_used_when_the_run_has_them(reclaim: tuple, tmp_path: Path) -> None:
    run, result, _, _ = reclaim
    change = SimpleNamespace
    run.reasons = [  # type: ignore[attr-defined]
        change(time_us=5 * US, workload="team-b/b-5", reason="WaitingForQuota"),
        change(time_us=6 * US, workload="team-a/c-1", reason="WaitingForPreemptedWorkloads"),
        change(time_us=8 * US, workload="team-b/b-5", reason="Pending"),
        change(time_us=10 * US, workload="team-b/b-5", reason=None),
        change(time_us=10 * US, workload="team-a/c-1", reason=None),
    ]
    try:
        page = _page(run, result, tmp_path)
    finally:
        del run.reasons  # type: ignore[attr-defined]
    data, _ = _figures(page)["fig-pending-reasons"]
    peaks = {t["name"]: max(t["y"]) for t in data}
    assert peaks == {"WaitingForQuota": 1, "WaitingForPreemptedWorkloads": 1, "Pending": 1}
    assert "as the simulator recorded it" in page


# --------------------------------------------------------------------------------- not admitted


def test_workloads_left_without_quota_are_listed_with_reason_and_message(tmp_path: Path) -> None:
    docs = [FLAVOR, cluster_queue("solo", "alone", cpu=2), local_queue("solo", "solo"), workload("solo", "too-big", "0s", "1s", 3)]
    run, result = simulate(tmp_path, docs)
    (w,) = result["workloads"]
    assert w["state"] == "Pending"
    w.setdefault("message", "couldn't assign flavors to pod set main: insufficient quota for cpu")
    page = _page(run, result, tmp_path)
    section = page[page.index('<section id="not-admitted">'):]
    assert re.search(rf"<td>solo/too-big</td><td>solo</td><td>Pending</td><td>{w['reason']}</td>"
                     rf"<td>{re.escape(w['message'])}</td>", html.unescape(section))


def test_plotly_is_embedded_once(reclaim: tuple) -> None:
    _, _, page, figures = reclaim
    assert page.count("plotly.js v") == 1
    assert "<script src=" not in page and 'src="http' not in page
    assert len(figures) >= 8
