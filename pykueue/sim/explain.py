"""``pykueue explain``: why a workload is (not) running, from a simulation of the inputs.

Kueue users ask "why is my job not running" more than anything else; upstream answers with one
condition message. This answers with the workload's whole history (reservations, evictions and their
reasons, requeues and their backoff), and, while it is pending, its place in its queue, the quota it
asks for against what its ClusterQueue has and can borrow, and what would have to change. The same
explanation serves a workload not submitted yet (``--what-if``): the inputs plus that one object. A
pending workload also gets its forecast (``forecast_doc``): when the engine, played forward from that
instant with the known run times, would admit it, and which running workloads it waits for.

Everything here is read from the finished ``Run``: the engine's condition messages and its event log.
"""

from __future__ import annotations

import re
from typing import Any

from rich.console import Console
from rich.padding import Padding
from rich.table import Table

from pykueue.engine import events as ev
from pykueue.engine.forecast import Prediction
from pykueue.engine.quota import FR
from pykueue.engine.status import QuotaAvailability, WorkloadStatus
from pykueue.engine.workload import State
from pykueue.quantity import format_quantity
from pykueue.sim.simulator import US, Run

MAX_AHEAD = 10  # workloads named as ahead in the queue; the rest are counted


def _s(us: int) -> float:
    return us / US


def history(run: Run, key: str) -> list[dict[str, Any]]:
    """The workload's events in order, each Evicted one with the backoff before it was requeued."""
    out: list[dict[str, Any]] = []
    for logged in run.log:
        e = logged.event
        if e.workload != key:
            continue
        item: dict[str, Any] = {"time": _s(logged.time_us), "type": e.type}
        if e.cluster_queue:
            item["clusterQueue"] = e.cluster_queue
        if e.reason:
            item["reason"] = e.reason
        if e.underlying_cause:
            item["underlyingCause"] = e.underlying_cause
        if e.by:
            item["by"] = e.by
        if e.message:
            item["message"] = e.message
        if e.admission is not None:
            item["flavors"] = _flavors(e.admission.pod_set_assignments)
        out.append(item)
    last_eviction: dict[str, Any] | None = None
    for item in out:
        if item["type"] == ev.EVICTED:
            last_eviction = item
        elif item["type"] == ev.REQUEUED and last_eviction is not None:
            if item.get("reason") == "BackoffFinished":
                last_eviction["requeuedAfter"] = round(item["time"] - last_eviction["time"], 6)
            last_eviction = None
    return out


def _flavors(assignments: Any) -> dict[str, str]:
    flavors: dict[str, str] = {}
    for psa in assignments:
        flavors.update(psa.flavors)
    return dict(sorted(flavors.items()))


def _requests(w: WorkloadStatus) -> dict[str, int]:
    """Total requests per resource over its pod sets (counts less reclaimable pods), and ``pods``."""
    total: dict[str, int] = {}
    reclaimable = w.spec.reclaimable_pods
    for ps in w.spec.pod_sets:
        count = max(0, ps.count - reclaimable.get(ps.name, 0))
        for res, per_pod in ps.requests.items():
            total[res] = total.get(res, 0) + per_pod * count
        total["pods"] = total.get("pods", 0) + count
    return total


def quota_view(run: Run, w: WorkloadStatus) -> list[dict[str, Any]]:
    """Per requested resource and each flavor its ClusterQueue has for it: what is asked, the nominal
    quota, what the queue uses, what it could take now (its own and borrowable) and at most."""
    engine = run.engine
    cq = engine.cluster_queue_status(w.cluster_queue or "")
    if cq is None:
        return []
    rows = []
    for res, want in sorted(_requests(w).items()):
        for fr in sorted(fr for fr in cq.quotas if fr[1] == res):
            q = engine.quota_availability(cq.name, fr)
            if q is not None:
                rows.append(_quota_row(fr, q, want))
    return rows


def _quota_row(fr: FR, q: QuotaAvailability, want: int) -> dict[str, Any]:
    flavor, res = fr
    now = max(q.available, 0)
    return {
        "resource": res,
        "flavor": flavor,
        "requested": format_quantity(res, want),
        "nominal": format_quantity(res, q.nominal),
        "used": format_quantity(res, q.used),
        "available": format_quantity(res, now),
        "atMost": format_quantity(res, q.at_most),
        "short": format_quantity(res, max(0, want - now)),
        "fitsEver": want <= q.at_most,
        "_short": max(0, want - now),
    }


def queue_position(run: Run, w: WorkloadStatus) -> dict[str, Any]:
    """Its place among the pending workloads of its ClusterQueue, ordered as the queue orders them
    (priority, then queue-order time, then submission order), and among those of its LocalQueue.
    Positions count from 0, as upstream's visibility API, kueuectl and ``pykueue pending`` count them;
    ``None`` when it is not queued (inactive, or its queue cannot take it)."""
    pending = run.engine.pending_in_order(w.cluster_queue or "")
    keys = [p.key for p in pending]
    if w.key not in keys:
        return {"position": None, "positionInLocalQueue": None, "length": len(keys), "ahead": []}
    pos = keys.index(w.key)
    local = [p.key for p in pending if p.namespace == w.namespace and p.spec.queue_name == w.spec.queue_name]
    return {"position": pos, "positionInLocalQueue": local.index(w.key), "length": len(keys),
            "ahead": keys[:pos]}


