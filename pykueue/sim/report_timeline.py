"""What each workload went through, rebuilt from the event log: the report's Gantt chart and its pending
reasons over time.

The event log says when a workload's state changed (reserved, admitted, evicted, requeued, finished,
deactivated) but not why a pending workload waited at each moment: only its *final* reason is in the
result. So pending intervals are labelled as far as the log allows: the last one, open at the end,
carries the final reason; time between an eviction and its requeue is the requeue backoff; the others
say what they followed and how they ended ("waiting since eviction (Preempted), later admitted"). A run
that records reason changes (``Run.reasons``: items with ``time_us``, ``workload`` and ``reason``,
``None`` once it holds quota) gets exact counts instead.
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pykueue.engine import events as ev
from pykueue.sim.report_plot import (
    CATEGORY_PALETTE,
    TIME_AXIS,
    Colors,
    binned_note,
    integer_ticks,
    layout,
    no_data,
    series,
)
from pykueue.sim.simulator import US, Run

MAX_GANTT_ROWS = 60  # workloads drawn in the timeline
MAX_LEFT_OUT_NAMED = 30  # left-out workloads named one by one; beyond, counted per cluster queue
MAX_LEFT_OUT_QUEUES = 12  # ... when they come from at most this many queues
MAX_REASONS = 10  # pending reasons drawn; the rest are folded into "(other)"

PENDING = "pending"
BACKOFF = "requeue backoff"
RESERVED = "quota reserved"
ADMITTED = "admitted"
FINISHED = "finished"
INACTIVE = "inactive"
STATES = (PENDING, BACKOFF, RESERVED, ADMITTED, FINISHED, INACTIVE)
STATE_COLORS = {
    PENDING: "#f2b134",
    BACKOFF: "#f7dc9c",
    RESERVED: "#7fb8e6",
    ADMITTED: "#2e9e4f",
    FINISHED: "#d0d0d0",
    INACTIVE: "#5d5d5d",
}
EVICTION_COLOR = "#d62728"

SINCE_ARRIVAL = "waiting since arrival, later admitted"
LATER_DEACTIVATED = "waiting, later deactivated"
_REASON_COLORS = {
    "WaitingForQuota": "#e8a33d",
    "ExceedsMaxQuota": "#c0392b",
    "NoMatchingFlavor": "#8e44ad",
    "Misconfigured": "#6c3483",
    "WaitingForPodsReady": "#16a085",
    "WaitingForPreemptedWorkloads": "#2980b9",
    "Pending": "#d35400",
    "Inadmissible": "#b03a2e",
    SINCE_ARRIVAL: "#bdbdbd",
    LATER_DEACTIVATED: "#7f8c8d",
}


@dataclass(frozen=True, slots=True)
class Segment:
    start: float
    end: float
    state: str
    note: str = ""


@dataclass(frozen=True, slots=True)
class Mark:
    time: float
    note: str


@dataclass
class Timeline:
    """One workload's states over time, in seconds; the last segment ends at the end of the run."""

    key: str
    cluster_queue: str | None
    arrival: float
    final_state: str
    segments: list[Segment] = field(default_factory=list)
    evictions: list[Mark] = field(default_factory=list)

    @property
    def waited(self) -> float:
        return sum(s.end - s.start for s in self.segments if s.state in (PENDING, BACKOFF))


def _flavors(assignments: Any) -> str:
    """``main×3 on default-flavor`` (or the flavor of each resource when they differ)."""
    parts = []
    for psa in assignments or []:
        flavors = psa.get("flavors") or {}
        distinct = sorted(set(flavors.values()))
        if len(distinct) == 1:
            where = distinct[0]
        else:
            where = ", ".join(f"{res}→{fl}" for res, fl in sorted(flavors.items()))
        parts.append(f"{psa.get('name', '?')}×{psa.get('count', '?')} on {where}")
    return "; ".join(parts)


def build_timelines(run: Run, result: dict[str, Any], end_s: float) -> list[Timeline]:
    """Every workload of the result, in its order, with its states from arrival to ``end_s``."""
    subs = {sub.workload.key: sub for sub in run.inputs.workloads}
    by_key: dict[str, list[dict[str, Any]]] = {}
    for e in result["events"]:
        by_key.setdefault(e["workload"], []).append(e)
    out = []
    for w in result["workloads"]:
        key = f"{w['namespace']}/{w['name']}"
        sub = subs.get(key)
        arrival = max(0.0, sub.arrival if sub is not None else float(w.get("createdAt") or 0.0))
        out.append(_timeline(key, w, sub, arrival, by_key.get(key, []), end_s))
    return out


