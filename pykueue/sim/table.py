"""The ``table`` view of a simulation: a timeline, the workloads and a summary, for people.

Everything fits the console's width (80 columns off a terminal) without wrapping a name across lines:
a column that does not fit is shortened with an ellipsis, except a row's own name (the workload),
which goes on a line of its own above its row when its column is too narrow. Longer details (why a
workload waits, who preempted whom) go on indented lines under their row, wrapped at spaces.
Columns follow ``kubectl get workloads``: QUEUE is the LocalQueue, RESERVED IN the ClusterQueue that
holds the quota. A generator run prints the summary and the rangespec verdict only; its rows stay
behind ``--output json|yaml``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.text import Text

from pykueue.engine.engine import Engine
from pykueue.engine.quota import FR
from pykueue.quantity import format_quantity, to_canonical

_STYLE = {
    "Admitted": "green",
    "QuotaReserved": "cyan",
    "Finished": "dim",
    "Preempted": "bold red",
    "Evicted": "red",
    "Requeued": "yellow",
    "Deactivated": "magenta",
    "Pending": "yellow",
    "Inactive": "magenta",
}
_STATES = ("Pending", "QuotaReserved", "Admitted", "Finished", "Inactive")
_GAP = 2  # spaces between columns
_DETAIL_INDENT_MAX = 24  # detail lines sit under their row's name, at most this far in
_ELLIPSIS = "…"

# Nominal quota per cluster queue, (flavor, resource) -> canonical integer (milli-cpu, bytes, units).
Quotas = dict[str, dict[FR, int]]


class _Console(Console):
    """A console that lets a closed pipe (``| head``) surface as ``BrokenPipeError``, which the CLI
    ends quietly; rich's own handling exits with status 1."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


def terminal() -> Console:
    """The console the CLI renders tables on (stdout)."""
    return _Console()


def nominal_quotas(engine: Engine) -> Quotas:
    """Each cluster queue's final nominal quota, so that usage can be shown against it (borrowing)."""
    out: Quotas = {}
    for name in engine.cluster_queue_names():
        cq = engine.cluster_queue_status(name)
        assert cq is not None
        out[name] = {
            (fq.name, res): q.nominal
            for group in cq.spec.resource_groups
            for fq in group.flavors
            for res, q in fq.resources.items()
        }
    return out


# ------------------------------------------------------------------------------------------ text


def seconds(v: float | None) -> str:
    """A virtual time in seconds without float noise or exponents: ``0s``, ``2.5s``, ``372480s``."""
    if v is None:
        return "-"
    text = f"{v:.6f}".rstrip("0").rstrip(".")
    return f"{text}s"


def millis(ms: float | None) -> str:
    """A figure in milliseconds, as upstream's summary keeps them, readable: ``820ms``, ``41.2s``."""
    if ms is None:
        return "-"
    if abs(ms) < 1000:
        return f"{ms:g}ms"
    return seconds(round(ms / 1000, 3))


