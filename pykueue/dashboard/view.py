"""What the dashboard shows, read from the API server's objects as the watch keeps them.

Pure functions over ``Objects`` (plural -> key -> object, the informers' caches): the cohort tree with
each ClusterQueue's quota and usage per flavor and resource, the workloads of a queue in admission order
with their pending reason and message as Kueue's controller wrote them, and one workload's conditions,
events and owner. Nothing here does I/O or reads a clock (``now`` is passed in), so the unit tests build
objects by hand.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pykueue.kubectl import state as ks
from pykueue.quantity import format_quantity, to_canonical
from pykueue.sim.report_plot import color

Obj = dict[str, Any]
Objects = Mapping[str, Mapping[str, Obj]]
PAGE_SIZE = 50  # rows of a queue's admitted or pending list per page
WHITE, BLACK = "#ffffff", "#000000"


# ---- colours ---------------------------------------------------------------------------------------


def luminance(hex_color: str) -> float:
    """WCAG 2 relative luminance of ``#rrggbb``."""
    def channel(c: int) -> float:
        s = c / 255
        return s / 12.92 if s <= 0.03928 else ((s + 0.055) / 1.055) ** 2.4

    r, g, b = (int(hex_color[i:i + 2], 16) for i in (1, 3, 5))
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


def contrast(a: str, b: str) -> float:
    """WCAG 2 contrast ratio of two colours (1 to 21)."""
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def text_on(background: str) -> str:
    """Black or white, whichever reads better on ``background``: one of them always reaches 4.5:1."""
    return BLACK if contrast(background, BLACK) >= contrast(background, WHITE) else WHITE


def queue_colors(names: list[str]) -> dict[str, tuple[str, str]]:
    """Each ClusterQueue's (background, text) colours: the HTML report's palette, queues in name order
    (as the report numbers its series), the text colour chosen for contrast."""
    return {name: (color(i), text_on(color(i))) for i, name in enumerate(sorted(names))}


# ---- small readers -------------------------------------------------------------------------------


def meta(obj: Mapping[str, Any]) -> Obj:
    return obj.get("metadata") or {}


def spec(obj: Mapping[str, Any]) -> Obj:
    return obj.get("spec") or {}


def status(obj: Mapping[str, Any]) -> Obj:
    return obj.get("status") or {}


def wl_key(obj: Mapping[str, Any]) -> str:
    return f"{meta(obj).get('namespace', '')}/{meta(obj).get('name', '')}"