def _timeline(key: str, w: dict[str, Any], sub: Any, arrival: float, events: list[dict[str, Any]],
              end_s: float) -> Timeline:
    tl = Timeline(key, w.get("clusterQueue"), arrival, w["state"])
    state, note, since = PENDING, "", arrival
    if sub is not None and not sub.workload.active:
        state = INACTIVE
    elif sub is not None and sub.workload.admission is not None:
        state, note = ADMITTED, "admitted before the start: " + _flavors((w.get("admission") or {}).get(
            "podSetAssignments"))
    raw: list[list[Any]] = []  # [start, end, state, note], notes of pending segments filled in below

    def go(t: float, new_state: str, new_note: str = "") -> None:
        nonlocal state, note, since
        t = max(t, arrival)
        if t > since:
            raw.append([since, t, state, note])
        state, note, since = new_state, new_note, max(since, t)

    preemptor: str | None = None  # a Preempted event comes just before its Evicted event
    last_eviction = "?"
    for e in events:
        t, typ = float(e["time"]), e["type"]
        if typ == ev.QUOTA_RESERVED:
            go(t, RESERVED, f"in {e.get('clusterQueue')}: {_flavors(e.get('podSetAssignments'))}")
        elif typ == ev.ADMITTED:
            go(t, ADMITTED, f"in {e.get('clusterQueue')}: {_flavors(e.get('podSetAssignments'))}")
        elif typ == ev.PREEMPTED:
            preemptor = f"preempted by {e.get('by')} ({e.get('reason')})"
        elif typ == ev.EVICTED:
            detail = [f"evicted: {e.get('reason') or '?'}"]
            if preemptor is not None:
                detail.append(preemptor)
                preemptor = None
            for k in ("underlyingCause", "message"):
                if e.get(k):
                    detail.append(str(e[k]))
            tl.evictions.append(Mark(t, "<br>".join(html.escape(d) for d in detail)))
            last_eviction = e.get("reason") or "?"
            go(t, BACKOFF, f"after eviction: {last_eviction}")
        elif typ == ev.REQUEUED:
            why = "since reactivation" if e.get("reason") == "Reactivated" else f"since eviction ({last_eviction})"
            go(t, PENDING, why)
        elif typ == ev.FINISHED:
            go(t, FINISHED, "finished")
        elif typ == ev.DEACTIVATED:
            go(t, INACTIVE, e.get("message") or e.get("reason") or "deactivated")
    if end_s > since or not raw:
        raw.append([since, max(end_s, since), state, note])
    # Pending labels: the open one carries the final reason; the others say how they ended.
    for i, seg in enumerate(raw):
        if seg[2] == PENDING:
            nxt = raw[i + 1][2] if i + 1 < len(raw) else None
            if nxt is None:
                seg[3] = w.get("reason") or "(reason unknown)"
            elif nxt == INACTIVE:
                seg[3] = LATER_DEACTIVATED
            elif seg[3]:
                seg[3] = f"waiting {seg[3]}, later admitted"
            else:
                seg[3] = SINCE_ARRIVAL
        elif seg[2] == INACTIVE and i + 1 == len(raw) and not seg[3]:
            seg[3] = w.get("message") or w.get("reason") or "inactive"
    tl.segments = [Segment(s, e, st, n) for s, e, st, n in raw]
    return tl


# ------------------------------------------------------------------------------------------- Gantt


@dataclass
class GanttChoice:
    shown: list[Timeline]
    left_out: list[Timeline]
    rule: str


