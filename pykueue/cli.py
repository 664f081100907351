"""``pykueue`` command line: simulate, validate, demo.

Exit status: 0 success; 1 a rangespec check failed; 2 invalid input (one ``FILE:DOC: ...`` line per
problem on stderr, nothing on stdout); 3 the simulation could not settle (a preemption loop): the run
so far is still printed, and stderr names the loop's workloads and queues.
No traceback reaches the user for anything they typed or wrote: a bad option is the usage of the
command it was given to plus one ``pykueue CMD: error: ...`` line, a problem with a file they named is
one line, and a reader closing the pipe early (``| head``) ends the run quietly.
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import sys
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from pykueue.controller import command as controller_command
from pykueue.dashboard import command as dashboard_command
from pykueue.devcluster import command as devcluster_command
from pykueue.devcluster import image_command
from pykueue.kubectl import command as kubectl_command
from pykueue.manifests import command as manifests_command
from pykueue.sim import explain_command

if TYPE_CHECKING:
    from pykueue.api.inputs import Inputs

EXIT_OK, EXIT_RANGE, EXIT_INVALID, EXIT_UNSETTLED = 0, 1, 2, 3
# Subcommands that bring their own `add_parser(subparsers)` and `run(args) -> int`.
EXTRA_COMMANDS = {
    "controller": controller_command,
    "dashboard": dashboard_command,
    "dev-cluster": devcluster_command,
    "image": image_command,
    "manifests": manifests_command,
    "explain": explain_command,
    "get": kubectl_command.get,
    "describe": kubectl_command.describe,
    "stop": kubectl_command.stop,
    "resume": kubectl_command.resume,
    "pending": kubectl_command.pending,
}


class _Parser(argparse.ArgumentParser):
    """argparse with the conventions of every other problem this CLI reports: exit 2, the usage of the
    command that was misused and one ``PROG: error: ...`` line. ``-5s`` after ``--until`` is a value,
    not an unknown option (as Python 3.13's argparse reads any ``-`` followed by a digit), so a
    negative duration gets its own message."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = re.compile(r"^-\.?\d")

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_INVALID, f"{self.prog}: error: {message}\n")


def _version() -> str:
    """The installed distribution's version: one number, kept in pyproject.toml."""
    from importlib.metadata import PackageNotFoundError, version  # only for --version: 30 ms to import

    try:
        return version("pykueue")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


def _engine_build() -> str:
    """Which engine an import gets here: the compiled build (an extension module) or pure Python;
    found without importing it."""
    import importlib.util
    import sysconfig

    spec = importlib.util.find_spec("pykueue.engine.engine")
    origin = (spec.origin if spec is not None else None) or ""
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    return "compiled engine" if origin.endswith(suffix) else "pure-Python engine"


