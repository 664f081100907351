"""docs/performance.md's measured tables, measured and written in one run: the simulator beside the
reference build, and the live controller beside upstream's.

    python bench/perf_doc.py --write-docs [--scale 0.3] [--repeat 3] [--only simulate|live] [--keep DIR]

``simulate`` runs ``bench/cli_speed.py --compiled --json`` (this tree, its compiled build and the
reference build, interleaved); ``live`` runs ``bench/cluster_perf.py`` on the baseline scenario once
with ``--controller pykueue`` and once with ``--controller upstream``, one after the other (never two
control planes at once), at ``--scale``. Each table is written between its markers in the document
(``<!-- perf_doc:NAME -->`` ... ``<!-- /perf_doc:NAME -->``) with the machine it ran on (cores,
memory, Python, load average before and after: the machine may be shared) and the command of each
row; the prose around the markers is left as it is. Without ``--write-docs`` the blocks are printed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "performance.md"
SIM_RUNS = ("baseline:json", "baseline:yaml", "large-scale:json", "large-scale:yaml")
SCENARIOS = {"baseline": "baseline (15,000 workloads, 30 queues)",
             "large-scale": "large-scale (50,000 workloads, 1,000 queues)"}
LIVE = ("pykueue/examples/perf/baseline/generator.yaml", "pykueue/examples/perf/baseline/rangespec.yaml")
CONTROLLERS = ("pykueue", "upstream")


@dataclass(frozen=True, slots=True)
class Machine:
    """What a reader needs to weigh the seconds: the same run moves with the machine's load."""

    arch: str
    cores: int
    memory_gb: float
    python: str
    load_before: float
    load_after: float
    load_peak: float


class LoadWatch:
    """The highest one-minute load average seen while a bench runs (sampled every 5 s): the load at
    its two ends alone can miss other work that came and went in between."""

    def __init__(self) -> None:
        self.before = self.peak = os.getloadavg()[0]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.wait(5.0):
            self.peak = max(self.peak, os.getloadavg()[0])

    def facts(self) -> Machine:
        self._stop.set()
        self._thread.join()
        return machine_facts(self.before, max(self.peak, os.getloadavg()[0]))


def machine_facts(load_before: float, load_peak: float | None = None) -> Machine:
    with open("/proc/meminfo") as f:
        kb = next(int(line.split()[1]) for line in f if line.startswith("MemTotal:"))
    return Machine(platform.machine(), os.cpu_count() or 0, round(kb / 1024 / 1024, 1), platform.python_version(),
                   load_before, os.getloadavg()[0], max(load_before, load_peak or 0.0))


def machine_line(m: Machine) -> str:
    busy = " (busy: other work shares the cores)" if max(m.load_peak, m.load_after) > m.cores else ""
    return (f"Measured on {m.arch}, {m.cores} cores, {m.memory_gb:g} GB, Python {m.python}; load average "
            f"{m.load_before:.1f} before, at most {m.load_peak:.1f} during and {m.load_after:.1f} after the "
            f"run{busy}.")


def _table(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(" --- " for _ in head) + "|"]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def _sh(commands: list[str]) -> str:
    return "```sh\n" + "\n".join(commands) + "\n```"


# ------------------------------------------------------------------------------------------ simulate


def simulate_command(repeat: int, runs: tuple[str, ...] = SIM_RUNS) -> list[str]:
    return ["bench/cli_speed.py", "--compiled", "--repeat", str(repeat), "--json", "--runs", *runs]