def choose(timelines: list[Timeline], queue_order: Sequence[str], limit: int | None = None) -> GanttChoice:
    """All workloads when they fit. Else half the rows go to the telling ones (evicted most, never
    admitted, longest waits) and the rest to the others spread evenly over arrival, so that the chart
    shows both what went wrong and what a typical workload went through. Drawn grouped by cluster queue
    (in the report's queue order), then by arrival."""
    rank = {q: i for i, q in enumerate(queue_order)}
    limit = MAX_GANTT_ROWS if limit is None else limit
    if len(timelines) <= limit:
        shown, left, rule = list(timelines), [], ""
    else:

        def interest(t: Timeline) -> tuple:
            never = t.final_state in ("Pending", "Inactive")
            return (-len(t.evictions), -int(never), -round(t.waited, 6), t.arrival, t.key)

        telling = [t for t in timelines if t.evictions or t.final_state in ("Pending", "Inactive")]
        picked = sorted(telling, key=interest)[: limit // 2]
        chosen = {t.key for t in picked}
        rest = sorted((t for t in timelines if t.key not in chosen), key=lambda t: (t.arrival, t.key))
        room = limit - len(picked)
        step = len(rest) / room if room else 0.0
        picked += [rest[int(i * step)] for i in range(room)]
        chosen = {t.key for t in picked}
        shown, left = picked, [t for t in timelines if t.key not in chosen]
        rule = (f"{len(picked) - room} evicted or never admitted (most evictions first), "
                f"{room} spread evenly over arrival among the others")

    def place(t: Timeline) -> tuple:
        return (rank.get(t.cluster_queue or "", len(rank)), t.cluster_queue or "", t.arrival, t.key)

    return GanttChoice(sorted(shown, key=place), sorted(left, key=place), rule)


def gantt_figure(choice: GanttChoice, colors: Colors, end_s: float, total: int) -> Any:
    import plotly.graph_objects as go

    fig = go.Figure()
    rows = [t.key for t in choice.shown]
    for state in STATES:
        segs = [(t, s) for t in choice.shown for s in t.segments if s.state == state and s.end > s.start]
        if not segs:
            continue
        fig.add_trace(go.Bar(
            orientation="h", y=[t.key for t, _ in segs], base=[s.start for _, s in segs],
            x=[round(s.end - s.start, 6) for _, s in segs], name=state, legendgroup=state,
            marker={"color": STATE_COLORS[state], "line": {"width": 0}},
            customdata=[[t.cluster_queue or "-", s.start, s.end, html.escape(s.note)] for t, s in segs],
            hovertemplate="%{y} (%{customdata[0]})<br>" + html.escape(state)
                          + " %{customdata[1]}–%{customdata[2]} s<br>%{customdata[3]}<extra></extra>",
        ))
    marks = [(t, m) for t in choice.shown for m in t.evictions]
    if marks:
        fig.add_trace(go.Scatter(
            x=[m.time for _, m in marks], y=[t.key for t, _ in marks], mode="markers", name="eviction",
            marker={"symbol": "x-thin", "size": 11, "line": {"width": 2.5, "color": EVICTION_COLOR},
                    "color": EVICTION_COLOR},
            customdata=[[m.note] for _, m in marks],
            hovertemplate="%{y} at %{x} s<br>%{customdata[0]}<extra></extra>",
        ))
    # Each row's label in its cluster queue's colour: the same colour as the queue in every other chart.
    ticktext = [f'<span style="color:{colors.queue(t.cluster_queue)}">{html.escape(t.key)}</span>'
                for t in choice.shown]
    fig.update_yaxes(type="category", categoryorder="array", categoryarray=rows, tickvals=rows,
                     ticktext=ticktext, autorange="reversed", tickfont={"size": 11})
    fig.update_xaxes(title_text=TIME_AXIS, range=[0, end_s if end_s > 0 else 1])
    fig.update_layout(barmode="overlay", bargap=0.25)
    title = f"Workload timeline ({len(choice.shown)} of {total} workloads)"
    if not choice.shown:
        no_data(fig, "No workloads")
    layout(fig, title, 150 + 20 * max(4, len(rows)))
    fig.update_layout(legend={"orientation": "h", "x": 1, "xanchor": "right", "y": 1.0, "yanchor": "bottom"})
    return fig


def left_out_note(choice: GanttChoice) -> str:
    """Which workloads the timeline leaves out, by name when few, else counted per cluster queue."""
    if not choice.left_out:
        return ""
    n = len(choice.left_out)
    head = f"{n} workload{'s' if n != 1 else ''} not drawn (chosen: {choice.rule})"
    if n <= MAX_LEFT_OUT_NAMED:
        return f"{head}: " + ", ".join(html.escape(t.key) for t in choice.left_out) + "."
    per_queue = Counter(t.cluster_queue or "(no cluster queue)" for t in choice.left_out)
    if len(per_queue) > MAX_LEFT_OUT_QUEUES:
        return f"{head}, from {len(per_queue)} cluster queues."
    parts = [f"{html.escape(q)} {c}" for q, c in sorted(per_queue.items(), key=lambda kv: (-kv[1], kv[0]))]
    return f"{head}; per cluster queue: " + ", ".join(parts) + "."


# ------------------------------------------------------------------------------- pending reasons


def _intervals_from_log(timelines: list[Timeline]) -> list[tuple[float, float, str]]:
    out = []
    for t in timelines:
        for s in t.segments:
            if s.state == PENDING and s.end > s.start:
                out.append((s.start, s.end, s.note or "(reason unknown)"))
            elif s.state == BACKOFF and s.end > s.start:
                out.append((s.start, s.end, "requeue backoff"))
    return out


def _intervals_from_reasons(changes: Sequence[Any], end_s: float) -> list[tuple[float, float, str]]:
    """Intervals from recorded reason changes; ``Deactivated`` is not pending, ``None`` holds quota."""
    open_: dict[str, tuple[float, str]] = {}
    out = []
    for c in changes:
        t = c.time_us / US
        prev = open_.pop(c.workload, None)
        if prev is not None and t > prev[0]:
            out.append((prev[0], t, prev[1]))
        if c.reason is not None and c.reason != "Deactivated":
            open_[c.workload] = (t, c.reason)
    for start, reason in open_.values():
        if end_s > start:
            out.append((start, end_s, reason))
    return out


def recorded_reasons(run: Run) -> Sequence[Any] | None:
    """``Run.reasons`` when the simulator recorded reason changes (a hook this module can use)."""
    changes = getattr(run, "reasons", None)
    return changes if changes else None


def pending_reason_points(intervals: list[tuple[float, float, str]]) -> tuple[list[str], list[tuple[int, tuple[float, ...]]]]:
    """Count of pending workloads per reason as step points (time in microseconds), reasons by weight."""
    weight: Counter[str] = Counter()
    for s, e, r in intervals:
        weight[r] += e - s
    ranked = sorted(weight, key=lambda r: (-weight[r], r))
    keep = ranked[:MAX_REASONS] if len(ranked) <= MAX_REASONS + 1 else ranked[:MAX_REASONS - 1]
    labels = keep + (["(other)"] if len(keep) < len(ranked) else [])
    index = {r: i for i, r in enumerate(labels)}
    deltas: dict[int, list[int]] = {}
    for s, e, r in intervals:
        i = index.get(r, len(labels) - 1)
        for t, d in ((round(s * US), 1), (round(e * US), -1)):
            deltas.setdefault(t, [0] * len(labels))[i] += d
    counts = [0] * len(labels)
    points: list[tuple[int, tuple[float, ...]]] = []
    for t in sorted(deltas):
        for i, d in enumerate(deltas[t]):
            counts[i] += d
        points.append((t, tuple(float(c) for c in counts)))
    if not points or points[0][0] > 0:
        points.insert(0, (0, tuple(0.0 for _ in labels)))
    return labels, points


def reasons_figure(run: Run, timelines: list[Timeline], end_s: float) -> tuple[Any, str]:
    """Stacked step areas of pending workloads by reason, and the caption saying how exact they are."""
    import plotly.graph_objects as go

    changes = recorded_reasons(run)
    if changes is not None:
        intervals = _intervals_from_reasons(changes, end_s)
        caption = ("Pending workloads by the reason of their QuotaReserved=False condition, as the simulator "
                   "recorded it after every instant. Inactive workloads are not counted.")
    else:
        intervals = _intervals_from_log(timelines)
        caption = ("Pending workloads over time by reason. This run's log does not record reasons over time, so: "
                   "a workload still pending at the end is counted under its final reason for its whole last wait; "
                   "time between an eviction and its requeue is the requeue backoff; earlier waits are labelled by "
                   "what they followed (arrival, eviction) and how they ended. Inactive workloads are not counted.")
    labels, points = pending_reason_points(intervals)
    end_us = round(end_s * US)
    fig = go.Figure()
    made = []
    s = series(points, list(range(len(labels))), end_us, [1.0] * len(labels)) if labels else None
    if s is not None:
        made.append(s)
        for i, label in enumerate(labels):
            color = _REASON_COLORS.get(label, CATEGORY_PALETTE[i % len(CATEGORY_PALETTE)])
            if label == "requeue backoff":
                color = STATE_COLORS[BACKOFF]
            fig.add_trace(go.Scatter(
                x=s.x, y=s.ys[i], name=label, mode="lines", stackgroup="reasons", showlegend=True,
                line={"shape": "hv", "width": 0.8, "color": color}, fillcolor=color,
                hovertemplate=f"%{{x}} s: %{{y}}<extra>{html.escape(label)}</extra>",
            ))
    else:
        no_data(fig, "No workload was ever pending")
    fig.update_xaxes(title_text=TIME_AXIS, range=[0, end_s if end_s > 0 else 1])
    fig.update_yaxes(title_text="pending workloads", rangemode="tozero")
    integer_ticks(fig, made, stacked=True)
    layout(fig, f"Pending workloads by reason{binned_note(made)}", 420)
    return fig, caption


__all__ = [
    "MAX_GANTT_ROWS",
    "STATES",
    "GanttChoice",
    "Mark",
    "Segment",
    "Timeline",
    "build_timelines",
    "choose",
    "gantt_figure",
    "left_out_note",
    "pending_reason_points",
    "reasons_figure",
]
