"""The tables of ``pykueue get`` and ``pykueue pending``: kueuectl's columns, fitted to the console.

Headers and cells are kueuectl's (``kueuectl list workload|clusterqueue|localqueue``): an empty cell
where it prints nothing, ``true``/``false``, status words upper-cased, ages as ``kubectl`` prints them.
The layout is ``pykueue simulate``'s (``pykueue.sim.table``): off a terminal everything fits 80
columns: when the table does not fit as it is, kueuectl's long headers give way to short ones
(``POSITION IN QUEUE`` becomes ``POS``), then long cells other than names are shortened with an
ellipsis, and only then does a name too long for its column go on its own line above its row.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from rich.console import Console
from rich.text import Text

from pykueue.kubectl import state
from pykueue.sim.table import Column, Row, print_table, shorten

GAP = 2
STYLE = {"PENDING": "yellow", "QUOTARESERVED": "cyan", "ADMITTED": "green", "FINISHED": "dim",
         "false": "red", "True": "green", "False": "yellow", "Warning": "yellow"}
CRD_TYPE_MAX = 20  # kueuectl's crdTypeMaxLength
READABLE = 10  # a shortened cell keeps at least this much before a name moves to a line of its own


@dataclass(frozen=True, slots=True)
class Col:
    """A column: kueuectl's header, and the short one it takes when the table cannot fit otherwise.
    ``shrink``: 0, its cells are never shortened; else the order in which columns give way (1 first:
    a job's name, which the workload's name usually repeats; 3 last: a namespace)."""

    header: str
    short: str | None = None
    key: bool = False
    shrink: int = 0


# ------------------------------------------------------------------------------------------- text


def human_duration(seconds: float) -> str:
    """``duration.HumanDuration``, as kubectl prints ages: ``45s``, ``3m20s``, ``5h``, ``3d4h``, ``2y``."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m" if s % 60 == 0 else f"{minutes}m{s % 60}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        return f"{hours}h" if minutes % 60 == 0 else f"{hours}h{minutes % 60}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d" if hours % 24 == 0 else f"{hours // 24}d{hours % 24}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if days == 0 else f"{hours // 24 // 365}y{days}d"
    return f"{hours // 24 // 365}y"


def now() -> datetime:
    return datetime.now(UTC)


def age(timestamp: str | None, at: datetime | None = None) -> str:
    moment = state.parse_time(timestamp)
    if moment is None:
        return "<unknown>"
    return human_duration(((at or now()) - moment).total_seconds())


# ------------------------------------------------------------------------------------------ layout


def _natural(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[int]:
    return [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]


def _shrunk(cols: Sequence[Col], headers: Sequence[str], natural: Sequence[int], width: int, floor: int
            ) -> tuple[list[int], bool]:
    """Widths with the shrinkable columns narrowed, in their ``shrink`` order and widest first within
    it, down to ``floor`` (or their header) while the table is too wide; and whether it then fits."""
    widths = list(natural)
    over = sum(widths) + GAP * (len(cols) - 1) - width
    for tier in sorted({c.shrink for c in cols} - {0}):
        while over > 0:
            shrinkable = [i for i, c in enumerate(cols)
                          if c.shrink == tier and widths[i] > max(len(headers[i]), floor)]
            if not shrinkable:
                break
            i = max(shrinkable, key=lambda j: (widths[j], -j))
            widths[i] -= 1
            over -= 1
    return widths, over <= 0


def _fitted(cols: Sequence[Col], rows: Sequence[Sequence[str]], width: int) -> tuple[list[str], list[list[str]]]:
    """kueuectl's headers when the table fits as it is, else the short ones. Then, if shortening the
    other long cells (to 6 characters at least) makes it fit, that is done and names stay whole (a
    workload's name matters more than its job's, which it usually repeats); if not, they are only
    shortened to ``READABLE`` characters, and print_table moves the names that do not fit to lines of
    their own before it shortens anything further."""
    headers = [c.header for c in cols]
    natural = _natural(headers, rows)
    if sum(natural) + GAP * (len(cols) - 1) > width:
        headers = [c.short or c.header for c in cols]
        natural = _natural(headers, rows)
    widths, fits = _shrunk(cols, headers, natural, width, 6)
    if not fits:
        widths, _ = _shrunk(cols, headers, natural, width, READABLE)
    return headers, [[shorten(v, widths[i]) if cols[i].shrink else v for i, v in enumerate(r)] for r in rows]


def line(console: Console, text: Text | str) -> None:
    """One physical line, never wrapped (cut with an ellipsis in the pathological case it is too long)."""
    console.print(text, no_wrap=True, overflow="ellipsis", crop=True, soft_wrap=False, highlight=False)


def table(console: Console, cols: Sequence[Col], rows: Sequence[Sequence[str]], *,
          styles: Sequence[Mapping[int, str]] | None = None, details: Sequence[Sequence[str]] | None = None,
          indent: int = 0) -> None:
    """A kubectl-like table that fits ``console`` (less ``indent`` columns on the left)."""
    width = max(console.width - indent, 20)
    headers, cells = _fitted(cols, rows, width)
    columns = [Column(h, key=c.key, shrink=bool(c.shrink)) for c, h in zip(cols, headers, strict=True)]
    built = [Row(r, styles=dict(styles[i]) if styles else {}, details=list(details[i]) if details else [])
             for i, r in enumerate(cells)]
    if not indent:
        print_table(console, columns, built)
        return
    buffer = io.StringIO()
    sub = Console(file=buffer, width=width, force_terminal=console.is_terminal,
                  color_system=console.color_system if console.is_terminal else None, no_color=console.no_color)
    print_table(sub, columns, built)
    for text in buffer.getvalue().splitlines():
        line(console, Text(" " * indent) + Text.from_ansi(text))


# ------------------------------------------------------------------------------------------- rows


def crd_type(owner: Mapping[str, Any]) -> str:
    """``job.batch``: the owner's kind and group as kueuectl's JOB TYPE shows them (singular.group)."""
    api_version = str(owner.get("apiVersion") or "")
    group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
    text = ".".join(p for p in (str(owner.get("kind") or "").lower(), group) if p)
    return text[:CRD_TYPE_MAX] + "..." if len(text) > CRD_TYPE_MAX else text


def _flavors(wl: Mapping[str, Any]) -> str:
    """Each assigned flavor once, in the order the pod sets name them."""
    seen: dict[str, None] = {}
    for ps in ((wl.get("status") or {}).get("admission") or {}).get("podSetAssignments") or []:
        for flavor in (ps.get("flavors") or {}).values():
            seen.setdefault(str(flavor), None)
    return ",".join(seen)


def exec_time(wl: Mapping[str, Any], at: datetime) -> str:
    """From Admitted to Finished (or now), as kueuectl's EXEC TIME."""
    admitted = state.condition(wl, "Admitted")
    if admitted is None or admitted.get("status") != "True":
        return ""
    start = state.parse_time(admitted.get("lastTransitionTime"))
    if start is None:
        return ""
    finished = state.condition(wl, "Finished")
    end = at
    if finished is not None and finished.get("status") == "True":
        end = state.parse_time(finished.get("lastTransitionTime")) or at
    return human_duration((end - start).total_seconds())


WORKLOAD_COLUMNS = (
    Col("NAME", key=True), Col("JOB TYPE", "TYPE", shrink=2), Col("JOB NAME", "JOB", shrink=1),
    Col("LOCALQUEUE", "LQ", shrink=2), Col("CLUSTERQUEUE", "CQ", shrink=2), Col("STATUS"),
    Col("POSITION IN QUEUE", "POS"), Col("EXEC TIME", "EXEC"), Col("AGE"),
)
WORKLOAD_WIDE = (Col("PRIORITY", "PRIO"), Col("FLAVORS", shrink=1))
CLUSTER_QUEUE_COLUMNS = (
    Col("NAME", key=True), Col("COHORT", shrink=2), Col("PENDING WORKLOADS", "PENDING"),
    Col("ADMITTED WORKLOADS", "ADMITTED"), Col("ACTIVE"), Col("AGE"),
)
CLUSTER_QUEUE_WIDE = (Col("STRATEGY", shrink=2), Col("STOP POLICY", "STOP"), Col("RESERVING WORKLOADS", "RESERVING"))
LOCAL_QUEUE_COLUMNS = (
    Col("NAME", key=True), Col("CLUSTERQUEUE", "CQ", shrink=2), Col("PENDING WORKLOADS", "PENDING"),
    Col("ADMITTED WORKLOADS", "ADMITTED"), Col("AGE"),
)
LOCAL_QUEUE_WIDE = (Col("ACTIVE"), Col("STOP POLICY", "STOP"), Col("RESERVING WORKLOADS", "RESERVING"))
NAMESPACE = Col("NAMESPACE", "NS", shrink=3)


def workload_row(wl: Mapping[str, Any], cluster_queue: str, position: int | None, at: datetime,
                 wide: bool) -> list[str]:
    owners = (wl.get("metadata") or {}).get("ownerReferences") or []
    status = state.workload_status(wl).upper()
    row = [
        (wl.get("metadata") or {}).get("name", ""),
        ", ".join(sorted({crd_type(o) for o in owners} - {""})),
        ", ".join(sorted({str(o.get("name") or "") for o in owners} - {""})),
        (wl.get("spec") or {}).get("queueName") or "",
        cluster_queue,
        status,
        "" if position is None else str(position),
        exec_time(wl, at),
        age((wl.get("metadata") or {}).get("creationTimestamp"), at),
    ]
    if wide:
        row += [str(state.priority(wl)), _flavors(wl)]
    return row


def _count(obj: Mapping[str, Any], field: str) -> str:
    return str(int((obj.get("status") or {}).get(field) or 0))


def cluster_queue_row(cq: Mapping[str, Any], at: datetime, wide: bool) -> list[str]:
    spec = cq.get("spec") or {}
    row = [(cq.get("metadata") or {}).get("name", ""), state.cohort(cq), _count(cq, "pendingWorkloads"),
           _count(cq, "admittedWorkloads"), "true" if state.is_true(cq, "Active") else "false",
           age((cq.get("metadata") or {}).get("creationTimestamp"), at)]
    if wide:
        row += [str(spec.get("queueingStrategy") or ""), str(spec.get("stopPolicy") or "None"),
                _count(cq, "reservingWorkloads")]
    return row


def local_queue_row(lq: Mapping[str, Any], at: datetime, wide: bool) -> list[str]:
    spec = lq.get("spec") or {}
    row = [(lq.get("metadata") or {}).get("name", ""), str(spec.get("clusterQueue") or ""),
           _count(lq, "pendingWorkloads"), _count(lq, "admittedWorkloads"),
           age((lq.get("metadata") or {}).get("creationTimestamp"), at)]
    if wide:
        row += ["true" if state.is_true(lq, "Active") else "false", str(spec.get("stopPolicy") or "None"),
                _count(lq, "reservingWorkloads")]
    return row


def pending_columns(for_local_queue: bool) -> tuple[Col, ...]:
    """The pending list of a ClusterQueue leads with its position; a LocalQueue's with its own."""
    if for_local_queue:
        return (Col("POSITION IN LOCALQUEUE", "LQ POS"), Col("NAME", key=True), Col("PRIORITY", "PRIO"),
                Col("POSITION IN CLUSTERQUEUE", "CQ POS"), Col("AGE"))
    return (Col("POSITION IN CLUSTERQUEUE", "CQ POS"), NAMESPACE, Col("NAME", key=True),
            Col("LOCALQUEUE", "LQ", shrink=2), Col("PRIORITY", "PRIO"), Col("POSITION IN LOCALQUEUE", "LQ POS"),
            Col("AGE"))


def pending_row(item: Mapping[str, Any], for_local_queue: bool, at: datetime) -> list[str]:
    meta = item.get("metadata") or {}
    created = age(meta.get("creationTimestamp"), at)
    cq_pos, lq_pos = (str(v) if v is not None else "" for v in
                      (item.get("positionInClusterQueue"), item.get("positionInLocalQueue")))
    if for_local_queue:
        return [lq_pos, str(meta.get("name", "")), str(item.get("priority", 0)), cq_pos, created]
    return [cq_pos, str(meta.get("namespace", "")), str(meta.get("name", "")), str(item.get("localQueueName", "")),
            str(item.get("priority", 0)), lq_pos, created]
