"""``pykueue`` command line: simulate, validate, demo.

Exit status: 0 success; 1 a rangespec check failed; 2 invalid input (one ``FILE:DOC: ...`` line per
problem on stderr, nothing on stdout); 3 the simulation could not settle (a preemption loop).
No traceback reaches the user for anything they typed or wrote.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

EXIT_OK, EXIT_RANGE, EXIT_INVALID, EXIT_UNSETTLED = 0, 1, 2, 3


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="pykueue", description="Kueue's admission model in Python.")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("simulate", help="run a deterministic virtual-time simulation")
    s.add_argument("paths", nargs="*", metavar="PATH")
    s.add_argument("--output", choices=("json", "yaml", "table"))
    s.add_argument("--until", metavar="DURATION")
    s.add_argument("--config", metavar="FILE")
    s.add_argument("--generator", metavar="GENERATOR.yaml")
    s.add_argument("--rangespec", metavar="RANGESPEC.yaml")
    s.add_argument("--report", metavar="FILE.html")

    v = sub.add_parser("validate", help="check manifests and report every problem")
    v.add_argument("paths", nargs="+", metavar="PATH")
    v.add_argument("--config", metavar="FILE")

    d = sub.add_parser("demo", help="watch a small scenario play out (the embedded default)")
    d.add_argument("--speed", type=float, default=6.0, help="virtual seconds per real second")
    d.add_argument("--no-live", action="store_true", help="print the final tables only")
    return p


def _fail(lines: Sequence[str], code: int) -> int:
    for line in lines:
        print(line, file=sys.stderr)
    return code


def cmd_validate(args: argparse.Namespace) -> int:
    from pykueue.api.loader import load_paths

    _, problems = load_paths(args.paths, args.config)
    if problems:
        return _fail([str(p) for p in problems], EXIT_INVALID)
    print(f"{len(args.paths)} path(s) valid")
    return EXIT_OK


def cmd_simulate(args: argparse.Namespace) -> int:
    from pykueue.api.durations import parse_duration
    from pykueue.engine.events import EngineError
    from pykueue.sim.result import build_result, to_json, to_yaml
    from pykueue.sim.simulator import Simulation

    until = None
    if args.until is not None:
        try:
            until = parse_duration(args.until)
        except ValueError as e:
            return _fail([f"--until: {e}"], EXIT_INVALID)
    spec = None
    manifests = None
    if args.generator:
        from pykueue.perf.run import load_generator_inputs

        try:
            inputs, problems, manifests = load_generator_inputs(args.generator, args.config)
        except Exception as e:  # noqa: BLE001 - any failure reading a user file is reported, not raised
            return _fail([f"{args.generator}: {e}"], EXIT_INVALID)
        if args.rangespec:
            from pykueue.perf.rangespec import load_rangespec

            try:
                spec = load_rangespec(args.rangespec)
            except Exception as e:  # noqa: BLE001
                return _fail([f"{args.rangespec}: {e}"], EXIT_INVALID)
    else:
        if not args.paths:
            return _fail(["simulate: give at least one PATH or --generator"], EXIT_INVALID)
        from pykueue.api.loader import load_paths

        inputs, problems = load_paths(args.paths, args.config)
    if problems:
        return _fail([str(p) for p in problems], EXIT_INVALID)
    sim = Simulation(inputs, until=until, record_usage=bool(args.generator or args.report))
    try:
        run = sim.run()
    except EngineError as e:
        return _fail([f"simulation stopped: {e}"], EXIT_UNSETTLED)
    result = build_result(run)
    summary = None
    if manifests is not None:
        from pykueue.perf.run import summary_of

        summary = summary_of(result, manifests)
        result["summary"] = summary
    if args.report:
        from pykueue.sim.report import write_report

        write_report(run, result, args.report)
    output = args.output or ("table" if sys.stdout.isatty() else "json")
    if output == "json":
        sys.stdout.write(to_json(result))
    elif output == "yaml":
        sys.stdout.write(to_yaml(result))
    else:
        from rich.console import Console

        from pykueue.sim.table import render

        render(result, Console())
    if spec is not None and summary is not None:
        from pykueue.perf.rangespec import check

        failures = check(summary, spec)
        if failures:
            return _fail(failures, EXIT_RANGE)
    return EXIT_OK


def cmd_demo(args: argparse.Namespace) -> int:
    from pykueue.demo import run_demo

    return run_demo(speed=args.speed, live=not args.no_live)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "validate":
            return cmd_validate(args)
        if args.command == "simulate":
            return cmd_simulate(args)
        return cmd_demo(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
