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
                        "Job; WORKER:NAMESPACE/NAME for an object of a MultiKueue worker cluster), then the "
                        "simulation inputs; without NS/NAME when --what-if is given")
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
    from pykueue.api.clusters import load_clusters
    from pykueue.api.durations import parse_duration
    from pykueue.engine.events import EngineError
    from pykueue.sim.explain import explain
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
    inputs, clusters, problems = load_clusters(paths + ([args.what_if] if args.what_if else []), args.config)
    if problems:
        for p in problems:
            print(p, file=sys.stderr)
        return EXIT_INVALID
    if clusters is not None:
        return _explain_clusters(args, clusters, target, until)
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
    simulation = Simulation(inputs, until=until)
    try:
        result = simulation.run()
    except EngineError as e:
        return _fail(f"simulation stopped: {e}", EXIT_UNSETTLED)
    _print(args, explain(result, target, _forecast(simulation, result, target)))
    return EXIT_OK


def _forecast(simulation: Any, result: Any, target: str) -> dict[str, Any] | None:
    """The target's forecast from the instant the run stopped, when it is pending then."""
    from pykueue.engine.forecast import ForecastUnavailable
    from pykueue.engine.workload import State
    from pykueue.sim.explain import forecast_doc
    from pykueue.sim.forecasts import forecast_at_end

    if result.engine.state_of(target) is not State.PENDING:
        return None
    try:
        fc = forecast_at_end(simulation, result.end_us)
    except ForecastUnavailable as e:
        return {"unavailable": str(e)}
    prediction = fc.predictions.get(target)
    return None if prediction is None else forecast_doc(prediction, fc.horizon_us)


def _explain_clusters(args: argparse.Namespace, clusters: Any, target: str | None, until: float | None) -> int:
    """A manager workload (NS/NAME) or a worker's object (WORKER:NS/NAME) of a MultiKueue input."""
    from pykueue.engine.events import EngineError
    from pykueue.sim.explain_clusters import explain_target, split_target
    from pykueue.sim.multicluster import MultiSimulation

    if args.what_if is not None:
        added = [sub.workload.key for sub in clusters.manager.workloads if sub.source.file == args.what_if]
        if not added:
            return _fail(f"--what-if {args.what_if}: no Job with a queue-name label or Workload in it")
        target = added[0]
    assert target is not None
    worker, key = split_target(target)
    if worker is not None and worker not in clusters.workers:
        return _fail(f"{target}: no worker cluster {worker!r} (declared: {', '.join(clusters.workers) or 'none'})")
    inputs = clusters.manager if worker is None else clusters.workers[worker]
    keys = [sub.workload.key for sub in inputs.workloads]
    copies = worker is not None and key in {s.workload.key for s in clusters.manager.workloads}
    if key not in keys and not copies:
        elsewhere = [f"{name}:{key}" for name, w in clusters.workers.items()
                     if key in {s.workload.key for s in w.workloads}]
        close = elsewhere or difflib.get_close_matches(key, keys, n=3, cutoff=0.9)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        where = "the manager's objects" if worker is None else f"worker {worker}'s objects or the manager's jobs"
        return _fail(f"no managed Job or Workload {key} in {where}{hint}")
    try:
        run = MultiSimulation(clusters, until=until).run()
    except EngineError as e:
        return _fail(f"simulation stopped: {e}", EXIT_UNSETTLED)
    if worker is not None and not run.workers[worker].engine.has_workload(key):
        return _fail(f"{target}: worker {worker} holds no copy of {key} at the end of the run (see "
                     f"pykueue explain {key} for where it went)")
    _print(args, explain_target(run, worker, key))
    return EXIT_OK


def _print(args: argparse.Namespace, doc: dict[str, Any]) -> None:
    from pykueue.sim.explain import render
    from pykueue.sim.explain_clusters import render_where

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
        render_where(doc, console)