def age(stamp: str | None, now: datetime) -> str:
    """``5s``, ``3m``, ``2h``, ``4d`` as kubectl prints ages."""
    moment = ks.parse_time(stamp)
    if moment is None:
        return ""
    seconds = max(0, int((now - moment).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _canonical(resource: str, value: object) -> int:
    try:
        return to_canonical(resource, value)
    except (ValueError, TypeError, ZeroDivisionError):
        return 0


# ---- the cohort tree and quota bars ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Bar:
    """One flavor and resource of a ClusterQueue: quantities as canonical integers and as Kueue prints them."""

    flavor: str
    resource: str
    nominal: int
    used: int
    borrowed: int
    borrowing_limit: int | None
    lending_limit: int | None

    def text(self, value: int | None) -> str:
        return "-" if value is None else format_quantity(self.resource, value)

    @property
    def scale(self) -> int:
        """The width the bar is drawn against: the nominal quota plus what it may borrow, or its usage."""
        top = self.nominal + (self.borrowing_limit or 0)
        return max(top, self.used, 1)


@dataclass(frozen=True, slots=True)
class QueueSummary:
    name: str
    cohort: str
    bars: tuple[Bar, ...]
    pending: int
    reserving: int
    admitted: int
    active: bool
    inactive_message: str
    weighted_share: int | None


@dataclass(slots=True)
class CohortNode:
    name: str
    weighted_share: int | None = None
    cohorts: list[CohortNode] = field(default_factory=list)
    queues: list[QueueSummary] = field(default_factory=list)


def cohort_of(cq: Mapping[str, Any]) -> str:
    return ks.cohort(cq)


def queue_summary(cq: Obj) -> QueueSummary:
    st = status(cq)
    used: dict[tuple[str, str], tuple[int, int]] = {}
    for flavor in st.get("flavorsReservation") or []:
        for res in flavor.get("resources") or []:
            name = res.get("name", "")
            used[(flavor.get("name", ""), name)] = (_canonical(name, res.get("total", 0)),
                                                     _canonical(name, res.get("borrowed", 0)))
    bars = []
    for group in spec(cq).get("resourceGroups") or []:
        for fq in group.get("flavors") or []:
            for res in fq.get("resources") or []:
                name = res.get("name", "")
                total, borrowed = used.get((fq.get("name", ""), name), (0, 0))
                bars.append(Bar(
                    flavor=fq.get("name", ""), resource=name,
                    nominal=_canonical(name, res.get("nominalQuota", 0)), used=total, borrowed=borrowed,
                    borrowing_limit=None if res.get("borrowingLimit") is None
                    else _canonical(name, res["borrowingLimit"]),
                    lending_limit=None if res.get("lendingLimit") is None else _canonical(name, res["lendingLimit"]),
                ))
    active = ks.condition(cq, "Active")
    share = (st.get("fairSharing") or {}).get("weightedShare")
    return QueueSummary(
        name=meta(cq).get("name", ""), cohort=cohort_of(cq), bars=tuple(bars),
        pending=int(st.get("pendingWorkloads") or 0), reserving=int(st.get("reservingWorkloads") or 0),
        admitted=int(st.get("admittedWorkloads") or 0),
        active=active is None or active.get("status") == "True",
        inactive_message="" if active is None or active.get("status") == "True" else str(active.get("message", "")),
        weighted_share=share if isinstance(share, int) else None,
    )


def fair_sharing_reported(objs: Objects) -> bool:
    """The controller writes ``status.fairSharing`` only while fair sharing is on: its presence tells
    the dashboard so without the Configuration."""
    return any("fairSharing" in status(obj) for plural in ("clusterqueues", "cohorts")
               for obj in objs.get(plural, {}).values())


def cohort_tree(objs: Objects) -> tuple[list[CohortNode], list[QueueSummary]]:
    """The root cohorts (each with its child cohorts and queues, by name) and the queues in no cohort.
    A cohort named by a queue or a parent but with no Cohort object is shown all the same, as Kueue
    makes it implicitly; a parent cycle is cut where it closes."""
    cohorts = objs.get("cohorts", {})
    nodes: dict[str, CohortNode] = {}

    def node(name: str) -> CohortNode:
        if name not in nodes:
            share = (status(cohorts.get(name, {})).get("fairSharing") or {}).get("weightedShare")
            nodes[name] = CohortNode(name, share if isinstance(share, int) else None)
        return nodes[name]

    parents: dict[str, str] = {}
    for name, obj in cohorts.items():
        node(name)
        parent = spec(obj).get("parentName")
        if parent:
            parents[name] = parent
            node(parent)
    lone: list[QueueSummary] = []
    for name in sorted(objs.get("clusterqueues", {})):
        summary = queue_summary(objs["clusterqueues"][name])
        if summary.cohort:
            node(summary.cohort).queues.append(summary)
        else:
            lone.append(summary)
    roots = []
    for name in sorted(nodes):
        parent, seen = parents.get(name), {name}
        while parent is not None and parent not in seen:  # a cycle: every member shown as a root
            seen.add(parent)
            parent = parents.get(parent)
        if name in parents and parent is None:
            nodes[parents[name]].cohorts.append(nodes[name])
        else:
            roots.append(nodes[name])
    return roots, lone


# ---- a queue's workloads ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Row:
    """One workload as a queue lists it."""

    key: str
    position: int | None  # in the ClusterQueue's pending order, from 0 as the visibility API counts
    priority: int
    flavors: str
    age: str
    state: str  # pending, quotaReserved, admitted, finished
    reason: str
    message: str
    local_queue: str
    preempted_by: str = ""  # the workload that preempted this one, when the Preempted condition says
    preempted: tuple[str, ...] = ()  # the workloads this one preempted


def flavors_of(wl: Mapping[str, Any]) -> str:
    """``flavor`` or ``cpu=a, memory=b`` of the admission, over every pod set."""
    chosen: dict[str, str] = {}
    for psa in (status(wl).get("admission") or {}).get("podSetAssignments") or []:
        for res, flavor in (psa.get("flavors") or {}).items():
            chosen.setdefault(res, flavor)
    names = sorted(set(chosen.values()))
    if len(names) <= 1:
        return names[0] if names else ""
    return ", ".join(f"{res}={chosen[res]}" for res in sorted(chosen))


def pending_reason(wl: Mapping[str, Any]) -> tuple[str, str]:
    """Kueue's words for why a workload holds no quota: its QuotaReserved=False condition, else
    (an eviction waiting for its requeue) the Evicted one."""
    evicted = ks.condition(wl, "Evicted")
    reserved = ks.condition(wl, "QuotaReserved")
    if reserved is not None and reserved.get("status") == "False":
        return str(reserved.get("reason", "")), str(reserved.get("message", ""))
    if evicted is not None and evicted.get("status") == "True":
        return str(evicted.get("reason", "")), str(evicted.get("message", ""))
    if not ks.is_active(wl):
        return "Deactivated", "The workload is deactivated"
    return "", ""


def preemptions(workloads: Mapping[str, Obj]) -> tuple[dict[str, str], dict[str, list[str]]]:
    """(victim -> preemptor, preemptor -> victims) from the Preempted conditions, whose message names
    the preemptor by UID as upstream words it."""
    by_uid = {meta(w).get("uid"): key for key, w in workloads.items() if meta(w).get("uid")}
    by: dict[str, str] = {}
    victims: dict[str, list[str]] = {}
    for key, wl in workloads.items():
        cond = ks.condition(wl, "Preempted")
        if cond is None or cond.get("status") != "True":
            continue
        message = str(cond.get("message", ""))
        start = message.find("(UID: ")
        uid = message[start + 6:].split(",", 1)[0].split(")", 1)[0] if start >= 0 else ""
        preemptor = by_uid.get(uid)
        if preemptor is not None:
            by[key] = preemptor
            victims.setdefault(preemptor, []).append(key)
    return by, {k: sorted(v) for k, v in victims.items()}


def local_queues(objs: Objects) -> dict[tuple[str, str], Obj]:
    return {ks.key(lq): lq for lq in objs.get("localqueues", {}).values()}


def _admitted_order(wl: Mapping[str, Any]) -> tuple[str, str]:
    reserved = ks.condition(wl, "QuotaReserved") or {}
    return str(reserved.get("lastTransitionTime", "")), wl_key(wl)


@dataclass(frozen=True, slots=True)
class QueueRows:
    """A ClusterQueue's workloads on one page: those holding quota in the order they got it, then the
    pending ones in the order Kueue admits them (positions from 0), then the inactive ones."""

    cluster_queue: str
    admitted: list[Row]
    pending: list[Row]
    admitted_total: int
    pending_total: int
    page: int
    pages: int


@dataclass(frozen=True, slots=True)
class Index:
    """What every queue's rows need, read once per render rather than once per queue: the LocalQueues,
    the workloads by the ClusterQueue they hold quota in or are queued for, and the preemptions."""

    local_queues: dict[tuple[str, str], Obj]
    by_queue: dict[str, list[Obj]]
    preempted_by: dict[str, str]
    victims: dict[str, list[str]]


def index(objs: Objects) -> Index:
    workloads = objs.get("workloads", {})
    lqs = local_queues(objs)
    by_queue: dict[str, list[Obj]] = {}
    for wl in workloads.values():
        by_queue.setdefault(ks.cluster_queue_of(wl, lqs), []).append(wl)
    by, victims = preemptions(workloads)
    return Index(lqs, by_queue, by, victims)


def queue_rows(objs: Objects, cluster_queue: str, now: datetime, page: int = 0,
               page_size: int = PAGE_SIZE, idx: Index | None = None) -> QueueRows:
    idx = idx or index(objs)
    lqs, by, victims = idx.local_queues, idx.preempted_by, idx.victims
    mine = idx.by_queue.get(cluster_queue, [])
    holding = sorted((w for w in mine if ks.workload_status(w) in (ks.ADMITTED, ks.QUOTA_RESERVED)),
                     key=_admitted_order)
    order = {(i["metadata"].get("namespace", ""), i["metadata"]["name"]): i["positionInClusterQueue"]
             for i in ks.pending_workloads(mine, lqs, cluster_queue)}
    queued = sorted((w for w in mine if ks.key(w) in order), key=lambda w: order[ks.key(w)])
    waiting = sorted((w for w in mine if ks.workload_status(w) == ks.PENDING and ks.key(w) not in order),
                     key=wl_key)
    pending = queued + waiting
    pages = max(1, -(-max(len(holding), len(pending)) // page_size))
    page = min(max(page, 0), pages - 1)
    lo, hi = page * page_size, (page + 1) * page_size

    def row(wl: Obj) -> Row:
        key = wl_key(wl)
        state = ks.workload_status(wl)
        reason, message = pending_reason(wl) if state == ks.PENDING else ("", "")
        return Row(key=key, position=order.get(ks.key(wl)), priority=ks.priority(wl), flavors=flavors_of(wl),
                   age=age(meta(wl).get("creationTimestamp"), now), state=state, reason=reason, message=message,
                   local_queue=str(spec(wl).get("queueName", "")), preempted_by=by.get(key, ""),
                   preempted=tuple(victims.get(key, ())))

    return QueueRows(cluster_queue, [row(w) for w in holding[lo:hi]], [row(w) for w in pending[lo:hi]],
                     len(holding), len(pending), page, pages)


# ---- one workload -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Happening:
    """A condition's last transition or an event, on one timeline."""

    time: str
    what: str  # "condition" or "event"
    kind: str  # the condition's type or the event's type (Normal, Warning)
    status: str
    reason: str
    message: str


def owners(wl: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(kind, name) of what the workload stands for: its Job, its Pod, or every Pod of a pod group."""
    return [(str(ref.get("kind", "")), str(ref.get("name", ""))) for ref in meta(wl).get("ownerReferences") or []]


def _event_time(event: Mapping[str, Any]) -> str:
    return str(event.get("lastTimestamp") or event.get("eventTime") or event.get("firstTimestamp")
               or meta(event).get("creationTimestamp") or "")


def timeline(objs: Objects, wl: Obj) -> list[Happening]:
    """The workload's conditions (at their last transition) and the events about it and its owner, oldest
    first: the history the API keeps, as `kubectl describe` shows it."""
    namespace, name = ks.key(wl)
    about = {("Workload", name), *owners(wl)}
    out = [Happening(str(c.get("lastTransitionTime", "")), "condition", str(c.get("type", "")),
                     str(c.get("status", "")), str(c.get("reason", "")), str(c.get("message", "")))
           for c in status(wl).get("conditions") or []]
    for event in objs.get("events", {}).values():
        involved = event.get("involvedObject") or event.get("regarding") or {}
        if meta(event).get("namespace") != namespace:
            continue
        if (involved.get("kind"), involved.get("name")) not in about:
            continue
        out.append(Happening(_event_time(event), "event", str(event.get("type", "")),
                             f"{involved.get('kind')} x{event.get('count') or 1}", str(event.get("reason", "")),
                             str(event.get("note") or event.get("message") or "")))
    return sorted(out, key=lambda h: (h.time, h.what))


def job_of(objs: Objects, wl: Obj, name: str) -> Obj | None:
    """The Job ``name`` behind the workload, from the watch's cache."""
    return objs.get("jobs", {}).get(f"{meta(wl).get('namespace', '')}/{name}")