class _VersionAction(argparse.Action):
    """argparse's ``version`` action, reading the version only when asked for it."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        sys.stdout.write(f"pykueue {_version()} ({_engine_build()})\n")
        parser.exit()


_DURATION = "a Go duration (90s, 1h30m, 250ms) or a number of seconds"


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="pykueue", description="Kueue's admission model in Python.")
    p.add_argument("--version", action=_VersionAction,
                   help="print pykueue's version and exit")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    s = sub.add_parser("simulate", help="run a deterministic virtual-time simulation",
                       description="Simulate Kueue's admission of the given objects on a virtual clock.")
    s.add_argument("paths", nargs="*", metavar="PATH",
                   help="YAML file, or directory of *.yaml / *.yml files, with Kueue objects, Jobs, Namespaces")
    s.add_argument("-o", "--output", choices=("json", "yaml", "table"),
                   help="json or yaml: the result document only; table: for people "
                        "(default: table on a terminal, json otherwise)")
    s.add_argument("--until", metavar="DURATION", help=f"stop the virtual clock at this time: {_DURATION}")
    s.add_argument("--config", metavar="FILE", help="a Kueue Configuration (config.kueue.x-k8s.io v1beta1 or v1beta2)")
    s.add_argument("--generator", metavar="GENERATOR.yaml",
                   help="simulate the objects of an upstream scheduler performance generator config instead of PATHs")
    s.add_argument("--rangespec", metavar="RANGESPEC.yaml",
                   help="check the generator run's summary against an upstream range spec (exit 1 when out of range)")
    s.add_argument("--report", metavar="FILE.html",
                   help="also write a self-contained HTML report (needs plotly: pip install 'pykueue[report]')")

    v = sub.add_parser("validate", help="check manifests and report every problem",
                       description="Check manifests as simulate reads them: one line per problem, FILE:LINE: "
                                   "at the field it names, with warnings among them in file order; exit 2 "
                                   "when there is a problem, 0 with warnings only.")
    v.add_argument("paths", nargs="+", metavar="PATH", help="YAML file, or directory of *.yaml / *.yml files")
    v.add_argument("--config", metavar="FILE", help="a Kueue Configuration (config.kueue.x-k8s.io v1beta1 or v1beta2)")

    d = sub.add_parser("demo", help="watch a small scenario play out (the embedded default)",
                       description="Two teams share GPU quota: watch admission, borrowing, flavor fallback, "
                                   "reclaim and preemption.")
    d.add_argument("--speed", type=float, default=6.0, help="virtual seconds per real second")
    d.add_argument("--no-live", action="store_true", help="print the final tables only")
    for extra in EXTRA_COMMANDS.values():
        extra.add_parser(sub)
    # `controller --dashboard-port` serves the dashboard, which the controller must not import (it reads
    # the simulator): the controller gets its serve function here, as a value.
    sub.choices["controller"].set_defaults(dashboard=dashboard_command.serve_embedded)
    return p


def _subparser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The innermost (sub)command parser ``args`` went through: the one whose usage a mistake shows."""
    while True:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        name = getattr(args, subs[0].dest, None) if subs else None
        if name is None or name not in subs[0].choices:
            return parser
        parser = subs[0].choices[name]


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    """``parse_args``, except that an unknown option is reported by the subcommand it was given to
    (argparse reports it from the top-level parser, with the top-level usage)."""
    parser = _parser()
    args, extras = parser.parse_known_args(argv)
    if extras:
        words = list(sys.argv[1:] if argv is None else argv)
        command = getattr(args, "command", None)
        before = command in words and extras[0] in words and words.index(extras[0]) < words.index(command)
        owner = parser if before else _subparser(parser, args)
        owner.error(f"unrecognized arguments: {' '.join(extras)}")
    return args


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
    """Every problem (exit 2) and warnings about what is valid but probably not meant, including
    references that resolve to nothing among the inputs (alone: exit 0), each at its line."""
    from pykueue.api.clusters import load_clusters
    from pykueue.api.locate import Lines
    from pykueue.api.references import all_warnings

    inputs, clusters, problems = load_clusters(args.paths, args.config)
    warnings = all_warnings(inputs, problems)
    for worker in clusters.workers.values() if clusters is not None else ():  # each MultiKueue worker's own
        warnings += all_warnings(worker, problems)
    lines = Lines()
    found = [(p, "") for p in problems] + [(w, "Warning: ") for w in warnings]
    order = {file: i for i, file in enumerate(inputs.files)}
    # both kinds together, in the order of the files, so that one pass through them fixes everything
    found.sort(key=lambda item: (order.get(item[0].source.file, len(order)), lines.line(item[0]) or 0))
    for problem, prefix in found:
        print(f"{prefix}{lines.format(problem)}", file=sys.stderr)
    if problems:
        return EXIT_INVALID
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
    if args.config and os.path.isdir(args.config):
        return None, f"--config: {args.config} is a directory; give the Configuration file"
    if args.report:
        folder = os.path.dirname(os.path.abspath(args.report))
        if not os.path.isdir(folder):
            return None, f"--report: cannot write {args.report}: no such directory {folder}"
        if os.path.isdir(args.report):
            return None, f"--report: cannot write {args.report}: it is a directory"
        try:  # before the run, not after minutes of it
            import plotly  # noqa: F401
        except ImportError:
            return None, "--report needs plotly, which is not installed: pip install 'pykueue[report]'"
    if args.until is None:
        return None, None
    try:
        until = parse_duration(args.until)
    except ValueError as e:
        return None, f"--until: {e}"
    if until < 0:
        return None, f"--until: {args.until!r} is negative; the clock starts at 0"
    return until, None


def _collect_rarely() -> None:
    """Tune the cycle collector for a run: loading and the engine make millions of short-lived objects
    but little cyclic garbage, so young collections every 50,000 allocations instead of 700; the inputs,
    once loaded, live to the end (``gc.freeze`` after loading: never traversed again). A fifth to a
    quarter of a baseline run's CPU was the collector's. Paused while loading (the loader pauses it too,
    and would otherwise resume it, leaving everything it made for one young collection to traverse);
    ``_loaded`` freezes what was loaded, then resumes it."""
    gc.set_threshold(50_000, 20, 100)
    gc.disable()


def _loaded() -> None:
    """The inputs are read: they live to the end of the run, so they leave the collector's generations
    (``gc.freeze``) before it runs again."""
    gc.freeze()
    gc.enable()


