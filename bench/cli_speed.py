"""``pykueue simulate`` as a user runs it: the whole CLI process, output included, beside a reference build.

Each run is a fresh process (``pykueue simulate --generator G --output FORMAT``, stdout to /dev/null: the
output is still encoded and written), timed by a wrapper process from ``getrusage(RUSAGE_CHILDREN)``:
CPU seconds (user + system) and peak RSS. The reference is another commit (default ``5ef5fcd``, the
build issue 23 measures against) exported with ``git archive`` into a temporary directory and installed
in a venv of its own there; both builds run the same command, interleaved, and each figure is the
lowest of ``--repeat`` runs (the machine is shared: the lowest is the least disturbed), the median
beside it. Every build's package is byte-compiled first (``compileall``), as an installed package is:
with ``PYTHONDONTWRITEBYTECODE`` set (as on these machines) a tree that was never compiled is compiled
again by every run (about 0.07 s a run for the reference 5ef5fcd). The
machine's noise moves the ratio: on a busy hour the reference (four times the memory) slows more than
this tree, so quote the quiet rounds (the lowest figures) and their medians.

    python bench/cli_speed.py                          # baseline json + yaml, large-scale json
    python bench/cli_speed.py --runs baseline:json --repeat 3
    python bench/cli_speed.py --runs million:json --no-reference
    python bench/cli_speed.py --reference 5ef5fcd --keep /tmp/pykueue-ref   # reuse the built reference
    python bench/cli_speed.py --compiled --repeat 3   # and a mypyc build of this tree beside

``--compiled`` adds a third build: this tree as ``pip install .`` installs it. pip builds the wheel
(setup.py's hook compiles the engine and the simulate path with mypyc, from the per-source-hash cache
the tests share) and installs it into a temporary directory, which runs with the same interpreter.
The CPU ratios are each build's over the reference's, and the compiled build's over this tree's.

``--instructions`` counts instead of timing: each build runs once under valgrind's callgrind
(``PYTHONHASHSEED=0``), and the table gives the instructions executed (Ir) and their ratios. The count
does not move with the machine's load, so a step of a few per cent shows where CPU seconds, on a
shared machine, cannot; it is a proxy (cache misses and memory traffic are not in it: the reference's
four times the memory costs it more seconds per instruction), and a run takes about 70 times as long.

Scenarios are read from ``<shared>/perf/<name>/generator.yaml`` (``--shared``, default ``../shared``
beside the repository), else from ``pykueue/examples/perf/<name>/``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from pykueue import compiled
from pykueue.devcluster.image import build_wheel

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_RUNS = ["baseline:json", "baseline:yaml", "large-scale:json"]

# Runs the command with stdout to /dev/null; reports the child's CPU, peak RSS and exit status.
_WRAPPER = (
    "import json, resource, subprocess, sys, time\n"
    "t = time.perf_counter()\n"
    "with open('/dev/null', 'wb') as null:\n"
    "    p = subprocess.run(sys.argv[1:], stdout=null, stderr=subprocess.PIPE)\n"
    "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "print(json.dumps({'exit': p.returncode, 'cpu': u.ru_utime + u.ru_stime, 'rss_kb': u.ru_maxrss,"
    " 'wall': time.perf_counter() - t, 'stderr': p.stderr.decode(errors='replace')[-2000:]}))\n"
)


def generator_path(shared: Path, name: str) -> Path:
    for candidate in (shared / "perf" / name / "generator.yaml", ROOT / "pykueue" / "examples" / "perf" / name / "generator.yaml"):
        if candidate.exists():
            return candidate
    raise SystemExit(f"no generator for scenario {name!r} under {shared / 'perf'} or pykueue/examples/perf")


def build_reference(commit: str, where: Path) -> Path:
    """``commit`` exported into ``where`` and installed in ``where/.venv``; returns its interpreter.
    An existing build of the same commit there is reused."""
    python = where / ".venv" / "bin" / "python"
    marker = where / ".built-commit"
    full = subprocess.run(["git", "rev-parse", commit], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    if python.exists() and marker.exists() and marker.read_text().strip() == full:
        return python
    if where.exists():
        shutil.rmtree(where)
    where.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", full], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(where)], input=archive, check=True)
    subprocess.run([sys.executable, "-m", "venv", str(where / ".venv")], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", str(where)], check=True)
    marker.write_text(full + "\n")
    return python


# callgrind's summary line: "==PID== Collected : N" (instructions executed, the only event counted).
_COLLECTED = re.compile(r"^==\d+== Collected : (\d+)$", re.MULTILINE)


def measure(build: tuple[str, Path], generator: Path, fmt: str, instructions: bool = False) -> dict:
    """One run of ``build`` = (interpreter, source tree), started in its tree so that ``-m`` finds it;
    with ``instructions``, under callgrind, with its instruction count as ``ir``."""
    python, tree = build
    cmd = [python, "-m", "pykueue.cli", "simulate", "--generator", str(generator.resolve()), "--output", fmt]
    env = None
    if instructions:
        cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd]
        env = {**os.environ, "PYTHONHASHSEED": "0"}
    out = subprocess.run([sys.executable, "-c", _WRAPPER, *cmd], capture_output=True, text=True, check=True,
                         cwd=tree, env=env)
    result = json.loads(out.stdout)
    if result["exit"] != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {result['exit']}: {result['stderr']}")
    if instructions:
        found = _COLLECTED.search(result["stderr"])
        if found is None:
            raise SystemExit(f"no instruction count in callgrind's output: {result['stderr']}")
        result["ir"] = int(found.group(1))
    return result


def best(results: list[dict]) -> dict:
    figures = {"cpu": min(r["cpu"] for r in results), "median": statistics.median(r["cpu"] for r in results),
               "rss_mb": max(r["rss_kb"] for r in results) / 1024, "wall": min(r["wall"] for r in results)}
    if all("ir" in r for r in results):
        figures["ir"] = min(r["ir"] for r in results)
    return figures


def installed(where: Path) -> Path:
    """This tree as ``pip install .`` puts it in site-packages: pip's wheel (compiled by the build hook)
    installed into ``where/site``; refused unless the engine in it is the compiled one."""
    print("building the wheel (pip wheel .) ...", file=sys.stderr)
    wheel = build_wheel(where / "wheel", where / "pip.log")
    site = where / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site), str(wheel)],
                   check=True)
    if not compiled.installed(site):
        raise SystemExit(f"--compiled: the wheel holds no compiled engine (see {where / 'pip.log'})")
    return site


def byte_compile(python: str, tree: Path) -> None:
    """``tree``'s package compiled to bytecode, so that no run pays for compiling it."""
    subprocess.run([python, "-m", "compileall", "-q", str(tree / "pykueue")], check=True, stdout=subprocess.DEVNULL)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", nargs="+", default=DEFAULT_RUNS, metavar="SCENARIO:FORMAT",
                        help=f"scenario and output format pairs (default: {' '.join(DEFAULT_RUNS)})")
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    parser.add_argument("--reference", default="5ef5fcd", help="commit to build beside this tree (default 5ef5fcd)")
    parser.add_argument("--no-reference", action="store_true", help="time this tree only")
    parser.add_argument("--keep", type=Path, help="build the reference here and keep it (default: a temporary directory)")
    parser.add_argument("--compiled", action="store_true",
                        help="also time this tree compiled by mypyc (its engine and simulate path) (python -m pykueue.compiled)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per build and pair; the lowest CPU is shown")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    parser.add_argument("--instructions", action="store_true",
                        help="count instructions under valgrind's callgrind instead of timing (deterministic, ~70x slower)")
    args = parser.parse_args(argv)
    if args.instructions and shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind (Debian: apt-get install valgrind)")

    temp: tempfile.TemporaryDirectory | None = None
    compiled_copy: tempfile.TemporaryDirectory | None = None
    _, in_place = compiled.status(compiled.source_root())
    builds: list[tuple[str, tuple[str, Path]]] = [("this tree" + (" (compiled in place)" if in_place else ""),
                                                   (sys.executable, ROOT))]
    if args.compiled:
        compiled_copy = tempfile.TemporaryDirectory(prefix="pykueue-installed-")
        builds.append(("compiled", (sys.executable, installed(Path(compiled_copy.name)))))
    if not args.no_reference:
        if args.keep is None:
            temp = tempfile.TemporaryDirectory(prefix="pykueue-ref-")
            where = Path(temp.name)
        else:
            where = args.keep
        print(f"building the reference {args.reference} in {where} ...", file=sys.stderr)
        builds.append((args.reference, (str(build_reference(args.reference, where)), where)))
    for _, (python, tree) in builds:
        byte_compile(python, tree)
    rows = []
    try:
        for pair in args.runs:
            name, _, fmt = pair.partition(":")
            generator = generator_path(args.shared, name)
            runs: dict[str, list[dict]] = {label: [] for label, _ in builds}
            for _ in range(args.repeat):
                for label, build in builds:  # interleaved: both builds see the same machine
                    runs[label].append(measure(build, generator, fmt or "json", args.instructions))
            figures = {label: best(r) for label, r in runs.items()}
            rows.append({"scenario": name, "format": fmt or "json", "figures": figures})
            print(f"  {name} {fmt or 'json'}: " + ", ".join(
                f"{label} {f['cpu']:.2f} s (median {f['median']:.2f}) {f['rss_mb']:.0f} MB"
                + (f" {f['ir'] / 1e9:.3f} G instructions" if "ir" in f else "")
                for label, f in figures.items()), file=sys.stderr)
    finally:
        for directory in (temp, compiled_copy):
            if directory is not None:
                directory.cleanup()
    print_table(rows, [label for label, _ in builds], reference=None if args.no_reference else args.reference,
                metric="ir" if args.instructions else "cpu")
    if args.json:
        print(json.dumps(rows, indent=2))
    return 0


