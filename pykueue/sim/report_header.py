"""The top of the report, before any chart: the verdict of a range spec, the summary, the inputs; and the
table of workloads left without quota at the end.

A reader opens the page to learn whether the run passed and what it was run on, so those come first and
are plain HTML (they read even if the scripts fail).
"""

from __future__ import annotations

import html
import json
import os
from collections import Counter
from collections.abc import Sequence
from typing import Any

from pykueue.engine import events as ev

MAX_INPUTS_LISTED = 200
MAX_NOT_ADMITTED_ROWS = 200


def _e(value: Any) -> str:
    return html.escape(str(value))


def _ms(value: Any) -> str:
    return "-" if value is None else f"{value:,}" if isinstance(value, int) else _e(value)


# ------------------------------------------------------------------------------------------ verdict


def stopped_html(stopped: str | None) -> str:
    if not stopped:
        return ""
    return ("<section id='stopped' class='verdict fail'><h2>The simulation stopped early</h2>"
            f"<p>{_e(stopped)}</p><p class='note'>Everything below is the run up to that point.</p></section>")


def verdict_html(result: dict[str, Any], rangespec: str | None, verdict: Sequence[str] | None,
                 stopped: str | None = None) -> str:
    """PASS/FAIL with the failing lines, and each checked figure against its bound.

    ``verdict`` is the list of failures as ``pykueue.perf.rangespec.check`` words them (empty: all in
    range); when only ``rangespec`` (the file) is given, the check is run here on the result's summary.
    """
    if rangespec is None and verdict is None:
        return ""
    spec = None
    problem = None
    if rangespec is not None:
        from pykueue.perf.rangespec import check, load_rangespec

        try:
            spec = load_rangespec(rangespec)
        except Exception as e:  # noqa: BLE001 - the page says so rather than failing the run
            problem = " ".join(str(e).split())
        if verdict is None and spec is not None and not stopped:
            verdict = check(result.get("summary") or {}, spec)
    source = f" against <code>{_e(rangespec)}</code>" if rangespec else ""
    if stopped:
        verdict, problem = None, "the simulation stopped early, so its figures are not checked"
    if verdict is None:
        return (f"<section id='verdict' class='verdict unknown'><h2>Range spec{source}: not checked</h2>"
                f"<p>{_e(problem or 'no verdict')}</p></section>")
    ok = not verdict
    lines = "".join(f"<li>{_e(line)}</li>" for line in verdict)
    head = "PASS: every figure is in range" if ok else f"FAIL: {len(verdict)} figure{'s' if len(verdict) != 1 else ''} out of range"
    table = _bounds_table(result.get("summary") or {}, spec) if spec is not None else ""
    return (f"<section id='verdict' class='verdict {'pass' if ok else 'fail'}'><h2>Range spec{source}: {head}</h2>"
            f"{f'<ul>{lines}</ul>' if lines else ''}{table}</section>")


def _bounds_table(summary: dict[str, Any], spec: Any) -> str:
    rows: list[tuple[str, str, str, bool | None]] = []
    if spec.max_wall_ms is not None:
        wall = summary.get("wallMs")
        rows.append(("wall time (ms)", _ms(wall), f"≤ {spec.max_wall_ms:,}",
                     None if wall is None else wall <= spec.max_wall_ms))
    bounds = spec.cluster_queue_classes_min_usage or {}
    for cls, figures in sorted((summary.get("clusterQueueClasses") or {}).items()):
        actual = figures.get("avgUsagePercent")
        bound = bounds.get(cls)
        rows.append((f"cluster queue class {cls}: usage %", "-" if actual is None else f"{actual:.2f}",
                     "no entry" if bound is None else f"≥ {bound:.2f}",
                     None if actual is None or bound is None else actual >= bound))
    limits = spec.wl_classes_max_avg_time_to_admission_ms or {}
    for cls, figures in sorted((summary.get("workloadClasses") or {}).items()):
        avg = figures.get("avgTimeToAdmissionMs")
        bound = limits.get(cls)
        rows.append((f"workload class {cls}: avg time to admission (ms)", _ms(avg),
                     "no entry" if bound is None else f"≤ {bound:,}",
                     None if avg is None or bound is None else avg <= bound))
    if not rows:
        return ""
    body = "".join(
        f"<tr class='{'' if ok is None else ('ok' if ok else 'bad')}'><td>{_e(name)}</td><td>{actual}</td>"
        f"<td>{_e(bound)}</td><td>{'-' if ok is None else ('✓' if ok else '✗')}</td></tr>"
        for name, actual, bound, ok in rows
    )
    return ("<table class='stats'><tr><th>figure</th><th>this run</th><th>range spec</th><th></th></tr>"
            f"{body}</table>")


# ------------------------------------------------------------------------------------------ summary


