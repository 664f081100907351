"""`pykueue dev-cluster up --pod-run-time`: kwok completes a Job's pod that long after it started, so
quota stays held long enough to watch; a pod's own kwok annotation still wins."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
import yaml

from pykueue.devcluster.cluster import ClusterError, DevCluster, stages_for

ROOT = Path(__file__).resolve().parents[2]


def test_stages_carry_the_run_time_as_pod_completes_default_delay() -> None:
    stages = {d["metadata"]["name"]: d for d in yaml.safe_load_all(stages_for(2.5)) if d}
    delay = stages["pod-complete"]["spec"]["delay"]
    assert delay["durationMilliseconds"] == 2500
    # the pod's annotation is still read first
    assert delay["durationFrom"] == {"expressionFrom": '.metadata.annotations["pod-complete.stage.kwok.x-k8s.io/delay"]'}
    assert stages["pod-ready"]["spec"]["delay"]["durationMilliseconds"] == 0  # only the run time changes
    with pytest.raises(ClusterError, match="negative"):
        stages_for(-1)


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pykueue.cli", "dev-cluster", *args], capture_output=True,
                          text=True, timeout=300, cwd=ROOT)


def test_the_flag_needs_tier_2_and_a_duration(tmp_path: Path) -> None:
    for argv, message in ((["--pod-run-time", "5s"], "--pod-run-time needs --tier 2"),
                          (["--tier", "2", "--pod-run-time", "soon"], "--pod-run-time: invalid duration 'soon'")):
        proc = cli("up", "--dir", str(tmp_path / "c"), *argv)
        assert proc.returncode == 2 and proc.stderr.startswith(f"pykueue: error: {message}"), proc.stderr
        assert not (tmp_path / "c" / "cluster.json").exists()


JOB = """\
apiVersion: batch/v1
kind: Job
metadata: {{name: {name}, namespace: default}}
spec:
  template:
    metadata: {{annotations: {annotations}}}
    spec:
      restartPolicy: Never
      containers: [{{name: c, image: busybox, command: ["true"]}}]
"""


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[DevCluster]:
    directory = tmp_path / "kc"
    proc = cli("up", "--tier", "2", "--dir", str(directory), "--pod-run-time", "6s")
    assert proc.returncode == 0, proc.stderr
    loaded = DevCluster.load(directory)
    try:
        yield loaded
    finally:
        assert cli("down", "--dir", str(directory)).returncode == 0


def _ran_for(cluster: DevCluster, job: str) -> float:
    """Seconds from the pod's start (kwok's pod-ready stage) to its container's finish (pod-complete)."""
    pods = json.loads(cluster.kubectl("get", "pods", "-n", "default", "-l", f"job-name={job}", "-o", "json").stdout)
    [pod] = pods["items"]
    started = datetime.fromisoformat(pod["status"]["startTime"].replace("Z", "+00:00"))
    finished = pod["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"]
    return (datetime.fromisoformat(finished.replace("Z", "+00:00")) - started).total_seconds()


@pytest.mark.e2e
def test_pods_run_for_the_default_unless_they_ask_otherwise(cluster: DevCluster) -> None:
    manifests = (JOB.format(name="default-run", annotations="{}") + "---\n"
                 + JOB.format(name="own-run", annotations='{pod-complete.stage.kwok.x-k8s.io/delay: "0s"}'))
    cluster.kubectl("apply", "-f", "-", input=manifests)
    cluster.kubectl("wait", "-n", "default", "--for=condition=Complete", "job/default-run", "job/own-run",
                    "--timeout=120s")
    # timestamps have whole seconds: 6 s can read as 5
    assert _ran_for(cluster, "default-run") >= 5
    assert _ran_for(cluster, "own-run") <= 2
