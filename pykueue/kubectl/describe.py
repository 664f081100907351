"""``pykueue describe``: one object in ``kubectl describe``'s form, with what a person asks about it.

``kubectl describe`` on a custom resource dumps its fields; this says what they mean instead: a
Workload's status word, where it was admitted and on which flavors, why it waits (its conditions with
reasons and messages, its admission checks, its requeue state); a ClusterQueue's quota against what
is reserved and used per flavor and resource; and the Events recorded for the object, as kubectl
lists them (``Age`` as ``5m (x3 over 10m)``). Messages go on lines of their own under their row, so
that nothing is cut at 80 columns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from rich.console import Console
from rich.text import Text

from pykueue.kubectl import state
from pykueue.kubectl.tables import STYLE, Col, age, human_duration, line, table
from pykueue.sim.table import wrap

Obj = dict[str, Any]
Value = str | Sequence[str]
NONE = "<none>"


class Page:
    """Label/value blocks, headings and tables, indented as kubectl describe indents them."""

    def __init__(self, console: Console, at: datetime) -> None:
        self.console = console
        self.at = at
        self.pad = 0  # the top level's values start at least this far in, to line up across blocks

    def pairs(self, pairs: Sequence[tuple[str, Value]], indent: int = 0) -> None:
        """``Label:  value`` lines with the values aligned; a list value takes a line per item."""
        pad = max(max(len(label) for label, _ in pairs) + 3, 0 if indent else self.pad)
        width = max(self.console.width - indent - pad, 16)
        for label, value in pairs:
            items = [value] if isinstance(value, str) else list(value) or [NONE]
            first = True
            for item in items:
                for part in wrap(item, width) or [""]:
                    head = f"{label}:".ljust(pad) if first else " " * pad
                    line(self.console, Text(" " * indent + head + part))
                    first = False

    def heading(self, label: str, indent: int = 0, empty: bool = False) -> None:
        line(self.console, Text(" " * indent + f"{label}:" + (f"  {NONE}" if empty else "")))

    def table(self, cols: Sequence[Col], rows: Sequence[Sequence[str]], *, styles: Sequence[Mapping[int, str]],
              details: Sequence[Sequence[str]], indent: int = 2) -> None:
        table(self.console, cols, rows, styles=styles, details=details, indent=indent)

    def conditions(self, obj: Mapping[str, Any]) -> None:
        conditions = (obj.get("status") or {}).get("conditions") or []
        self.heading("Conditions", empty=not conditions)
        if not conditions:
            return
        rows, styles, details = [], [], []
        for c in conditions:
            rows.append([str(c.get("type", "")), str(c.get("status", "")), str(c.get("reason") or ""),
                         age(c.get("lastTransitionTime"), self.at)])
            styles.append({1: STYLE.get(str(c.get("status")), "")})
            details.append([str(c["message"])] if c.get("message") else [])
        self.table((Col("TYPE", key=True), Col("STATUS"), Col("REASON", shrink=2), Col("AGE")), rows,
                   styles=styles, details=details)

    def events(self, events: Sequence[Obj] | None, error: str | None = None) -> None:
        if error is not None:
            pad, self.pad = self.pad, 0
            self.pairs([("Events", f"<unavailable: {error}>")])
            self.pad = pad
            return
        self.heading("Events", empty=not events)
        if not events:
            return
        rows, styles, details = [], [], []
        for e in events:
            kind = str(e.get("type") or "")
            rows.append([kind, str(e.get("reason") or ""), event_age(e, self.at), event_source(e)])
            styles.append({0: STYLE.get(kind, "")})
            details.append([" ".join(str(e["message"]).split())] if e.get("message") else [])
        self.table((Col("TYPE"), Col("REASON", key=True), Col("AGE", shrink=2), Col("FROM", shrink=2)), rows,
                   styles=styles, details=details)


# ------------------------------------------------------------------------------------------- text


def event_time(e: Mapping[str, Any]) -> str | None:
    series = e.get("series") or {}
    return e.get("lastTimestamp") or series.get("lastObservedTime") or e.get("eventTime") or e.get("firstTimestamp")


def event_age(e: Mapping[str, Any], at: datetime) -> str:
    """kubectl's: ``5m``, or ``5m (x3 over 10m)`` for an event seen several times."""
    count = int(e.get("count") or (e.get("series") or {}).get("count") or 1)
    last = age(event_time(e), at)
    if count > 1:
        first = e.get("firstTimestamp") or e.get("eventTime")
        return f"{last} (x{count} over {age(first, at)})"
    return last