def facts_html(result: dict[str, Any], queues: int, cohorts: int, fair: bool) -> str:
    states = Counter(w["state"] for w in result["workloads"])
    types = Counter(e["type"] for e in result["events"])
    facts = [
        ("end time", f"{result.get('endTime') or 0:g} s"),
        ("workloads", str(len(result["workloads"]))),
        *((f"· {state}", str(n)) for state, n in sorted(states.items())),
        ("preemptions", str(types.get(ev.PREEMPTED, 0))),
        ("evictions", str(types.get(ev.EVICTED, 0))),
        ("cluster queues", str(queues)),
        ("cohorts", str(cohorts)),
        ("fair sharing", "on" if fair else "off"),
    ]
    rows = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in facts)
    return f"<table class='facts'>{rows}</table>"


def summary_html(summary: dict[str, Any]) -> str:
    """A generator run's summary as two tables (workload classes, cluster queue classes) and the wall
    time; any other summary as its JSON."""
    if not summary:
        return ""
    wl = summary.get("workloadClasses")
    cq = summary.get("clusterQueueClasses")
    if not isinstance(wl, dict) and not isinstance(cq, dict):
        text = json.dumps(summary, indent=2, sort_keys=True, ensure_ascii=False)
        return f"<div class='summary'><h3>Summary</h3><pre>{_e(text)}</pre></div>"
    parts = ["<div class='summary'><h3>Summary</h3>"]
    if "wallMs" in summary:
        parts.append(f"<p class='note'>wall time (virtual, last finish): <b>{_ms(summary['wallMs'])} ms</b></p>")
    if isinstance(wl, dict) and wl:
        rows = "".join(
            f"<tr><td>{_e(name)}</td><td>{_ms(f.get('count'))}</td><td>{_ms(f.get('avgTimeToAdmissionMs'))}</td>"
            f"<td>{_ms(f.get('maxTimeToAdmissionMs'))}</td><td>{_ms(f.get('avgTimeToFinishMs'))}</td>"
            f"<td>{_ms(f.get('totalEvictions'))}</td></tr>"
            for name, f in sorted(wl.items())
        )
        parts.append("<table class='stats' id='summary-workload-classes'><tr><th>workload class</th><th>count</th>"
                     "<th>avg ms to admission</th><th>max ms to admission</th><th>avg ms to finish</th>"
                     f"<th>evictions</th></tr>{rows}</table>")
    if isinstance(cq, dict) and cq:
        rows = "".join(
            f"<tr><td>{_e(name)}</td><td>{_ms(f.get('clusterQueues'))}</td>"
            f"<td>{'-' if f.get('avgUsagePercent') is None else format(f['avgUsagePercent'], '.2f')}</td>"
            f"<td>{_ms(f.get('nominalQuota'))}</td></tr>"
            for name, f in sorted(cq.items())
        )
        parts.append("<table class='stats' id='summary-queue-classes'><tr><th>cluster queue class</th><th>queues</th>"
                     f"<th>avg usage % of nominal</th><th>nominal quota (milli)</th></tr>{rows}</table>")
    parts.append("</div>")
    return "".join(parts)


# ------------------------------------------------------------------------------------------- inputs


def input_files(inputs: Sequence[str] | None, fallback: Sequence[str]) -> list[str]:
    """The files read, in reading order: each path given, a directory expanded to its YAML files."""
    if inputs is None:
        return sorted(set(fallback))
    from pykueue.api.documents import expand_paths

    out: list[str] = []
    for path in inputs:
        if os.path.isdir(path):
            out.extend(p for p in expand_paths([path]) if isinstance(p, str))
        else:
            out.append(path)
    seen: set[str] = set()
    return [p for p in out if not (p in seen or seen.add(p))]  # type: ignore[func-returns-value]


def inputs_html(files: list[str]) -> str:
    if not files:
        return ""
    shown = files[:MAX_INPUTS_LISTED]
    items = "".join(f"<li><code>{_e(f)}</code></li>" for f in shown)
    more = f"<li>… and {len(files) - len(shown)} more</li>" if len(files) > len(shown) else ""
    return (f"<details id='inputs' open><summary>Inputs ({len(files)} file{'s' if len(files) != 1 else ''})"
            f"</summary><ul class='inputs'>{items}{more}</ul></details>")


# --------------------------------------------------------------------------------- not admitted


def not_admitted_html(result: dict[str, Any]) -> str:
    """Workloads that hold no quota at the end, with upstream's reason and message."""
    rows = [w for w in result["workloads"] if w["state"] in ("Pending", "Inactive")]
    if not rows:
        return "<p class='note'>Every workload held quota or had finished at the end.</p>"
    shown = rows[:MAX_NOT_ADMITTED_ROWS]
    body = "".join(
        f"<tr><td>{_e(w['namespace'])}/{_e(w['name'])}</td><td>{_e(w.get('clusterQueue') or '-')}</td>"
        f"<td>{_e(w['state'])}</td><td>{_e(w.get('reason') or '-')}</td><td>{_e(w.get('message') or '')}</td></tr>"
        for w in shown
    )
    more = (f"<p class='note'>{len(rows) - len(shown)} more not shown (the JSON result lists them all).</p>"
            if len(rows) > len(shown) else "")
    return ("<table class='stats wide'><tr><th>workload</th><th>cluster queue</th><th>state</th><th>reason</th>"
            f"<th>message</th></tr>{body}</table>{more}")
