"""``pykueue explain NS/NAME PATH...`` and ``pykueue explain --what-if FILE PATH...``."""

from __future__ import annotations

import argparse
import difflib
import sys
from typing import Any

EXIT_OK, EXIT_INVALID, EXIT_UNSETTLED = 0, 2, 3


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "explain",
        help="why a workload is (not) admitted: its history, queue position and missing quota",
        description="Simulate PATH... and explain one workload: its history (reservations, evictions, "
                    "requeues and backoff), and while pending its position in its queue, the quota it asks "
                    "for against what its ClusterQueue has, and what would have to change. With --what-if, "
                    "explain the Job or Workload in FILE as if it were submitted with the inputs.",
    )
    p.add_argument("args", nargs="+", metavar="NS/NAME PATH",
                   help="the workload (NAMESPACE/NAME, or NAME in namespace default; a Job's name for a "
                        "Job), then the simulation inputs; without NS/NAME when --what-if is given")
    p.add_argument("--what-if", metavar="FILE",
                   help="a Job or Workload not submitted yet: simulate the inputs plus it and explain it")
    p.add_argument("--until", metavar="DURATION", help="explain the state at this virtual time (e.g. 10m)")
    p.add_argument("--config", metavar="FILE", help="a Kueue Configuration")
    p.add_argument("-o", "--output", choices=("table", "json", "yaml"), default=None,
                   help="table (default on a terminal) or a json/yaml document")


def _fail(message: str, code: int = EXIT_INVALID) -> int:
    print(f"pykueue explain: error: {message}", file=sys.stderr)
    return code


def run(args: argparse.Namespace) -> int:
    from pykueue.api.durations import parse_duration
    from pykueue.api.loader import load_paths
    from pykueue.engine.events import EngineError
    from pykueue.sim.explain import explain, render
    from pykueue.sim.simulator import Simulation

    positional: list[str] = list(args.args)
    target: str | None = None
    if args.what_if is None:
        target, paths = positional[0], positional[1:]
        if not paths:
            return _fail("give the workload (NS/NAME) and at least one PATH")
    else:
        paths = positional
    until = None
    if args.until is not None:
        try:
            until = parse_duration(args.until)
        except ValueError as e:
            return _fail(f"--until: {e}")
    inputs, problems = load_paths(paths + ([args.what_if] if args.what_if else []), args.config)
    if problems:
        for p in problems:
            print(p, file=sys.stderr)
        return EXIT_INVALID
    keys = [sub.workload.key for sub in inputs.workloads]
    if args.what_if is not None:
        added = [sub.workload.key for sub in inputs.workloads if sub.source.file == args.what_if]
        if not added:
            return _fail(f"--what-if {args.what_if}: no Job with a queue-name label or Workload in it")
        target = added[0]
    assert target is not None
    if "/" not in target:
        target = f"default/{target}"
    if target not in keys:
        close = difflib.get_close_matches(target, keys, n=3, cutoff=0.9)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        return _fail(f"no managed Job or Workload {target} in the inputs{hint}")
    try:
        result = Simulation(inputs, until=until).run()
    except EngineError as e:
        return _fail(f"simulation stopped: {e}", EXIT_UNSETTLED)
    doc = explain(result, target)
    if args.what_if is not None:
        doc["whatIf"] = args.what_if
    output = args.output or ("table" if sys.stdout.isatty() else "json")
    if output == "json":
        import json

        json.dump(doc, sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif output == "yaml":
        import yaml

        yaml.safe_dump(doc, sys.stdout, sort_keys=False)
    else:
        from pykueue.sim.table import terminal

        console = terminal()
        if args.what_if is not None:
            first = doc["firstAdmittedAt"]
            flavors = next((h.get("flavors") for h in doc["history"] if h["type"] == "Admitted"), None)
            if first is None:
                console.print(f"[bold]What if[/] {args.what_if}: it would not be admitted by "
                              f"{doc['at']:g}s.")
            else:
                on = ", ".join(f"{r}={f}" for r, f in (flavors or {}).items())
                console.print(f"[bold]What if[/] {args.what_if}: admitted at {first:g}s on {on}.")
        render(doc, console)
    return EXIT_OK
