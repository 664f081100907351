"""``pykueue simulate --generator`` end to end on upstream's baseline scenario (not a timing test)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHARED = next(
    (p for p in (ROOT.parent / "shared" / "perf", Path("/work/shared/perf")) if p.exists()),
    ROOT.parent / "shared" / "perf",
)
needs_shared = pytest.mark.skipif(not (SHARED / "baseline").exists(), reason="shared perf configs not available")


def simulate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pykueue.cli", "simulate", *args, "--output", "json"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)


@needs_shared
def test_baseline_passes_its_rangespec(tmp_path: Path) -> None:
    base = SHARED / "baseline"
    proc = simulate("--generator", str(base / "generator.yaml"), "--rangespec", str(base / "rangespec.yaml"))
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    summary = result["summary"]
    assert sorted(summary["workloadClasses"]) == ["large", "medium", "small"]
    assert {k: v["count"] for k, v in summary["workloadClasses"].items()} == {"large": 1500, "medium": 3000, "small": 10500}
    assert summary["clusterQueueClasses"]["cq"]["clusterQueues"] == 30
    assert len(result["workloads"]) == 15000
    assert all(w["state"] == "Finished" for w in result["workloads"])


@needs_shared
def test_rangespec_failure_exits_1_and_names_the_figure(tmp_path: Path) -> None:
    base = SHARED / "baseline"
    strict = tmp_path / "rangespec.yaml"
    strict.write_text("cmd:\n  maxWallMs: 1000\nclusterQueueClassesMinUsage:\n  cq: 50\n"
                      "wlClassesMaxAvgTimeToAdmissionMs:\n  large: 23000\n  medium: 90000\n  small: 260000\n")
    proc = simulate("--generator", str(base / "generator.yaml"), "--rangespec", str(strict))
    assert proc.returncode == 1
    assert "maxWallMs" in proc.stderr
    assert json.loads(proc.stdout)["summary"]["wallMs"] > 1000
