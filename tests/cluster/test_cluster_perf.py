"""The live runner end to end at a small scale: a real API server, ``pykueue controller`` as its own
process, every Workload created, admitted and finished, and the machine-readable last line complete."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.cluster

ROOT = Path(__file__).resolve().parents[2]
BASELINE = ROOT / "pykueue" / "examples" / "perf" / "baseline"


def test_live_runner_plays_every_workload_to_the_end(tmp_path: Path) -> None:
    report = tmp_path / "live.html"
    run = subprocess.run(
        [sys.executable, "bench/cluster_perf.py", "--generator", str(BASELINE / "generator.yaml"),
         "--rangespec", str(BASELINE / "rangespec.yaml"), "--scale", "0.01", "--timeout", "240",
         "--report", str(report)],
        cwd=ROOT, capture_output=True, text=True, timeout=420)
    assert run.returncode in (0, 1), run.stderr[-3000:]
    figures = json.loads(run.stdout.strip().splitlines()[-1])
    # 30 queues x (4 small + 1 medium + 1 large rounds at scale 0.01)
    assert figures["workloads"] == 30 * (4 + 1 + 1)
    assert figures["finished"] == figures["workloads"]
    assert figures["createErrors"] == 0 and figures["finishErrors"] == 0
    assert figures["rangespec"] in ("pass", "fail")
    assert (figures["rangespec"] == "pass") == (run.returncode == 0) == (not figures["failures"])
    for key in ("wallSeconds", "controllerCpuSeconds", "controllerPeakMB", "apiserverCpuSeconds"):
        assert figures[key] > 0, key
    live, sim = figures["live"]["workloadClasses"], figures["simulated"]["workloadClasses"]
    assert {c: live[c]["count"] for c in live} == {c: sim[c]["count"] for c in sim} == {
        "small": 120, "medium": 30, "large": 30}
    # the controller applied one admission per workload at least, and the runner one finish each
    # (a server-side apply of the Finished condition, as upstream's runner writes it)
    assert figures["apiRequests"]["APPLY workloads/status"] >= 2 * figures["workloads"]
    assert "PATCH workloads/status" not in figures["apiRequests"]
    assert "Live vs simulated" in report.read_text()
