"""Upstream's scheduler-performance scenarios: whole-process CPU time and peak memory.

Runs ``pykueue simulate --generator ... --rangespec ...`` for the baseline and large-scale configs in
``../shared/perf`` as separate processes and prints, for each, CPU seconds (user + system), peak RSS,
the rangespec verdict and the summary figures. Targets (issue 5): baseline <= 5 s CPU, large-scale
<= 30 s CPU, peak memory <= 1 GB for either.

    python bench/perf_scenarios.py [--shared ../shared] [--only baseline]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_CPU = {"baseline": 5.0, "large-scale": 30.0}
TARGET_RSS_MB = 1024


def run(shared: Path, name: str) -> dict:
    scenario = shared / "perf" / name
    cmd = [
        sys.executable, "-m", "pykueue.cli", "simulate",
        "--generator", str(scenario / "generator.yaml"),
        "--rangespec", str(scenario / "rangespec.yaml"),
        "--output", "json",
    ]
    # A fresh wrapper process per scenario, so peak RSS is this scenario's own, not the max so far.
    wrapper = (
        "import resource, subprocess, sys, json, time\n"
        "t = time.perf_counter()\n"
        "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "w = time.perf_counter() - t\n"
        "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
        "print(json.dumps({'exit': p.returncode, 'cpu': u.ru_utime + u.ru_stime, 'rss_kb': u.ru_maxrss,"
        " 'wall': w, 'stdout': p.stdout, 'stderr': p.stderr}))\n"
    )
    out = subprocess.run([sys.executable, "-c", wrapper, *cmd], capture_output=True, text=True, cwd=ROOT)
    child = json.loads(out.stdout)
    cpu, wall = child["cpu"], child["wall"]
    proc = subprocess.CompletedProcess(cmd, child["exit"], child["stdout"], child["stderr"])
    summary = json.loads(proc.stdout)["summary"] if proc.stdout else {}
    return {
        "scenario": name,
        "exit": proc.returncode,
        "rangespec": "pass" if proc.returncode == 0 else f"FAIL: {proc.stderr.strip()}",
        "cpu_s": round(cpu, 2),
        "wall_s": round(wall, 2),
        "peak_rss_mb": round(child["rss_kb"] / 1024, 1),  # Linux reports KiB
        "target_cpu_s": TARGET_CPU[name],
        "summary": {
            "wallMs": summary.get("wallMs"),
            "avgUsagePercent": {k: v["avgUsagePercent"] for k, v in summary.get("clusterQueueClasses", {}).items()},
            "avgTimeToAdmissionMs": {k: v["avgTimeToAdmissionMs"] for k, v in summary.get("workloadClasses", {}).items()},
        },
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", default=str(ROOT.parent / "shared"))
    ap.add_argument("--only", choices=sorted(TARGET_CPU))
    args = ap.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    ok = True
    for name in [args.only] if args.only else ["baseline", "large-scale"]:
        r = run(Path(args.shared), name)
        within = r["exit"] == 0 and r["cpu_s"] <= r["target_cpu_s"] and r["peak_rss_mb"] <= TARGET_RSS_MB
        ok &= within
        print(
            f"{name:12s} cpu {r['cpu_s']:6.2f}s (target {r['target_cpu_s']:.0f}s)  wall {r['wall_s']:6.2f}s  "
            f"peak {r['peak_rss_mb']:7.1f} MB  rangespec {r['rangespec']}  {'OK' if within else 'OVER TARGET'}"
        )
        print(f"{'':12s} {json.dumps(r['summary'])}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
