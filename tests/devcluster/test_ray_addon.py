"""`pykueue dev-cluster up --tier 2 --addons ray` and `down`: KubeRay's CRDs installed, its operator
running as one of the cluster's processes, stopped first by `down`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pykueue.devcluster import kuberay
from pykueue.devcluster.cluster import DevCluster

ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pykueue.cli", "dev-cluster", *args], capture_output=True,
                          text=True, timeout=600, cwd=ROOT)


@pytest.mark.e2e
def test_up_with_the_ray_addon_runs_the_operator_and_down_stops_it(tmp_path: Path) -> None:
    directory = tmp_path / "kc"
    up = cli("up", "--tier", "2", "--addons", "ray", "--dir", str(directory), "--timeout", "300")
    try:
        assert up.returncode == 0, up.stderr
        cluster = DevCluster.load(directory)
        assert cluster.addons == ("ray",)
        operator = [p for p in cluster.processes if p.name == "ray-operator"]
        assert len(operator) == 1 and operator[0].alive()
        crds = json.loads(cluster.kubectl("get", "crd", *kuberay.CRD_NAMES, "-o", "json").stdout)["items"]
        assert sorted(c["metadata"]["name"] for c in crds) == sorted(kuberay.CRD_NAMES)
        assert all(any(c["type"] == "Established" and c["status"] == "True" for c in crd["status"]["conditions"])
                   for crd in crds)
    finally:
        down = cli("down", "--dir", str(directory))
    log = directory / "logs" / "ray-operator.log"
    tail = "\n".join(log.read_text(errors="replace").splitlines()[-10:]) if log.exists() else "(no log)"
    assert down.returncode == 0, down.stderr
    assert down.stdout.startswith("stopped ray-operator, kwok, "), f"{down.stdout}\n--- ray-operator log ---\n{tail}"
    assert not operator[0].alive()
