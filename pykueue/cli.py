"""``pykueue`` command line: simulate, validate, demo.

Exit status: 0 success; 1 a rangespec check failed; 2 invalid input (one ``FILE:DOC: ...`` line per
problem on stderr, nothing on stdout); 3 the simulation could not settle (a preemption loop).
No traceback reaches the user for anything they typed or wrote: a bad argument is one
``pykueue: error: ...`` line, and a reader closing the pipe early (``| head``) ends the run quietly.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from pykueue.controller import command as controller_command
from pykueue.devcluster import command as devcluster_command
from pykueue.manifests import command as manifests_command

if TYPE_CHECKING:
    from pykueue.api.inputs import Inputs

EXIT_OK, EXIT_RANGE, EXIT_INVALID, EXIT_UNSETTLED = 0, 1, 2, 3
# Subcommands that bring their own `add_parser(subparsers)` and `run(args) -> int`.
EXTRA_COMMANDS = {
    "controller": controller_command,
    "dev-cluster": devcluster_command,
    "manifests": manifests_command,
}


class _Parser(argparse.ArgumentParser):
    """argparse, except that a mistake is one line (exit 2), like every other problem this CLI reports;
    ``--help`` still shows the usage. ``-5s`` after ``--until`` is a value, not an unknown option (as
    Python 3.13's argparse reads any ``-`` followed by a digit), so a negative duration gets its own
    message."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = re.compile(r"^-\.?\d")

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_INVALID, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="pykueue", description="Kueue's admission model in Python.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

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
    for extra in EXTRA_COMMANDS.values():
        extra.add_parser(sub)
    return p


def _fail(lines: Sequence[str], code: int) -> int:
    for line in lines:
        print(line, file=sys.stderr)
    return code


def _warn(inputs: Inputs) -> None:
    """Accepted input that is probably not what was meant, in kubectl's ``Warning: ...`` form."""
    for warning in inputs.warnings:
        print(f"Warning: {warning}", file=sys.stderr)


def _arg_error(message: str) -> int:
    """A command-line mistake: one line, argparse's prefix, exit 2."""
    return _fail([f"pykueue: error: {message}"], EXIT_INVALID)


def cmd_validate(args: argparse.Namespace) -> int:
    from pykueue.api.loader import load_paths

    inputs, problems = load_paths(args.paths, args.config)
    if problems:
        return _fail([str(p) for p in problems], EXIT_INVALID)
    _warn(inputs)
    print(f"{len(args.paths)} path(s) valid")
    return EXIT_OK


def _check_arguments(args: argparse.Namespace) -> tuple[float | None, str | None]:
    """``--until`` in seconds, or the one-line complaint about the arguments."""
    from pykueue.api.durations import parse_duration

    if args.rangespec and not args.generator:
        return None, "--rangespec needs --generator: a range spec checks the summary of a generator run"
    if args.generator and args.paths:
        return None, f"--generator builds its own objects; PATH arguments ({args.paths[0]}) cannot be added to it"
    if not args.generator and not args.paths:
        return None, "simulate: give at least one PATH or --generator"
    if args.report:
        folder = os.path.dirname(os.path.abspath(args.report))
        if not os.path.isdir(folder):
            return None, f"--report: cannot write {args.report}: no such directory {folder}"
        if os.path.isdir(args.report):
            return None, f"--report: cannot write {args.report}: it is a directory"
    if args.until is None:
        return None, None
    try:
        until = parse_duration(args.until)
    except ValueError as e:
        return None, f"--until: {e}"
    if until < 0:
        return None, f"--until: {args.until!r} is negative; the clock starts at 0"
    return until, None


def cmd_simulate(args: argparse.Namespace) -> int:
    from pykueue.engine.events import EngineError
    from pykueue.sim.result import build_result, write_json, write_yaml
    from pykueue.sim.simulator import Simulation

    until, complaint = _check_arguments(args)
    if complaint is not None:
        return _arg_error(complaint)
    spec = None
    manifests = None
    if args.generator:
        from pykueue.perf.generator import GeneratorError
        from pykueue.perf.run import load_generator_inputs

        try:
            inputs, problems, manifests = load_generator_inputs(args.generator, args.config)
        except GeneratorError as e:
            return _fail(str(e).splitlines(), EXIT_INVALID)
        except Exception as e:  # noqa: BLE001 - any failure reading a user file is reported, not raised
            return _fail([f"{args.generator}: {' '.join(str(e).split())}"], EXIT_INVALID)
        if args.rangespec:
            from pykueue.perf.rangespec import RangeSpecError, load_rangespec

            try:
                spec = load_rangespec(args.rangespec)
            except RangeSpecError as e:
                return _fail(str(e).splitlines(), EXIT_INVALID)
            except Exception as e:  # noqa: BLE001
                return _fail([f"{args.rangespec}: {' '.join(str(e).split())}"], EXIT_INVALID)
    else:
        from pykueue.api.loader import load_paths

        inputs, problems = load_paths(args.paths, args.config)
    if problems:
        return _fail([str(p) for p in problems], EXIT_INVALID)
    _warn(inputs)
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

        try:
            write_report(run, result, args.report)
        except (OSError, RuntimeError) as e:
            reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
            return _arg_error(f"--report: cannot write {args.report}: {reason}")
    output = args.output or ("table" if sys.stdout.isatty() else "json")
    if output == "json":
        write_json(result, sys.stdout)
    elif output == "yaml":
        write_yaml(result, sys.stdout)
    else:
        from pykueue.sim.table import render, terminal

        render(result, terminal())
    if spec is not None and summary is not None:
        from pykueue.perf.rangespec import check

        failures = check(summary, spec)
        if failures:
            return _fail(failures, EXIT_RANGE)
    return EXIT_OK


def cmd_demo(args: argparse.Namespace) -> int:
    from pykueue.demo import run_demo

    return run_demo(speed=args.speed, live=not args.no_live)


def _silence_stdout() -> None:
    """After the reader of stdout went away: point stdout at /dev/null so that the interpreter's
    final flush does not fail again and print an error."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout has no descriptor (replaced in-process): nothing to flush
        pass


def _extra_command(args: argparse.Namespace) -> int:
    """Commands whose code lives beside the layer they serve (the controller, the dev cluster)."""
    return EXTRA_COMMANDS[args.command].run(args)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "validate":
            code = cmd_validate(args)
        elif args.command == "simulate":
            code = cmd_simulate(args)
        elif args.command in EXTRA_COMMANDS:
            code = _extra_command(args)
        else:
            code = cmd_demo(args)
        sys.stdout.flush()  # a closed pipe shows here, while BrokenPipeError can still be caught
        return code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