def event_source(e: Mapping[str, Any]) -> str:
    source = e.get("source") or {}
    return str(source.get("component") or e.get("reportingComponent") or e.get("reportingController") or "")


def sort_events(events: Sequence[Obj]) -> list[Obj]:
    oldest = datetime.min.replace(tzinfo=UTC)
    return sorted(events, key=lambda e: state.parse_time(event_time(e)) or oldest)


def _created(obj: Mapping[str, Any], at: datetime) -> str:
    stamp = (obj.get("metadata") or {}).get("creationTimestamp")
    return f"{stamp} ({age(stamp, at)} ago)" if stamp else NONE


def _labels(obj: Mapping[str, Any]) -> list[str]:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return [f"{k}={v}" for k, v in sorted(labels.items())] or [NONE]


def _resources(amounts: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in amounts.items()) or NONE


def _compact(value: Any) -> str:
    """A small nested spec field on one line: ``reclaimWithinCohort=Any, withinClusterQueue=Never``."""
    if value is None:
        return NONE
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        return ", ".join(f"{k}={{{_compact(v)}}}" if isinstance(v, Mapping) else f"{k}={_compact(v)}"
                         for k, v in value.items())
    if isinstance(value, list):
        return "[" + "; ".join(_compact(v) for v in value) + "]"
    return str(value)


def per_pod(template: Mapping[str, Any]) -> str:
    """A pod template's requests per pod as Kueue counts them (limits for missing requests, init
    containers and sidecars, overhead); the plain sum of the containers' requests when the template
    is one pykueue's models do not read."""
    from pykueue.api.models.pod import PodSpec
    from pykueue.api.requests import pod_requests
    from pykueue.engine.quantity_text import format_quantity

    spec = dict(template.get("spec") or {})

    def slim(containers: Any) -> list[dict[str, Any]]:
        return [{k: c[k] for k in ("name", "image", "resources", "restartPolicy") if k in c} for c in containers or []]

    trimmed = {"containers": slim(spec.get("containers"))}
    if spec.get("initContainers"):
        trimmed["initContainers"] = slim(spec.get("initContainers"))
    for field in ("resources", "overhead"):
        if spec.get(field):
            trimmed[field] = spec[field]
    try:
        requests = pod_requests(PodSpec.model_validate(trimmed))
        return _resources({k: format_quantity(k, v) for k, v in requests.items()})
    except Exception:  # noqa: BLE001 - a template the models refuse still gets its plain requests shown
        plain: dict[str, Any] = {}
        for c in spec.get("containers") or []:
            plain.update((c.get("resources") or {}).get("requests") or {})
        return _resources(plain)


# --------------------------------------------------------------------------------------- workload