def print_table(rows: list[dict], labels: list[str], reference: str | None = None, metric: str = "cpu") -> None:
    """One row per pair; ratios of ``metric`` (the lowest CPU, or with ``ir`` the instruction counts):
    every build's over the reference's, and the compiled build's over this tree's."""
    ratios = [(label, reference) for label in labels if reference is not None and label != reference]
    if "compiled" in labels:
        ratios.append(("compiled", labels[0]))
    head = ["scenario", "output"]
    for label in labels:
        # under callgrind the peak is valgrind's own: not shown
        head += [f"{label} CPU s (median)", f"{label} peak MB"] if metric == "cpu" else [f"{label} instructions (G)"]
    head += [f"{a} / {b}" for a, b in ratios]
    lines = [head]
    for row in rows:
        f = row["figures"]
        line = [row["scenario"], row["format"]]
        for label in labels:
            if metric == "cpu":
                line += [f"{f[label]['cpu']:.2f} ({f[label]['median']:.2f})", f"{f[label]['rss_mb']:.0f}"]
            else:
                line.append(f"{f[label]['ir'] / 1e9:.3f}")
        line += [f"{f[a][metric] / f[b][metric]:.2f}x" for a, b in ratios]
        lines.append(line)
    print("| " + " | ".join(lines[0]) + " |")
    print("|" + "|".join(" --- " for _ in lines[0]) + "|")
    for line in lines[1:]:
        print("| " + " | ".join(line) + " |")


if __name__ == "__main__":
    sys.exit(main())
