"""``pykueue explain`` on an input with MultiKueue worker clusters: a manager workload explained as for
one cluster plus where MultiKueue has it (waiting in the manager, its copies in which workers, admitted
through which one), and a worker's own object addressed as ``WORKER:NAMESPACE/NAME``."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from pykueue.engine.workload import State
from pykueue.sim.explain import explain
from pykueue.sim.multicluster import MultiRun
from pykueue.sim.simulator import US

SEPARATOR = ":"  # WORKER:NAMESPACE/NAME


def split_target(target: str) -> tuple[str | None, str]:
    """``(worker or None for the manager, NAMESPACE/NAME)``; a bare NAME is in namespace default."""
    name, sep, rest = target.partition(SEPARATOR)
    worker: str | None = name if sep else None
    if not sep:
        rest = target
    return worker, rest if "/" in rest else f"default/{rest}"


def where(run: MultiRun, key: str) -> dict[str, Any]:
    """Where MultiKueue has the manager's workload at the end of the run."""
    state = run.manager.engine.state_of(key)
    copies = []
    for name in sorted(run.workers):
        status = run.workers[name].engine.workload_status(key)
        if status is not None:
            copies.append({"worker": name, "state": status.state.value})
    admitted = [{"time": w.time_us / US, "worker": w.cluster} for w in run.wins if w.workload == key]
    cluster = run.cluster_name.get(key)
    ran = run.ran_in.get(key, cluster)
    if key in run.check_messages:
        summary = f"rejected by MultiKueue: {run.check_messages[key]}"
    elif state is State.FINISHED and cluster is not None:
        summary = f"finished; it ran in {ran}"
    elif state is State.ADMITTED and cluster is not None:
        summary = f"admitted through {cluster}, where its job runs" if ran == cluster else (
            f"admitted through {cluster}; its job runs in {ran}")
    elif state is State.QUOTA_RESERVED:
        pending = [c["worker"] for c in copies if c["state"] != State.ADMITTED.value]
        summary = ("holding quota in the manager, dispatched to " + ", ".join(pending) + "; no copy admitted yet"
                   if pending else "holding quota in the manager, dispatched to no worker yet")
    else:
        summary = "waiting in the manager: it is dispatched once it holds quota there"
    since = (None if cluster is None or state is not State.ADMITTED or ran != cluster
             else run.unreachable_since(cluster, run.end_us))  # (a job elsewhere: no wait counts on cluster)
    if since is not None:
        summary += f"; the manager cannot reach {cluster} since {since / US:g}s (workerLostTimeout counts from then)"
    if cluster is not None and ran != cluster and key not in run.check_messages:
        summary += (f" (clusterName still names {cluster}: {ran}'s copy, admitted first, won back on its"
                    " return, and clusterName is immutable once set)")
    return {"summary": summary, "clusterName": cluster, "copies": copies, "admittedThrough": admitted}


def explain_target(run: MultiRun, worker: str | None, key: str) -> dict[str, Any]:
    """The explanation of the manager's workload (with ``multiKueue``) or of a worker's object."""
    if worker is not None:
        doc = explain(run.workers[worker], key)
        doc["cluster"] = worker
        return doc
    doc = explain(run.manager, key)
    doc["multiKueue"] = where(run, key)
    return doc


def render_where(doc: dict[str, Any], console: Console) -> None:
    mk = doc.get("multiKueue")
    if mk is None:
        return
    console.print(f"\n[bold]MultiKueue[/]  {mk['summary']}")
    for copy in mk["copies"]:
        console.print(f"  copy in {copy['worker']}: {copy['state']}")
    for a in mk["admittedThrough"]:
        console.print(f"  admitted through {a['worker']} at {a['time']:g}s")