def simulate_block(rows: list[dict[str, Any]], machine: Machine, command: list[str]) -> str:
    """cli_speed's ``--json`` rows as the document's table: each build's lowest CPU (median) and
    peak, and this tree's and the compiled build's ratios to the reference, all from one run."""
    labels = list(rows[0]["figures"])
    tree, compiled, reference = labels[0], "compiled", labels[-1]
    head = ["scenario", "output", tree, "peak", compiled, "peak", reference, "peak",
            f"{tree} / {reference}", f"{compiled} / {reference}"]
    body, named = [], set()
    for row in rows:
        f = row["figures"]
        scenario = row["scenario"] if row["scenario"] in named else SCENARIOS.get(row["scenario"], row["scenario"])
        named.add(row["scenario"])
        line = [scenario, row["format"]]
        for label in (tree, compiled, reference):
            line += [f"{f[label]['cpu']:.2f} ({f[label]['median']:.2f}) s", f"{f[label]['rss_mb']:.0f} MB"]
        line += [f"{f[label]['cpu'] / f[reference]['cpu']:.2f}x" for label in (tree, compiled)]
        body.append(line)
    return "\n\n".join([machine_line(machine), _sh(["python " + " ".join(command)]), _table(head, body)])


# -------------------------------------------------------------------------------------------- live


def live_command(controller: str, scale: float) -> list[str]:
    return ["bench/cluster_perf.py", "--generator", LIVE[0], "--rangespec", LIVE[1], "--scale", f"{scale:g}",
            "--controller", controller]


def _seconds(ms: float | None) -> str:
    return "-" if ms is None else f"{ms / 1000:.1f} s"


def _classes(summary: dict[str, Any], key: str, figure: str, show: Callable[[Any], str]) -> str:
    return " / ".join(show(c.get(figure)) for _, c in sorted(summary[key].items(), key=_class_order))


def _class_order(item: tuple[str, Any]) -> tuple[int, str]:
    order = {"large": 0, "medium": 1, "small": 2}
    return order.get(item[0], 3), item[0]


def _live_row(name: str, run: dict[str, Any]) -> list[str]:
    live = run["live"]
    return [name, f"{run['wallSeconds']:.1f} s",
            f"{run['controllerCpuSecondsDuringRun']:.1f} s / {run['controllerPeakMB']:.0f} MB",
            f"{run['apiserverCpuSeconds']:.1f} s / {run['etcdCpuSeconds']:.1f} s",
            _classes(live, "clusterQueueClasses", "avgUsagePercent", lambda v: f"{v:.1f} %"),
            _classes(live, "workloadClasses", "avgTimeToAdmissionMs", _seconds),
            run["rangespec"] if run["rangespec"] == "pass" else "fail: " + "; ".join(run["failures"])]


def _ratio(a: float | None, b: float | None) -> str:
    return "-" if a is None or not b else f"{a / b:.2f}x"


def live_block(runs: dict[str, dict[str, Any]], machine: Machine, scale: float) -> str:
    """Both controllers' runs (cluster_perf's JSON) as one table: a row each, the simulator's figures
    for the same config, and pykueue's over upstream's for each figure."""
    ours, theirs = runs["pykueue"], runs["upstream"]
    head = ["controller", "wall", "controller CPU / peak", "API server / etcd CPU", "usage",
            "avg time to admission large / medium / small", "rangespec"]
    sim = ours["simulated"]
    body = [_live_row("pykueue controller", ours), _live_row(theirs["controller"], theirs),
            ["simulate, same config", f"{sim['wallMs'] / 1000:.1f} s (virtual)",
             f"{ours['simulateCpuSeconds']:.1f} s (in-process)", "-",
             _classes(sim, "clusterQueueClasses", "avgUsagePercent", lambda v: f"{v:.1f} %"),
             _classes(sim, "workloadClasses", "avgTimeToAdmissionMs", _seconds), "-"]]
    wait = " / ".join(
        _ratio(ours["live"]["workloadClasses"][c].get("avgTimeToAdmissionMs"),
               theirs["live"]["workloadClasses"].get(c, {}).get("avgTimeToAdmissionMs"))
        for c, _ in sorted(ours["live"]["workloadClasses"].items(), key=_class_order))
    body.append(["pykueue / upstream", _ratio(ours["wallSeconds"], theirs["wallSeconds"]),
                 f"{_ratio(ours['controllerCpuSecondsDuringRun'], theirs['controllerCpuSecondsDuringRun'])} / "
                 f"{_ratio(ours['controllerPeakMB'], theirs['controllerPeakMB'])}",
                 f"{_ratio(ours['apiserverCpuSeconds'], theirs['apiserverCpuSeconds'])} / "
                 f"{_ratio(ours['etcdCpuSeconds'], theirs['etcdCpuSeconds'])}", "-", wait, "-"])
    workloads = ours["workloads"]
    intro = (f"Baseline at scale {scale:g} ({workloads:,} workloads; `--scale` keeps that fraction of each "
             f"workloads set, queues whole), both controllers one after the other in one run:")
    commands = ["python " + " ".join(live_command(c, scale)) for c in CONTROLLERS]
    return "\n\n".join([machine_line(machine), _sh(commands), intro, _table(head, body)])


