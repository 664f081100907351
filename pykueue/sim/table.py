"""The ``table`` view of a simulation: a timeline and the final state, for an 80-column terminal."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

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


class _Console(Console):
    """A console that lets a closed pipe (``| head``) surface as ``BrokenPipeError``, which the CLI
    ends quietly; rich's own handling exits with status 1."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


def terminal() -> Console:
    """The console the CLI renders tables on (stdout)."""
    return _Console()


def _t(v: float | None) -> str:
    return "-" if v is None else f"{v:g}s"


def render(result: dict[str, Any], console: Console, *, max_events: int = 200) -> None:
    events = result["events"]
    timeline = Table(title="Timeline", box=box.SIMPLE_HEAD, expand=False)
    timeline.add_column("time", justify="right", no_wrap=True)
    timeline.add_column("event", no_wrap=True)
    timeline.add_column("workload", overflow="fold")
    timeline.add_column("detail", overflow="fold")
    shown = events if len(events) <= max_events else events[:max_events]
    for e in shown:
        detail = e.get("clusterQueue") or ""
        if e.get("reason"):
            detail += f" ({e['reason']})"
        if e.get("by"):
            detail += f" by {e['by']}"
        style = _STYLE.get(e["type"], "")
        timeline.add_row(_t(e["time"]), f"[{style}]{e['type']}[/]" if style else e["type"], e["workload"], detail)
    console.print(timeline)
    if len(events) > max_events:
        console.print(f"[dim]... {len(events) - max_events} more events (use --output json for all)[/]")

    queues = Table(title="Cluster queues", box=box.SIMPLE_HEAD)
    queues.add_column("name", overflow="fold")
    queues.add_column("cohort", overflow="fold")
    queues.add_column("pending", justify="right")
    queues.add_column("admitted", justify="right")
    queues.add_column("usage", overflow="fold")
    for cq in result["clusterQueues"]:
        usage = "; ".join(
            f"{flavor}: " + ", ".join(f"{r}={q}" for r, q in res.items()) for flavor, res in cq["usage"].items()
        )
        queues.add_row(cq["name"], cq["cohort"] or "-", str(cq["pendingWorkloads"]), str(cq["admittedWorkloads"]), usage or "-")
    console.print(queues)

    wls = Table(title="Workloads", box=box.SIMPLE_HEAD)
    wls.add_column("workload", overflow="fold")
    wls.add_column("state", no_wrap=True)
    wls.add_column("queue", overflow="fold")
    wls.add_column("admitted", justify="right")
    wls.add_column("evict", justify="right")
    wls.add_column("reason / flavors", overflow="fold")
    for w in result["workloads"]:
        if w["admission"]:
            flavors = sorted({f for ps in w["admission"]["podSetAssignments"] for f in ps["flavors"].values()})
            detail = ",".join(flavors)
        else:
            detail = w["reason"] or ""
        style = _STYLE.get(w["state"], "")
        state = f"[{style}]{w['state']}[/]" if style else w["state"]
        wls.add_row(f"{w['namespace']}/{w['name']}", state, w["clusterQueue"] or "-", _t(w["admittedAt"]),
                    str(w["evictions"]), detail)
    console.print(wls)
    console.print(f"end time: {_t(result['endTime'])}")
