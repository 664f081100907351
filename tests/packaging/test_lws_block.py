"""docs/cluster.md's "LeaderWorkerSet on the dev cluster" block, run as it stands: the dev cluster with the
lws addon, a controller with the LeaderWorkerSet integration, and an LWS of 2 groups of a leader (1 cpu)
and a worker (500m) in a 3 cpu queue: two Workloads, one per group, both admitted (2 x 1.5 cpu), and
LWS's controller reports the set Available once both groups' Pods run.

Only `/tmp/kc` is changed, to a directory of this test.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pykueue.devcluster.cluster import DevCluster
from tests.packaging.readme_blocks import block_before_down, running, workdir  # noqa: F401 - a fixture

pytestmark = pytest.mark.e2e


def test_the_lws_block_admits_each_group_and_runs_it(workdir: Path) -> None:  # noqa: F811
    body = block_before_down("LeaderWorkerSet on the dev cluster", "docs/cluster.md")
    with running(body, workdir, timeout=900) as (returncode, out):
        assert returncode == 0, out[-3000:]
        rows = re.findall(r"^leaderworkerset-demo-[01]-\w+\s+lq\s+serving\s+True", out, re.MULTILINE)
        assert len(rows) == 2, out[-2000:]
        cluster = DevCluster.load(workdir / "kc")
        assert cluster.addons == ("lws",)
        workloads = json.loads(cluster.kubectl("get", "workloads", "-o", "json").stdout)["items"]
        assert sorted(w["metadata"]["name"].rsplit("-", 1)[0] for w in workloads) == [
            "leaderworkerset-demo-0", "leaderworkerset-demo-1"]  # no Pod's own
        for workload in workloads:
            assert [(p["name"], p["count"]) for p in workload["spec"]["podSets"]] == [("leader", 1), ("worker", 1)]
        pods = json.loads(cluster.kubectl("get", "pods", "-l", "leaderworkerset.sigs.k8s.io/name=demo",
                                          "-o", "json").stdout)["items"]
        assert len(pods) == 4 and all(p["status"]["phase"] == "Running" for p in pods)
        assert all(not p["spec"].get("schedulingGates") for p in pods)