def workload(page: Page, wl: Obj, cluster_queue: str, position: int | None, events: Sequence[Obj] | None,
             events_error: str | None) -> None:
    meta, spec, status = wl.get("metadata") or {}, wl.get("spec") or {}, wl.get("status") or {}
    owners = [f"{o.get('kind')}/{o.get('name')} ({o.get('apiVersion')})" for o in meta.get("ownerReferences") or []]
    ref = spec.get("priorityClassRef") or {}
    word = state.workload_status(wl)
    status_text = word.upper() + (" (inactive: spec.active is false)" if not state.is_active(wl) else "")
    if position is not None:
        status_text += f", position {position} in its LocalQueue"
    pairs: list[tuple[str, Value]] = [
        ("Name", meta.get("name", "")),
        ("Namespace", meta.get("namespace", "")),
        ("Labels", _labels(wl)),
        ("Created", _created(wl, page.at)),
        ("Owner", owners or [NONE]),
        ("LocalQueue", spec.get("queueName") or NONE),
        ("ClusterQueue", cluster_queue or NONE),
        ("Priority", str(state.priority(wl)) + (f" ({ref.get('kind')} {ref.get('name')})" if ref else "")),
        ("Active", "false" if not state.is_active(wl) else "true"),
        ("Status", status_text),
    ]
    if spec.get("maximumExecutionTimeSeconds") is not None:
        used = status.get("accumulatedPastExecutionTimeSeconds")
        pairs.append(("Maximum Execution Time", f"{spec['maximumExecutionTimeSeconds']}s"
                      + (f" ({used}s used before this admission)" if used else "")))
    page.pad = max(len(label) for label, _ in [*pairs, ("Requeue State", "")]) + 3
    page.pairs(pairs)
    pod_sets = spec.get("podSets") or []
    page.heading("Pod Sets", empty=not pod_sets)
    if pod_sets:
        page.pairs([(str(ps.get("name", "main")), f"{ps.get('count', 1)} pod(s), each {per_pod(ps.get('template') or {})}")
                    for ps in pod_sets], indent=2)
    admission = status.get("admission")
    page.heading("Admission", empty=not admission)
    if admission:
        rows: list[tuple[str, Value]] = [("ClusterQueue", str(admission.get("clusterQueue") or NONE))]
        for ps in admission.get("podSetAssignments") or []:
            flavors = _resources(ps.get("flavors") or {})
            usage = _resources(ps.get("resourceUsage") or {})
            rows.append((f"Pod Set {ps.get('name', 'main')}",
                         f"{ps.get('count', '?')} pod(s); flavors {flavors}; usage {usage}"))
        page.pairs(rows, indent=2)
    requeue = status.get("requeueState")
    if requeue:
        text = f"requeued {requeue.get('count', 0)} time(s)"
        at = state.parse_time(requeue.get("requeueAt"))
        if at is not None:
            wait = (at - page.at).total_seconds()
            text += f"; requeue at {requeue['requeueAt']}" + (
                f" (in {human_duration(wait)})" if wait > 0 else f" ({human_duration(-wait)} ago)")
        page.pairs([("Requeue State", text)])
    else:
        page.pairs([("Requeue State", NONE)])
    checks = status.get("admissionChecks") or []
    page.heading("Admission Checks", empty=not checks)
    if checks:
        page.table((Col("NAME", key=True), Col("STATE"), Col("AGE")),
                   [[str(c.get("name", "")), str(c.get("state", "")), age(c.get("lastTransitionTime"), page.at)]
                    for c in checks],
                   styles=[{1: {"Ready": "green", "Rejected": "red", "Retry": "yellow"}.get(str(c.get("state")), "")}
                           for c in checks],
                   details=[[str(c["message"])] if c.get("message") else [] for c in checks])
    page.conditions(wl)
    page.events(events, events_error)


# ------------------------------------------------------------------------------------------ queues


def _usage(status: Mapping[str, Any], field: str) -> dict[tuple[str, str], Mapping[str, Any]]:
    """(flavor, resource) -> {total, borrowed} from ``status.flavorsReservation`` or ``flavorsUsage``."""
    out: dict[tuple[str, str], Mapping[str, Any]] = {}
    for flavor in status.get(field) or []:
        for res in flavor.get("resources") or []:
            out[(str(flavor.get("name")), str(res.get("name")))] = res
    return out


def _workload_counts(obj: Mapping[str, Any]) -> str:
    status = obj.get("status") or {}
    return (f"{int(status.get('pendingWorkloads') or 0)} pending, {int(status.get('reservingWorkloads') or 0)} "
            f"reserving quota, {int(status.get('admittedWorkloads') or 0)} admitted")


