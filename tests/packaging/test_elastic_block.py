"""docs/cluster.md's "Elastic Jobs on the dev cluster" block, run as it stands: an elastic Job of 2 pods of
1 cpu in a 3-cpu queue, scaled to 3 (the new slice replaces the first: 3 cpu held, not 2 + 3), then to 5
(that slice can never fit 3 cpu: it waits, the Job runs on at 3, two of its new pods
held at the elastic-job gate), the Job never suspended.

Only `/tmp/kc` is changed, to a directory of this test.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from pykueue.devcluster.cluster import DevCluster
from tests.packaging.readme_blocks import block_before_down, running, workdir  # noqa: F401 - a fixture

pytestmark = pytest.mark.e2e
GATE = "kueue.x-k8s.io/elastic-job"


def _count(workload: dict) -> int:
    return workload["spec"]["podSets"][0]["count"]


def _condition(workload: dict, kind: str) -> dict:
    return next((c for c in (workload.get("status") or {}).get("conditions") or [] if c["type"] == kind), {})


def test_the_elastic_block_scales_through_slices(workdir: Path) -> None:  # noqa: F811
    body = block_before_down("Elastic Jobs on the dev cluster", "docs/cluster.md")
    with running(body, workdir, timeout=600) as (returncode, out):
        assert returncode == 0, out[-3000:]
        cluster = DevCluster.load(workdir / "kc")

        def state() -> tuple[dict[int, dict], dict, list[dict]]:
            workloads = json.loads(cluster.kubectl("get", "workloads", "-o", "json").stdout)["items"]
            job = json.loads(cluster.kubectl("get", "job", "grow", "-o", "json").stdout)
            pods = json.loads(cluster.kubectl("get", "pods", "-l", "job-name=grow", "-o", "json").stdout)["items"]
            return {_count(w): w for w in workloads}, job, pods

        deadline = time.monotonic() + 90
        while True:
            slices, job, pods = state()
            waiting = slices.get(5)
            gated = [p for p in pods if any(g.get("name") == GATE for g in p["spec"].get("schedulingGates") or [])]
            if waiting is not None and _condition(waiting, "QuotaReserved").get("status") == "False" \
                    and len(gated) == 2:
                break
            assert time.monotonic() < deadline, (sorted(slices), [p["metadata"]["name"] for p in gated], out[-2000:])
            time.sleep(1)
        assert sorted(slices) == [2, 3, 5]
        assert _condition(slices[2], "Finished").get("reason") == "WorkloadSliceReplaced"
        assert _condition(slices[3], "Admitted").get("status") == "True"
        assert _condition(slices[3], "Finished").get("status") != "True"
        assert (slices[5]["metadata"].get("annotations") or {}).get(
            "kueue.x-k8s.io/workload-slice-replacement-for", "").endswith(slices[3]["metadata"]["name"])
        assert job["spec"].get("suspend") is False
        queue = json.loads(cluster.kubectl("get", "clusterqueue", "elastic", "-o", "json").stdout)
        held = [r["total"] for f in queue["status"].get("flavorsReservation") or [] for r in f["resources"]
                if r["name"] == "cpu"]
        assert held == ["3"], queue["status"]
