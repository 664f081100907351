"""`pykueue dev-cluster up --tier 2 --addons jobset,lws` and `down`, without pykueue's controller: JobSet's
and LeaderWorkerSet's managers run with their webhooks, so a plain JobSet makes its Jobs and Pods and
completes, and a plain LeaderWorkerSet makes a leader and workers per group; `down` stops both managers
first. Expected counts are JobSet's and LWS's own rules: a replicated job of 2 replicas of parallelism 2
is 2 Jobs and 4 Pods; an LWS of 2 replicas of size 3 is 2 groups of a leader and 2 workers, 6 Pods."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from pykueue.devcluster import archived
from pykueue.devcluster.cluster import DevCluster

ROOT = Path(__file__).resolve().parents[2]
JOBSET = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "plain", "namespace": "default"},
          "spec": {"replicatedJobs": [{"name": "workers", "replicas": 2, "template": {"spec": {
              "parallelism": 2, "completions": 2, "template": {"spec": {
                  "restartPolicy": "Never", "containers": [{"name": "w", "image": "busybox"}]}}}}}]}}
LWS = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
       "metadata": {"name": "infer", "namespace": "default"},
       "spec": {"replicas": 2, "leaderWorkerTemplate": {"size": 3, "workerTemplate": {"spec": {
           "containers": [{"name": "server", "image": "nginx"}]}}}}}


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pykueue.cli", "dev-cluster", *args], capture_output=True,
                          text=True, timeout=1200, cwd=ROOT)


def _get(cluster: DevCluster, *args: str) -> dict[str, Any]:
    return json.loads(cluster.kubectl("get", *args, "-o", "json").stdout)


def _until(check, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := check():
            return found
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def _log_tail(directory: Path, name: str) -> str:
    log = directory / "logs" / f"{name}.log"
    return "\n".join(log.read_text(errors="replace").splitlines()[-10:]) if log.exists() else "(no log)"


@pytest.mark.e2e
def test_up_with_the_jobset_and_lws_addons_runs_their_objects_and_down_stops_them(tmp_path: Path) -> None:
    directory = tmp_path / "kc"
    up = cli("up", "--tier", "2", "--addons", "jobset,lws", "--dir", str(directory), "--timeout", "900")
    try:
        assert up.returncode == 0, up.stderr
        cluster = DevCluster.load(directory)
        assert cluster.addons == ("jobset", "lws")
        managers = [p for p in cluster.processes if p.name in ("jobset-manager", "lws-manager")]
        assert sorted(p.name for p in managers) == ["jobset-manager", "lws-manager"] and all(p.alive() for p in managers)

        cluster.kubectl("create", "-f", "-", input=json.dumps(JOBSET))
        completed = _until(lambda: (js := _get(cluster, "jobset", "plain")) and any(
            c["type"] == "Completed" and c["status"] == "True" for c in (js.get("status") or {}).get("conditions") or [])
            and js, 120, "the JobSet completed")
        assert completed["spec"]["replicatedJobs"][0]["template"]["spec"]["completionMode"] == "Indexed"  # its webhook
        jobs = _get(cluster, "jobs", "-l", "jobset.sigs.k8s.io/jobset-name=plain")["items"]
        assert sorted(j["metadata"]["name"] for j in jobs) == ["plain-workers-0", "plain-workers-1"]
        pods = _get(cluster, "pods", "-l", "jobset.sigs.k8s.io/jobset-name=plain")["items"]
        assert len(pods) == 4 and all(p["status"]["phase"] == "Succeeded" for p in pods)

        cluster.kubectl("create", "-f", "-", input=json.dumps(LWS))

        def running() -> list[dict[str, Any]] | None:
            found = _get(cluster, "pods", "-l", "leaderworkerset.sigs.k8s.io/name=infer")["items"]
            ok = len(found) == 6 and all((p.get("status") or {}).get("phase") == "Running" for p in found)
            return found if ok else None

        pods = _until(running, 180, f"the LWS's 6 pods running\n{_log_tail(directory, 'lws-manager')}")
        assert sorted(p["metadata"]["name"] for p in pods) == ["infer-0", "infer-0-1", "infer-0-2",
                                                               "infer-1", "infer-1-1", "infer-1-2"]
        # LWS's pod webhook labels each Pod with its group and worker index
        assert sorted((p["metadata"]["labels"]["leaderworkerset.sigs.k8s.io/group-index"],
                       p["metadata"]["labels"]["leaderworkerset.sigs.k8s.io/worker-index"]) for p in pods) == [
            ("0", "0"), ("0", "1"), ("0", "2"), ("1", "0"), ("1", "1"), ("1", "2")]
    finally:
        down = cli("down", "--dir", str(directory))
    assert down.returncode == 0, down.stderr
    stopped = down.stdout.removeprefix("stopped ").split(", ")
    assert sorted(stopped[:2]) == ["jobset-manager", "lws-manager"], (
        f"{down.stdout}\n--- jobset-manager ---\n{_log_tail(directory, 'jobset-manager')}")
    assert not any(p.alive() for p in managers)
    assert archived.home(archived.JOBSET).is_dir()