def cluster_queue(page: Page, cq: Obj, local_queues: Sequence[str], events: Sequence[Obj] | None,
                  events_error: str | None) -> None:
    meta, spec, status = cq.get("metadata") or {}, cq.get("spec") or {}, cq.get("status") or {}
    pairs: list[tuple[str, Value]] = [
        ("Name", meta.get("name", "")),
        ("Labels", _labels(cq)),
        ("Created", _created(cq, page.at)),
        ("Cohort", state.cohort(cq) or NONE),
        ("Queueing Strategy", str(spec.get("queueingStrategy") or "BestEffortFIFO")),
        ("Stop Policy", str(spec.get("stopPolicy") or "None")),
        ("Active", "true" if state.is_true(cq, "Active") else "false"),
        ("Namespace Selector", _compact(spec.get("namespaceSelector"))),
        ("Preemption", _compact(spec.get("preemption"))),
        ("Flavor Fungibility", _compact(spec.get("flavorFungibility"))),
    ]
    if spec.get("fairSharing"):
        pairs.append(("Fair Sharing", _compact(spec["fairSharing"])))
    if spec.get("admissionChecksStrategy"):
        pairs.append(("Admission Checks", _compact(spec["admissionChecksStrategy"])))
    pairs += [("Workloads", _workload_counts(cq)), ("Local Queues", list(local_queues) or [NONE])]
    page.pad = 0
    page.pairs(pairs)
    reserved, used = _usage(status, "flavorsReservation"), _usage(status, "flavorsUsage")
    rows, details = [], []
    for group in spec.get("resourceGroups") or []:
        for flavor in group.get("flavors") or []:
            for n, res in enumerate(flavor.get("resources") or []):
                k = (str(flavor.get("name")), str(res.get("name")))
                rows.append(["" if n else k[0], k[1], str(res.get("nominalQuota", "0")), str(res.get("borrowingLimit", "")),
                             str(res.get("lendingLimit", "")), str(reserved.get(k, {}).get("total", "0")),
                             str(used.get(k, {}).get("total", "0")), str(reserved.get(k, {}).get("borrowed", "0"))])
                details.append([])
    page.heading("Quota", empty=not rows)
    if rows:
        page.table((Col("FLAVOR", key=True), Col("RESOURCE", shrink=2), Col("NOMINAL"),
                    Col("BORROWING LIMIT", "BORROW"), Col("LENDING LIMIT", "LEND"), Col("RESERVED"),
                    Col("IN USE"), Col("BORROWED")), rows, styles=[{} for _ in rows], details=details)
    page.conditions(cq)
    page.events(events, events_error)


def local_queue(page: Page, lq: Obj, events: Sequence[Obj] | None, events_error: str | None) -> None:
    meta, spec, status = lq.get("metadata") or {}, lq.get("spec") or {}, lq.get("status") or {}
    page.pairs([
        ("Name", meta.get("name", "")),
        ("Namespace", meta.get("namespace", "")),
        ("Labels", _labels(lq)),
        ("Created", _created(lq, page.at)),
        ("ClusterQueue", str(spec.get("clusterQueue") or NONE)),
        ("Stop Policy", str(spec.get("stopPolicy") or "None")),
        ("Active", "true" if state.is_true(lq, "Active") else "false"),
        ("Workloads", _workload_counts(lq)),
    ])
    reserved, used = _usage(status, "flavorsReservation"), _usage(status, "flavorsUsage")
    keys = list(dict.fromkeys([*reserved, *used]))
    page.heading("Usage", empty=not keys)
    if keys:
        page.table((Col("FLAVOR", key=True), Col("RESOURCE", shrink=2), Col("RESERVED"), Col("IN USE")),
                   [[f, r, str(reserved.get((f, r), {}).get("total", "0")), str(used.get((f, r), {}).get("total", "0"))]
                    for f, r in keys], styles=[{} for _ in keys], details=[[] for _ in keys])
    page.conditions(lq)
    page.events(events, events_error)