def what_would_change(reason: str | None, message: str, rows: list[dict[str, Any]],
                      ahead: list[str]) -> list[str]:
    """Plain statements of what would let it be admitted."""
    out: list[str] = []
    if reason in ("WaitingForQuota", "ExceedsMaxQuota", "NoMatchingFlavor") or (rows and not reason):
        by_res: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            by_res.setdefault(row["resource"], []).append(row)
        for res, options in by_res.items():
            if any(r["_short"] == 0 for r in options):
                continue
            possible = [r for r in options if r["fitsEver"]] or options
            best = min(possible, key=lambda r: r["_short"])
            alternatives = [r["flavor"] for r in possible if r is not best]
            also = f" (or enough in {', '.join(alternatives)})" if alternatives else ""
            if best["fitsEver"]:
                out.append(f"{best['short']} more {res} free in flavor {best['flavor']}{also}: running workloads "
                           f"must finish or be preempted, or the queue must be allowed to borrow more")
            else:
                out.append(f"more {res} quota: it asks for {best['requested']} and the ClusterQueue can never "
                           f"have more than {best['atMost']} in flavor {best['flavor']} (nominal quota plus what "
                           f"it may borrow)")
    if ahead and reason not in ("Suspended", "Misconfigured", "Deactivated"):
        out.append(f"{len(ahead)} workload(s) ahead of it in its queue to be admitted or leave")
    if reason == "Deactivated":
        out.append("spec.active set back to true")
    elif reason in ("Suspended", "Misconfigured") and message:
        out.append(f"fix: {message}")
    elif reason == "WaitingForPodsReady":
        out.append("every admitted workload's pods ready (waitForPodsReady.blockAdmission)")
    return out


def forecast_doc(p: Prediction, horizon_us: int) -> dict[str, Any]:
    """A prediction as explain's document shows it: times in seconds on the simulation clock, and the
    runtime source of each workload it waits for (``engine/expected_runtimes.py``: ``given`` for the
    input's ``pykueue.dev/runtime``)."""
    return {
        "predictedAdmissionTime": None if p.admission_us is None else _s(p.admission_us),
        "clusterQueue": p.cluster_queue,
        "flavors": dict(p.flavors),
        "waitsFor": [{"workload": d.key, "expectedEnd": None if d.end_us is None else _s(d.end_us),
                      "runtimeSource": d.source.value} for d in p.waits_for],
        "preempts": list(p.preempts),
        "runtimeSources": sorted(s.value for s in p.sources),
        "guess": p.guess,
        "horizon": _s(horizon_us),
    }


def explain(run: Run, key: str, forecast: dict[str, Any] | None = None) -> dict[str, Any]:
    """The explanation of workload ``key`` (NAMESPACE/NAME) as a document; ``forecast`` (from
    ``forecast_doc``), for a pending workload, its expected start."""
    w = run.engine.workload_status(key)
    assert w is not None
    doc: dict[str, Any] = {
        "workload": key,
        "kind": w.spec.kind,
        "queueName": w.spec.queue_name,
        "clusterQueue": w.cluster_queue,
        "priority": w.priority,
        "state": w.state.value,
        "at": _s(run.end_us),
        "reason": w.reason,
        "message": w.message,
        "history": history(run, key),
    }
    if w.admission is not None and w.state is not State.PENDING:
        doc["flavors"] = _flavors(w.admission.pod_set_assignments)
    if w.state is State.PENDING:
        rows = quota_view(run, w)
        place = queue_position(run, w)
        ahead = place["ahead"]
        doc["queue"] = {**place, "ahead": ahead[:MAX_AHEAD], "aheadCount": len(ahead)}
        doc["quota"] = [{k: v for k, v in r.items() if not k.startswith("_")} for r in rows]
        doc["toBeAdmitted"] = what_would_change(w.reason, w.message or "", rows, ahead)
        if forecast is not None:
            doc["forecast"] = forecast
    admitted = [h for h in doc["history"] if h["type"] == ev.ADMITTED]
    doc["firstAdmittedAt"] = admitted[0]["time"] if admitted else None
    return doc


_TRAILING = re.compile(r"[ \t]+((?:\x1b\[[0-9;]*m)*)$", re.MULTILINE)


def render(doc: dict[str, Any], console: Console) -> None:
    """The explanation for a person, on an 80-column terminal, without the spaces that rich pads
    table cells and padded lines with at their ends (colour codes after them are kept)."""
    with console.capture() as captured:
        _render(doc, console)
    console.file.write(_TRAILING.sub(r"\1", captured.get()))
    console.file.flush()


