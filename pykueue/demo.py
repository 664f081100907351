"""``pykueue demo``: replay a small bundled scenario at watchable speed.

It runs the same engine and simulator as ``pykueue simulate`` on ``examples/demo.yaml`` and then plays
the event log back against a live table of queues, so a newcomer can watch quota being reserved,
borrowed, reclaimed and preempted.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table

from pykueue.api.loader import load_paths
from pykueue.sim.result import build_result
from pykueue.sim.simulator import US, Simulation
from pykueue.sim.table import render


def demo_path() -> str:
    return str(Path(__file__).resolve().parent / "examples" / "demo.yaml")


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


def run_demo(*, speed: float = 6.0, live: bool = True) -> int:
    console = Console()
    inputs, problems = load_paths([demo_path()])
    if problems:
        for p in problems:
            print(p, file=sys.stderr)
        return 2
    run = Simulation(inputs).run()
    result = build_result(run)
    if live and console.is_terminal:
        state = {w: "Pending" for w in run.created_us}
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
                state[e.workload] = f"[{colour}]{e.type}[/]" if colour else e.type
                extra = f" ({e.reason})" if e.reason else ""
                rows.append((t, f"{e.type} {e.workload}{extra}"))
                screen.update(_frame(t, rows, state))
    render(result, console)
    return 0