def shorten(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters: the middle gives way to an ellipsis, so that both the
    start (a namespace, a prefix) and the end (a generated index) stay readable."""
    if len(text) <= width:
        return text
    if width <= 1:
        return _ELLIPSIS[:width]
    keep = width - 1
    head = (keep + 1) // 2
    tail = keep - head
    return text[:head] + _ELLIPSIS + (text[-tail:] if tail else "")


def wrap(text: str, width: int) -> list[str]:
    """Greedy wrap at spaces; a word longer than a line is shortened, never split across lines."""
    lines: list[str] = []
    line = ""
    for word in text.split():
        word = shorten(word, width)
        if not line:
            line = word
        elif len(line) + 1 + len(word) <= width:
            line += " " + word
        else:
            lines.append(line)
            line = word
    if line:
        lines.append(line)
    return lines


# ----------------------------------------------------------------------------------------- tables


@dataclass(frozen=True, slots=True)
class Column:
    header: str
    right: bool = False
    # The row's name: too long for its column, it goes on its own line above the row, in full.
    key: bool = False
    # May be shortened with an ellipsis when the table does not fit (after the key column gave way).
    shrink: bool = False


@dataclass(slots=True)
class Row:
    cells: list[str]
    styles: dict[int, str] = field(default_factory=dict)
    details: list[str] = field(default_factory=list)


def _fit(columns: Sequence[Column], natural: list[int], width: int) -> list[int]:
    """Column widths within ``width``: first the key column narrows, as little as needed (only the
    names longer than it move to their own lines, and nothing is lost); then shrinkable columns,
    widest first, down to their header (at least 6), shortened with an ellipsis."""
    widths = list(natural)

    def over() -> int:
        return sum(widths) + _GAP * (len(widths) - 1) - width

    for i, c in enumerate(columns):
        excess = over()
        if c.key and excess > 0:
            widths[i] = max(len(c.header), widths[i] - excess)
    while over() > 0:
        shrinkable = [i for i, c in enumerate(columns) if c.shrink and widths[i] > max(len(c.header), 6)]
        if not shrinkable:
            break
        i = max(shrinkable, key=lambda j: (widths[j], -j))
        widths[i] -= 1
    return widths


def _line(console: Console, text: Text) -> None:
    """One physical line: never wrapped, cut with an ellipsis in the (pathological) case it is too long."""
    console.print(text, no_wrap=True, overflow="ellipsis", crop=True, soft_wrap=False)


def _cell(text: str, w: int, right: bool) -> str:
    return text.rjust(w) if right else text.ljust(w)


def print_table(console: Console, columns: Sequence[Column], rows: Iterable[Row], *, title: str | None = None) -> None:
    """A kubectl-like table (upper-case headers, columns two spaces apart) that fits the console."""
    rows = list(rows)
    width = console.width
    natural = [max([len(c.header), *(len(r.cells[i]) for r in rows)]) for i, c in enumerate(columns)]
    widths = _fit(columns, natural, width)
    if title:
        _line(console, Text(title, style="bold"))
    last = len(columns) - 1
    # Details sit under the row's name, so that they read as being about it.
    key = next((i for i, c in enumerate(columns) if c.key), 0)
    indent = min(sum(widths[:key]) + _GAP * key + 2, _DETAIL_INDENT_MAX)
    header = Text()
    for i, c in enumerate(columns):
        header.append(c.header if i == last and not c.right else _cell(c.header, widths[i], c.right))
        if i < last:
            header.append(" " * _GAP)
    header.stylize("bold")
    _line(console, header)
    for row in rows:
        line = Text()
        for i, c in enumerate(columns):
            value = row.cells[i]
            if len(value) > widths[i]:
                if c.key:
                    _line(console, Text(shorten(value, width)))
                    value = ""
                else:
                    value = shorten(value, widths[i])
            text = value if i == last and not c.right else _cell(value, widths[i], c.right)
            line.append(text, style=row.styles.get(i, ""))
            if i < last:
                line.append(" " * _GAP)
        line.rstrip()
        _line(console, line)
        for detail in row.details:
            for n, part in enumerate(wrap(detail, max(width - indent - 2, 10))):
                _line(console, Text(" " * (indent + (2 if n else 0)) + part))


# ----------------------------------------------------------------------------------------- render


def _flavors(assignments: Sequence[dict[str, Any]] | None) -> str:
    """The flavors of an admission, each once, in the order the pod sets name them."""
    seen: dict[str, None] = {}
    for ps in assignments or ():
        for flavor in ps.get("flavors", {}).values():
            seen.setdefault(flavor, None)
    return ",".join(seen)


def _timeline(console: Console, events: list[dict[str, Any]], max_events: int, *, tail: bool) -> None:
    columns = (Column("TIME", right=True), Column("EVENT"), Column("WORKLOAD", key=True),
               Column("CLUSTER QUEUE", shrink=True), Column("DETAIL", shrink=True))
    if len(events) <= max_events:
        shown, note = events, None
    elif tail:
        shown = events[-max_events:]
        note = f"... {len(events) - max_events} earlier events (--output json has them all)"
    else:
        shown = events[:max_events]
        note = f"... {len(events) - max_events} more events (--output json has them all)"
    rows = []
    for e in shown:
        kind = e["type"]
        if kind in ("QuotaReserved", "Admitted"):
            detail = _flavors(e.get("podSetAssignments"))
            if e.get("clusterName"):  # MultiKueue: the worker it was admitted through
                detail += f" on {e['clusterName']}"
        else:
            detail = e.get("reason") or ""
        details = []
        if e.get("by"):
            details.append(f"by {e['by']}")
        if e.get("message") and not (kind == "Evicted" and e.get("reason") == "Preempted"):
            details.append(str(e["message"]))  # a preemption's is said by its Preempted row already
        if e.get("underlyingCause"):
            details.append(f"cause: {e['underlyingCause']}")
        rows.append(Row([seconds(e["time"]), kind, e["workload"], e.get("clusterQueue") or "-", detail],
                        styles={1: _STYLE.get(kind, "")}, details=details))
    _line(console, Text("Timeline", style="bold"))
    if tail and note:
        _line(console, Text(note, style="dim"))
    print_table(console, columns, rows)
    if note and not tail:
        _line(console, Text(note, style="dim"))


def _last_evictions(events: list[dict[str, Any]]) -> dict[str, str]:
    """Per workload, its last eviction in words: when, why and by whom (or upstream's message)."""
    out: dict[str, str] = {}
    preempted_by: dict[str, tuple[str, str | None]] = {}
    for e in events:
        if e["type"] == "Preempted":
            preempted_by[e["workload"]] = (e.get("by") or "?", e.get("reason"))
        elif e["type"] == "Evicted":
            text = f"last at {seconds(e['time'])}: {e.get('reason') or 'Evicted'}"
            by = preempted_by.pop(e["workload"], None) if e.get("reason") == "Preempted" else None
            if by is not None:
                text += f" ({by[1]}) by {by[0]}" if by[1] else f" by {by[0]}"
            elif e.get("message"):
                text += f": {e['message']}"
            if e.get("underlyingCause"):
                text += f" (cause: {e['underlyingCause']})"
            out[e["workload"]] = text
    return out


def _workloads(console: Console, result: dict[str, Any], max_workloads: int) -> None:
    columns = (Column("NAME", key=True), Column("QUEUE", shrink=True), Column("RESERVED IN", shrink=True),
               Column("STATE"), Column("ADMITTED", right=True), Column("FLAVORS", shrink=True))
    evicted = _last_evictions(result["events"])
    workloads = result["workloads"]
    rows = []
    for w in workloads[:max_workloads]:
        admission = w.get("admission")
        key = f"{w['namespace']}/{w['name']}"
        details = []
        if w.get("reason") or w.get("message"):
            details.append(": ".join(str(p) for p in (w.get("reason"), w.get("message")) if p))
        if w.get("evictions"):
            times = f"evicted {w['evictions']} time{'s' if w['evictions'] > 1 else ''}"
            details.append(f"{times}; {evicted[key]}" if key in evicted else times)
        rows.append(Row(
            [key, w.get("queueName") or "-", admission["clusterQueue"] if admission else "-", w["state"],
             # a workload evicted and waiting again is not admitted: its last admission is in its details
             seconds(w.get("admittedAt")) if w["state"] in ("Admitted", "Finished") else "-",
             _flavors(admission["podSetAssignments"]) if admission else "-"],
            styles={3: _STYLE.get(w["state"], "")}, details=details))
    print_table(console, columns, rows, title="Workloads")
    if len(workloads) > max_workloads:
        _line(console, Text(f"... {len(workloads) - max_workloads} more workloads (--output json has them all)",
                            style="dim"))


def _usage(cq: dict[str, Any], quotas: Quotas | None) -> list[str]:
    """One line per flavor: ``gpu-t4: cpu=8/16, nvidia.com/gpu=8/4 (+4 borrowed)`` (``used/nominal``)."""
    nominal = (quotas or {}).get(cq["name"])
    lines = []
    for flavor, resources in cq["usage"].items():
        parts = []
        for res, qty in resources.items():
            part = f"{res}={qty}"
            if nominal is not None:
                quota = nominal.get((flavor, res), 0)
                part += f"/{format_quantity(res, quota)}"
                used = to_canonical(res, qty)
                if used > quota:
                    part += f" (+{format_quantity(res, used - quota)} borrowed)"
            parts.append(part)
        lines.append(f"{flavor}: {', '.join(parts)}")
    return lines


def _cluster_queues(console: Console, cqs: list[dict[str, Any]], quotas: Quotas | None, limit: int) -> None:
    columns = (Column("CLUSTER QUEUE", key=True), Column("COHORT", shrink=True), Column("PENDING", right=True),
               Column("ADMITTED", right=True))
    rows = [Row([cq["name"], cq.get("cohort") or "-", str(cq["pendingWorkloads"]), str(cq["admittedWorkloads"])],
                details=[f"usage {line}" for line in _usage(cq, quotas)]) for cq in cqs[:limit]]
    print_table(console, columns, rows)
    if len(cqs) > limit:
        _line(console, Text(f"... {len(cqs) - limit} more cluster queues (--output json has them all)", style="dim"))


def _figures(console: Console, summary: dict[str, Any]) -> None:
    """A generator run's summary: upstream's performance figures per workload and queue class."""
    classes = summary.get("workloadClasses") or {}
    if classes:
        columns = (Column("WORKLOAD CLASS", key=True), Column("COUNT", right=True), Column("AVG ADMIT", right=True),
                   Column("MAX ADMIT", right=True), Column("AVG FINISH", right=True), Column("EVICTIONS", right=True))
        print_table(console, columns, [
            Row([name, str(f.get("count", "-")), millis(f.get("avgTimeToAdmissionMs")),
                 millis(f.get("maxTimeToAdmissionMs")), millis(f.get("avgTimeToFinishMs")),
                 str(f.get("totalEvictions", "-"))])
            for name, f in sorted(classes.items())
        ])
    queue_classes = summary.get("clusterQueueClasses") or {}
    if queue_classes:
        if classes:
            console.print()
        columns = (Column("QUEUE CLASS", key=True), Column("QUEUES", right=True), Column("AVG USAGE", right=True))
        print_table(console, columns, [
            Row([name, str(f.get("clusterQueues", "-")),
                 "-" if f.get("avgUsagePercent") is None else f"{f['avgUsagePercent']:.2f}%"])
            for name, f in sorted(queue_classes.items())
        ])


def _pairs(console: Console, pairs: Sequence[tuple[str, str]]) -> None:
    """``label  value`` lines, labels aligned; a long value wraps under itself."""
    pad = max(len(label) for label, _ in pairs) + _GAP
    for label, value in pairs:
        for n, part in enumerate(wrap(value, max(console.width - pad, 10))):
            _line(console, Text((label if n == 0 else "").ljust(pad) + part))


def _summary(console: Console, result: dict[str, Any], *, quotas: Quotas | None, rows: bool,
             verdict: Sequence[str] | None, stopped: str | None, max_queues: int) -> None:
    states = Counter(w["state"] for w in result["workloads"])
    counts = ", ".join(f"{states[s]} {s}" for s in _STATES if states[s])
    cqs = result["clusterQueues"]
    pairs = [
        ("end time", seconds(result["endTime"])),
        ("workloads", f"{len(result['workloads'])}" + (f" ({counts})" if counts else "")),
        ("events", str(len(result["events"]))),
        ("cluster queues", f"{len(cqs)} ({sum(c['pendingWorkloads'] for c in cqs)} pending, "
                           f"{sum(c['admittedWorkloads'] for c in cqs)} admitted workloads)"),
    ]
    summary = result.get("summary") or {}
    if "wallMs" in summary:
        pairs.append(("wall time", f"{millis(summary['wallMs'])} (virtual: the last workload finished)"))
    if stopped:
        pairs.append(("stopped", stopped))
    _line(console, Text("Summary", style="bold"))
    _pairs(console, pairs)
    if rows and cqs:
        console.print()
        _cluster_queues(console, cqs, quotas, max_queues)
    if summary.get("workloadClasses") or summary.get("clusterQueueClasses"):
        console.print()
        _figures(console, summary)
    if verdict is not None:
        console.print()
        if verdict:
            _line(console, Text(f"rangespec: FAILED, {len(verdict)} figure(s) out of range", style="bold red"))
            for failure in verdict:
                for n, part in enumerate(wrap(failure, max(console.width - 4, 10))):
                    _line(console, Text((" " * (2 if n == 0 else 4)) + part))
        else:
            _line(console, Text("rangespec: pass, every figure within range", style="bold green"))


def render(result: dict[str, Any], console: Console, *, max_events: int = 200, max_workloads: int = 500,
           max_queues: int = 100, quotas: Quotas | None = None, rows: bool = True,
           verdict: Sequence[str] | None = None, stopped: str | None = None) -> None:
    """Print ``result`` on ``console``.

    ``quotas`` (from ``nominal_quotas``) shows usage against nominal quota; ``rows=False`` (a
    generator run) leaves out the timeline and the workload and queue rows; ``verdict`` is the
    rangespec's failures (empty: it passed); ``stopped`` is why a run that could not settle stopped:
    the timeline then shows its last events, the loop itself."""
    if rows:
        _timeline(console, result["events"], max_events, tail=stopped is not None)
        console.print()
        _workloads(console, result, max_workloads)
        console.print()
    _summary(console, result, quotas=quotas, rows=rows, verdict=verdict, stopped=stopped, max_queues=max_queues)