def _render(doc: dict[str, Any], console: Console) -> None:
    console.print(f"[bold]{doc['kind']} {doc['workload']}[/]  queue {doc['queueName']} -> "
                  f"ClusterQueue {doc['clusterQueue'] or '-'}  priority {doc['priority']}")
    state = f"[bold]{doc['state']}[/] at {doc['at']:g}s"
    if doc.get("flavors"):
        state += "  on " + ", ".join(f"{r}={f}" for r, f in doc["flavors"].items())
    console.print(state)
    if doc["reason"] or doc["message"]:
        console.print(Padding(f"{doc['reason'] or 'message'}: {doc['message'] or ''}", (0, 0, 0, 2)))
    if doc["history"]:
        console.print("\n[bold]History[/]")
        table = Table(box=None, show_header=True, pad_edge=False)
        table.add_column("TIME", justify="right", no_wrap=True)
        table.add_column("EVENT", no_wrap=True)
        table.add_column("DETAIL", overflow="fold")
        for h in doc["history"]:
            table.add_row(f"{h['time']:g}s", h["type"], _detail(h))
        console.print(table)
    else:
        console.print("\nNo events yet: it has neither held quota nor been evicted.")
    if "queue" in doc:
        q = doc["queue"]
        if q["position"] is not None:
            ahead = ", ".join(q["ahead"]) + (f" and {q['aheadCount'] - len(q['ahead'])} more"
                                             if q["aheadCount"] > len(q["ahead"]) else "")
            console.print(f"\n[bold]Queue[/]  position {q['position']} in ClusterQueue {doc['clusterQueue']} "
                          f"({q['length']} pending), {q['positionInLocalQueue']} in LocalQueue "
                          f"{doc['queueName']} (from 0, as kueuectl counts)"
                          + (f"; ahead: {ahead}" if ahead else ""))
        if doc["quota"]:
            table = Table(box=None, pad_edge=False, title=None)
            for col in ("RESOURCE", "FLAVOR", "REQUESTED", "NOMINAL", "USED", "AVAILABLE", "AT MOST"):
                table.add_column(col, no_wrap=True, justify="left" if col in ("RESOURCE", "FLAVOR") else "right")
            for r in doc["quota"]:
                table.add_row(r["resource"], r["flavor"], r["requested"], r["nominal"], r["used"],
                              r["available"], r["atMost"])
            console.print("\n[bold]Quota[/] (AVAILABLE: usable now, own and borrowable; AT MOST: if nothing "
                          "else ran)")
            console.print(table)
        if doc["toBeAdmitted"]:
            console.print("\n[bold]To be admitted it needs[/]")
            for line in doc["toBeAdmitted"]:
                console.print(Padding(f"- {line}", (0, 0, 0, 2)))
        if "forecast" in doc:
            _render_forecast(doc["forecast"], doc["at"], console)


def _render_forecast(f: dict[str, Any], at: float, console: Console) -> None:
    """The "Expected start" section: when, where, behind what, and how sure."""
    if "unavailable" in f:
        console.print(f"\nExpected start  unavailable: {f['unavailable']}")
        return
    when = f["predictedAdmissionTime"]
    guess = " (a guess: it rests on a learned or unknown run time)" if f["guess"] else ""
    if when is None:
        head = f"not by {f['horizon']:g}s, the forecast's horizon{guess}"
    else:
        on = ", ".join(f"{r}={fl}" for r, fl in f["flavors"].items())
        head = f"at {when:g}s" + (f" on {on}" if on else "") + guess
    console.print(f"\n[bold]Expected start[/]  {head}; nothing arriving after {at:g}s is known to it")
    for d in f["waitsFor"]:
        end = "no known end" if d["expectedEnd"] is None else f"ends at {d['expectedEnd']:g}s"
        console.print(Padding(f"- waits for {d['workload']}: {end} (runtime {d['runtimeSource']})", (0, 0, 0, 2)))
    if f["preempts"]:
        console.print(Padding(f"- by preempting {', '.join(f['preempts'])}", (0, 0, 0, 2)))


def _detail(h: dict[str, Any]) -> str:
    parts = []
    if h.get("flavors"):
        parts.append("on " + ", ".join(f"{r}={f}" for r, f in h["flavors"].items()))
    if h.get("reason") and h["type"] != ev.PREEMPTED:
        parts.append(h["reason"] + (f" ({h['underlyingCause']})" if h.get("underlyingCause") else ""))
    if h["type"] == ev.PREEMPTED:
        parts.append(f"by {h.get('by')} ({h.get('reason')})")
    if h.get("requeuedAfter") is not None:
        parts.append(f"requeued after a {h['requeuedAfter']:g}s backoff")
    if h.get("message") and h["type"] != ev.PREEMPTED:
        parts.append(h["message"])
    return "; ".join(parts)
