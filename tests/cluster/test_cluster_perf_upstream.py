"""The live runner with upstream Kueue's Go manager in pykueue controller's place (``--controller
upstream``): built from the release hack/k8s/kueue pins, it admits and finishes every Workload of a
small baseline run on the same control plane, and the output names that release."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pykueue.devcluster import upstream_kueue

pytestmark = pytest.mark.cluster

ROOT = Path(__file__).resolve().parents[2]
BASELINE = ROOT / "pykueue" / "examples" / "perf" / "baseline"


def test_upstream_manager_plays_every_workload_to_the_end() -> None:
    upstream_kueue.ensure()  # a first build takes minutes: outside the run's own timeout
    run = subprocess.run(
        [sys.executable, "bench/cluster_perf.py", "--generator", str(BASELINE / "generator.yaml"),
         "--rangespec", str(BASELINE / "rangespec.yaml"), "--scale", "0.01", "--timeout", "240",
         "--controller", "upstream"],
        cwd=ROOT, capture_output=True, text=True, timeout=420)
    assert run.returncode in (0, 1), run.stdout[-2000:] + run.stderr[-3000:]
    figures = json.loads(run.stdout.strip().splitlines()[-1])
    version = upstream_kueue.version()
    assert version == "v0.17.0"
    assert figures["controller"] == f"upstream Kueue {version} (Go)"
    assert f"controller: upstream Kueue {version} (Go)" in run.stdout
    assert figures["workloads"] == 30 * (4 + 1 + 1)
    assert figures["finished"] == figures["workloads"]
    assert figures["createErrors"] == 0 and figures["finishErrors"] == 0
    assert figures["controllerCpuSecondsDuringRun"] > 0 and figures["controllerPeakMB"] > 0
    live = figures["live"]["workloadClasses"]
    assert {c: live[c]["count"] for c in live} == {"small": 120, "medium": 30, "large": 30}
    # upstream's manager, not the runner, wrote the admissions: one status write per workload at least
    assert figures["apiRequests"]["APPLY workloads/status"] + figures["apiRequests"].get(
        "PATCH workloads/status", 0) + figures["apiRequests"].get("UPDATE workloads/status", 0) \
        >= 2 * figures["workloads"]

