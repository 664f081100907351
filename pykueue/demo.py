"""``pykueue demo``: replay a small bundled scenario at watchable speed.

It runs the same engine and simulator as ``pykueue simulate`` on ``examples/demo.yaml`` and then plays
the event log back against a live table of queues, so a newcomer can watch quota being reserved,
borrowed, reclaimed and preempted. The final tables end with "What happened": the borrowing, flavor
fallback and reclaim the demo promises, spelled out, so that they show when the output is piped too
(every workload has finished by then, so the final usage alone would show none of it).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from pykueue.api.inputs import Inputs
from pykueue.api.loader import load_paths
from pykueue.engine.model import ClusterQueue
from pykueue.engine.quota import FR
from pykueue.quantity import format_quantity
from pykueue.sim.result import build_result
from pykueue.sim.simulator import US, Run, Simulation
from pykueue.sim.table import Quotas, nominal_quotas, render, seconds, wrap


def demo_path() -> str:
    return str(Path(__file__).resolve().parent / "examples" / "demo.yaml")


def _flavor_names(admission: Any) -> str:
    """Flavors of an engine ``Admission`` (None before it is known), each once."""
    if admission is None:
        return ""
    seen: dict[str, None] = {}
    for psa in admission.pod_set_assignments:
        for flavor in psa.flavors.values():
            seen.setdefault(flavor, None)
    return ",".join(seen)


def _frame(now: float, rows: list[tuple[float, str]], state: dict[str, str]) -> Group:
    head = Table.grid()
    head.add_row(f"[bold]pykueue demo[/]  virtual time [cyan]{now:5.1f}s[/]")
    wl = Table(title="Workloads", expand=False)
    wl.add_column("workload")
    wl.add_column("state")
    for key in sorted(state):
        wl.add_row(key, state[key])
    log = Table(title="Latest events", expand=False)
    log.add_column("time", justify="right")
    log.add_column("event")
    for t, text in rows[-8:]:
        log.add_row(f"{t:g}s", text)
    return Group(head, wl, log)


def _spans(points: list[tuple[int, bool]], end_us: int) -> list[tuple[int, int]]:
    """Intervals during which a step function of time (value from each point on) is true."""
    spans: list[tuple[int, int]] = []
    start: int | None = None
    for t, on in points:
        if on and start is None:
            start = t
        elif not on and start is not None:
            if t > start:
                spans.append((start, t))
            start = None
    if start is not None and end_us > start:
        spans.append((start, end_us))
    return spans


def borrowing(run: Run, quotas: Quotas) -> list[str]:
    """One line per queue that used more than its nominal quota: how much, of what, and when (from the
    usage samples, recorded after every instant)."""
    lines = []
    queues = sorted({s.cluster_queue for s in run.samples})
    for name in queues:
        nominal = quotas.get(name, {})
        samples = [s for s in run.samples if s.cluster_queue == name]
        peaks: dict[FR, int] = {}
        for s in samples:
            for fr, used in s.usage.items():
                if used > nominal.get(fr, 0):
                    peaks[fr] = max(peaks.get(fr, 0), used)
        if not peaks:
            continue
        over = [(s.time_us, any(u > nominal.get(fr, 0) for fr, u in s.usage.items())) for s in samples]
        when = ", ".join(f"{seconds(a / US)}-{seconds(b / US)}" for a, b in _spans(over, run.end_us))
        what = ", ".join(
            f"{format_quantity(res, used)} {res} of {flavor} (nominal {format_quantity(res, nominal.get((flavor, res), 0))})"
            for (flavor, res), used in sorted(peaks.items())
        )
        cohort = run.engine.cqs[name].spec.cohort if name in run.engine.cqs else None
        source = f" from cohort {cohort}" if cohort else ""
        lines.append(f"Borrowing: {name} borrowed{source}, up to {what}, at {when}.")
    return lines


def _first_flavors(spec: ClusterQueue) -> dict[str, str]:
    """Per resource, the flavor a cluster queue tries first (its resource group's first flavor)."""
    return {res: group.flavors[0].name for group in spec.resource_groups if group.flavors for res in group.covered_resources}


def fallbacks(run: Run, result: dict[str, Any]) -> list[str]:
    """One line per quota reservation that got a flavor other than its queue's first choice."""
    lines = []
    for e in result["events"]:
        if e["type"] != "QuotaReserved" or e.get("clusterQueue") not in run.engine.cqs:
            continue
        assignments = e.get("podSetAssignments")
        if assignments is None:  # a result without per-event assignments: the workload's last admission
            info = run.engine.workloads.get(e["workload"])
            admission = info.admission if info is not None else None
            assignments = [{"flavors": dict(p.flavors)} for p in admission.pod_set_assignments] if admission else []
        first = _first_flavors(run.engine.cqs[e["clusterQueue"]].spec)
        moved = sorted({(first[res], flavor) for ps in assignments for res, flavor in ps.get("flavors", {}).items()
                        if res in first and flavor != first[res]})
        if moved:
            tried = ", ".join(sorted({a for a, _ in moved}))
            got = ", ".join(sorted({b for _, b in moved}))
            lines.append(f"Flavor fallback: {e['workload']} got {got} at {seconds(e['time'])}: {tried}, "
                         f"which {e['clusterQueue']} tries first, had no free quota for it.")
    return lines


def preemptions(result: dict[str, Any]) -> list[str]:
    """One line per preemption: who, by whom, why."""
    words = {"InCohortReclamation": "reclaimed the quota its queue had lent",
             "InClusterQueue": "needed room in its own queue (higher priority)",
             "InCohortFairSharing": "had the smaller fair share",
             "InCohortReclaimWhileBorrowing": "reclaimed quota while borrowing"}
    return [
        f"Preemption: {e.get('by', '?')} preempted {e['workload']} at {seconds(e['time'])}: it "
        f"{words.get(e.get('reason') or '', e.get('reason') or 'preempted')} ({e.get('reason')}); "
        f"{e['workload']} was requeued."
        for e in result["events"] if e["type"] == "Preempted"
    ]


def what_happened(run: Run, result: dict[str, Any], console: Console) -> None:
    """The points of the demo in words: each wrapped to the console, never split inside a name."""
    lines = borrowing(run, nominal_quotas(run.engine)) + fallbacks(run, result) + preemptions(result)
    console.print()
    console.print(Text("What happened", style="bold"), no_wrap=True, overflow="ellipsis", crop=True)
    for line in lines:
        for n, part in enumerate(wrap(line, max(console.width - 4, 10))):
            console.print(Text(("- " if n == 0 else "  ") + part), no_wrap=True, overflow="ellipsis", crop=True)


def _shown_path(path: str) -> str:
    """The scenario's path relative to the working directory when it lies below it (a clone)."""
    try:
        return str(Path(path).relative_to(Path.cwd()))
    except ValueError:
        return path


def _amounts(amounts: dict[str, int]) -> str:
    return ", ".join(f"{res}={format_quantity(res, qty)}" for res, qty in amounts.items())


def setup_lines(inputs: Inputs, path: str) -> list[str]:
    """What the demo plays, before it plays it: the file, each ClusterQueue's quota per flavor (in
    the order it tries them, with its limits), and each workload's arrival, size, run time and
    priority, so that what follows can be checked against them."""
    lines = [f"Playing {_shown_path(path)} (pykueue simulate reads the same file)", "", "Quotas (nominal)"]
    for cq in inputs.cluster_queues:
        cohort = f" in cohort {cq.cohort}" if cq.cohort else ""
        lines.append(f"  ClusterQueue {cq.name}{cohort}, flavors in the order it tries them:")
        for group in cq.resource_groups:
            for flavor in group.flavors:
                limits = []
                for res, q in flavor.resources.items():
                    if q.borrowing_limit is not None:
                        limits.append(f"borrows at most {format_quantity(res, q.borrowing_limit)} {res}")
                    if q.lending_limit is not None:
                        limits.append(f"lends at most {format_quantity(res, q.lending_limit)} {res}")
                nominal = _amounts({res: q.nominal for res, q in flavor.resources.items()})
                lines.append(f"    {flavor.name}: {nominal}" + (f" ({'; '.join(limits)})" if limits else ""))
    lines += ["", "Workloads"]
    for sub in sorted(inputs.workloads, key=lambda s: (s.arrival, s.workload.namespace, s.workload.name)):
        wl = sub.workload
        total: dict[str, int] = {}
        for ps in wl.pod_sets:
            for res, qty in ps.requests.items():
                total[res] = total.get(res, 0) + qty * ps.count
        runs = f"runs {seconds(sub.runtime)}" if sub.runtime is not None else "never finishes"
        priority = f", priority {wl.priority}" if wl.priority else ""
        lines.append(f"  {wl.namespace}/{wl.name}: at {seconds(sub.arrival)} asks {_amounts(total)}, {runs}{priority}")
    return lines


def _setup(console: Console, inputs: Inputs, path: str) -> None:
    for line in setup_lines(inputs, path):
        if not line:
            console.print()
            continue
        indent = len(line) - len(line.lstrip())
        for n, part in enumerate(wrap(line.strip(), max(console.width - indent - 2, 10))):
            console.print(Text(" " * (indent + (2 if n else 0)) + part), no_wrap=True, overflow="ellipsis",
                          crop=True)
    console.print()


def run_demo(*, speed: float = 6.0, live: bool = True) -> int:
    console = Console()
    inputs, problems = load_paths([demo_path()])
    if problems:
        for p in problems:
            print(p, file=sys.stderr)
        return 2
    _setup(console, inputs, demo_path())
    run = Simulation(inputs, record_usage=True).run()
    result = build_result(run)
    if live and console.is_terminal:
        state = {sub.workload.key: "Pending" for sub in inputs.workloads}
        rows: list[tuple[float, str]] = []
        clock = 0.0
        with Live(_frame(0.0, rows, state), console=console, refresh_per_second=8) as screen:
            for logged in run.log:
                t = logged.time_us / US
                if t > clock:
                    time.sleep(min((t - clock) / max(speed, 0.1), 2.0))
                    clock = t
                e = logged.event
                colour = {"Admitted": "green", "Preempted": "red", "Evicted": "red", "Finished": "dim"}.get(e.type, "")
                flavors = _flavor_names(getattr(e, "admission", None))
                label = f"{e.type} on {flavors}" if flavors else e.type
                state[e.workload] = f"[{colour}]{label}[/]" if colour else label
                extra = f" ({e.reason})" if e.reason else ""
                rows.append((t, f"{e.type} {e.workload}{f' on {flavors}' if flavors else ''}{extra}"))
                screen.update(_frame(t, rows, state))
    render(result, console, quotas=nominal_quotas(run.engine))
    what_happened(run, result, console)
    return 0
