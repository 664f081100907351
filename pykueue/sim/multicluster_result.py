"""The result of a run with worker clusters: the manager's ``SimulationResult`` with the fields
``shared/spec/simulate.md`` fixes, plus where each workload ran, and each worker's own result.

Added (only when the input has workers): ``clusterName`` on every manager workload (the worker its
copy was last admitted in, as upstream's ``status.clusterName``; null when none was),
``multiKueueMessage`` on a workload whose MultiKueue check the controller rejected (its message), and on each
manager ``Admitted`` event of a dispatched workload; ``workers``, one entry per worker by name with
its ``workloads``, ``events`` and ``clusterQueues`` in the spec's shapes. ``endTime`` is the whole
run's.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console

from pykueue.sim.multicluster import MultiRun
from pykueue.sim.result import build_result, cluster_queue_entries, event_entries, seconds, workload_entries
from pykueue.sim.table import Column, Row, nominal_quotas, print_table, render
from pykueue.sim.table import seconds as shown


def build_multi_result(run: MultiRun) -> dict[str, Any]:
    base = build_result(run.manager)
    base["endTime"] = seconds(run.end_us)
    for entry in base["workloads"]:
        key = f"{entry['namespace']}/{entry['name']}"
        entry["clusterName"] = run.cluster_name.get(key)
        if key in run.check_messages:  # the MultiKueue check's own message, when it rejected the job
            entry["multiKueueMessage"] = run.check_messages[key]
    wins = {(w.time_us / 1_000_000, w.workload): w.cluster for w in run.wins}
    for event in base["events"]:
        if event["type"] == "Admitted" and (event["time"], event["workload"]) in wins:
            event["clusterName"] = wins[(event["time"], event["workload"])]
    summary = base.pop("summary")
    base["workers"] = [
        {"name": name, "workloads": list(workload_entries(worker)), "events": list(event_entries(worker)),
         "clusterQueues": cluster_queue_entries(worker)}
        for name, worker in sorted(run.workers.items())
    ]
    base["summary"] = summary
    return base


def render_multi(result: dict[str, Any], run: MultiRun, console: Console, stopped: str | None = None) -> None:
    """The manager's table as for one cluster, then where each dispatched workload ran, then each
    worker's own tables under its name."""
    manager = {k: v for k, v in result.items() if k != "workers"}
    render(manager, console, quotas=nominal_quotas(run.manager.engine), stopped=stopped)
    console.print()
    rows = [Row([f"{w['namespace']}/{w['name']}", w["clusterName"], w["state"], shown(w["admittedAt"]),
                 shown(w["finishedAt"])]) for w in result["workloads"] if w["clusterName"] is not None]
    print_table(console, _DISPATCH_COLUMNS, rows, title="MultiKueue dispatch")
    for worker in result["workers"]:
        console.print()
        console.rule(f"worker {worker['name']}")
        render({**worker, "endTime": result["endTime"], "summary": {}}, console,
               quotas=nominal_quotas(run.workers[worker["name"]].engine))


_DISPATCH_COLUMNS = (Column("NAME", key=True), Column("WORKER"), Column("STATE"), Column("ADMITTED", right=True),
                     Column("FINISHED", right=True))