# ------------------------------------------------------------------------------------------ document


def replace_block(text: str, name: str, block: str) -> str:
    """``text`` with what stands between ``<!-- perf_doc:NAME -->`` and ``<!-- /perf_doc:NAME -->``
    replaced by ``block``; a document without the markers is an error, not a silent append."""
    pattern = re.compile(rf"(<!-- perf_doc:{name} -->\n)(?:.*?\n)?(<!-- /perf_doc:{name} -->)", re.DOTALL)
    if not pattern.search(text):
        raise SystemExit(f"{DOC.relative_to(ROOT)}: no <!-- perf_doc:{name} --> ... <!-- /perf_doc:{name} --> block")
    return pattern.sub(lambda m: m.group(1) + block + "\n" + m.group(2), text, count=1)


def _bench_json(command: list[str], codes: tuple[int, ...] = (0,)) -> Any:
    """Run one bench script; its JSON (cli_speed: the document after the table; cluster_perf: the last line)."""
    print("$ python " + " ".join(command), file=sys.stderr, flush=True)
    done = subprocess.run([sys.executable, *command], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    if done.returncode not in codes:
        raise SystemExit(f"python {' '.join(command)} exited {done.returncode}")
    out = done.stdout
    try:
        return json.loads(out[out.index("\n[") + 1:] if "\n[" in out else out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise SystemExit(f"python {' '.join(command)} printed no figures (exit {done.returncode})") from None


def measure_simulate(repeat: int, keep: Path | None) -> str:
    load = LoadWatch()
    command = simulate_command(repeat)
    rows = _bench_json(command + (["--keep", str(keep)] if keep else []))  # a cache: not in the written command
    return simulate_block(rows, load.facts(), command)


def measure_live(scale: float) -> str:
    load = LoadWatch()
    # upstream's first: a build or start-up that fails then costs no pykueue run; 1 is a failed range spec
    runs = {c: _bench_json(live_command(c, scale), codes=(0, 1)) for c in reversed(CONTROLLERS)}
    return live_block(runs, load.facts(), scale)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write-docs", action="store_true", help=f"rewrite the tables of {DOC.relative_to(ROOT)} in place")
    ap.add_argument("--only", choices=("simulate", "live"), help="measure and write one table only")
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of the live scenario's workloads (default 1)")
    ap.add_argument("--repeat", type=int, default=3, help="cli_speed's runs per build (lowest and median shown)")
    ap.add_argument("--keep", type=Path, help="cli_speed's --keep: build the reference build here and reuse it")
    args = ap.parse_args(argv)
    if not 0 < args.scale <= 1:
        ap.error("--scale must be in (0, 1]")
    blocks = {}
    if args.only in (None, "simulate"):
        blocks["simulate"] = measure_simulate(args.repeat, args.keep)
    if args.only in (None, "live"):
        blocks["live"] = measure_live(args.scale)
    if not args.write_docs:
        print("\n\n".join(blocks.values()))
        return 0
    text = DOC.read_text()
    for name, block in blocks.items():
        text = replace_block(text, name, block)
    DOC.write_text(text)
    print(f"wrote {', '.join(blocks)} into {DOC.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