def cmd_simulate(args: argparse.Namespace) -> int:
    from pykueue.engine.events import EngineError
    from pykueue.sim.result import build_result, event_entries, write_json, write_yaml
    from pykueue.sim.simulator import Simulation

    until, complaint = _check_arguments(args)
    if complaint is not None:
        return _arg_error(complaint)
    _collect_rarely()
    spec = None
    facts = None
    if args.generator:
        from pykueue.perf.generator import GeneratorError
        from pykueue.perf.run import load_generator_run

        try:
            inputs, problems, facts = load_generator_run(args.generator, args.config)
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
        from pykueue.api.clusters import load_clusters

        inputs, clusters, problems = load_clusters(args.paths, args.config)
        if clusters is not None and not problems:  # worker clusters (MultiKueue): sim/multicluster_command.py
            if args.report:
                return _arg_error("--report draws one cluster; this input has worker clusters")
            from pykueue.sim.multicluster_command import simulate_clusters

            _warn(inputs)
            _, stopped_at, events = simulate_clusters(clusters, until, args.output or (
                "table" if sys.stdout.isatty() else "json"))
            if stopped_at is not None:
                sys.stdout.flush()
                return _fail([f"simulation stopped: {stopped_at}", loop_members(events)], EXIT_UNSETTLED)
            return EXIT_OK
    if problems:
        return _fail([str(p) for p in problems], EXIT_INVALID)
    _warn(inputs)
    report_classes = None
    if facts is not None and args.report:  # the report's queue classes, as the manifests label them
        report_classes = {name: cls for name, (cls, _, _) in facts.cluster_queues.items() if cls}
    _loaded()
    sim = Simulation(inputs, until=until, record_usage=bool(args.report),
                     record_reasons=bool(args.report))
    stopped: str | None = None
    try:
        run = sim.run()
    except EngineError as e:  # the run so far is still shown: its last events are the loop
        run, stopped = sim.run_data, str(e)
    gc.disable()  # the result is plain dicts and lists, without cycles: nothing for the collector
    output = args.output or ("table" if sys.stdout.isatty() else "json")
    failures: list[str] | None = None
    if output in ("json", "yaml") and not args.report:
        # Streamed: each workload and event entry is made, shown to the summary and written, then
        # dropped (a million workloads' result is never held whole).
        from pykueue.sim.result import streamed_result

        recorder = None
        if facts is not None:
            from pykueue.perf.summary import Recorder

            recorder = Recorder(facts)
        (write_json if output == "json" else write_yaml)(streamed_result(run, recorder), sys.stdout)
        if spec is not None and recorder is not None and recorder.done is not None and stopped is None:
            from pykueue.perf.rangespec import check

            failures = check(recorder.done, spec)
        if stopped is not None:
            sys.stdout.flush()
            return _fail([f"simulation stopped: {stopped}", loop_members(list(event_entries(run)))], EXIT_UNSETTLED)
        return _fail(failures, EXIT_RANGE) if failures else EXIT_OK
    result = build_result(run)
    summary = None
    if facts is not None:
        from pykueue.perf.run import summary_of

        summary = summary_of(result, facts)
        result["summary"] = summary
    if spec is not None and summary is not None and stopped is None:
        from pykueue.perf.rangespec import check

        failures = check(summary, spec)
    if args.report:
        from pykueue.sim.report import write_report

        gc.enable()  # the report's figures are other objects than the result's dicts

        try:
            write_report(
                run, result, args.report,
                inputs=([args.generator] if args.generator else list(args.paths)) + ([args.config] if args.config else []),
                rangespec=args.rangespec, verdict=failures, stopped=stopped,
                queue_classes=report_classes,
            )
        except (OSError, RuntimeError) as e:
            reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
            return _arg_error(f"--report: cannot write {args.report}: {reason}")
    if output == "json":
        write_json(result, sys.stdout)
    elif output == "yaml":
        write_yaml(result, sys.stdout)
    else:
        from pykueue.sim.table import nominal_quotas, render, terminal

        render(result, terminal(), quotas=nominal_quotas(run.engine), rows=facts is None,
               verdict=failures, stopped=stopped)
    if stopped is not None:
        sys.stdout.flush()
        return _fail([f"simulation stopped: {stopped}", loop_members(result["events"])], EXIT_UNSETTLED)
    if failures:
        return _fail(failures, EXIT_RANGE)
    return EXIT_OK


def _names(names: Sequence[str], limit: int = 10) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def loop_members(events: Sequence[dict[str, Any]]) -> str:
    """The workloads and cluster queues of the loop that stopped a run, from its last events: those
    evicted more than once at the final instant (a loop at one instant), else in the last 1,000 events
    (a loop over time), with the workloads that preempted them."""
    from pykueue.sim.table import seconds

    if not events:
        return "in the loop: no events were recorded"
    end = events[-1]["time"]
    start = len(events)
    while start and events[start - 1]["time"] == end:
        start -= 1
    members: set[str] = set()
    window: Sequence[dict[str, Any]] = ()
    for window in (events[start:], events[-1000:]):
        evictions = Counter(e["workload"] for e in window if e["type"] == "Evicted")
        members = {w for w, n in evictions.items() if n > 1}
        if members:
            break
    if not members:  # a single eviction each: name the last one evicted
        members = {next((e["workload"] for e in reversed(events) if e["type"] == "Evicted"), events[-1]["workload"])}
    members |= {e["by"] for e in window if e["type"] == "Preempted" and e["workload"] in members and e.get("by")}
    queues = sorted({e["clusterQueue"] for e in window if e["workload"] in members and e.get("clusterQueue")})
    return (f"in the loop: workloads {_names(sorted(members))}; cluster queues {_names(queues) if queues else 'none'} "
            f"(the output has the events up to the stop, at {seconds(end)})")


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
    args = _parse(argv)
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
