"""docs/cluster.md's "JobSet on the dev cluster" block, run as it stands: the dev cluster with the jobset
addon, a controller with the JobSet integration, and a JobSet of a driver and two workers Jobs of two
pods admitted in a 4 cpu queue (1 + 4 x 0.5 = 3 cpu), run by JobSet's controller to Completed.

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


def test_the_jobset_block_admits_and_completes_its_jobset(workdir: Path) -> None:  # noqa: F811
    body = block_before_down("JobSet on the dev cluster", "docs/cluster.md")
    with running(body, workdir, timeout=900) as (returncode, out):
        assert returncode == 0, out[-3000:]
        assert re.search(r"^jobset-demo-\w+\s+lq\s+training\s+True", out, re.MULTILINE), out[-2000:]
        cluster = DevCluster.load(workdir / "kc")
        assert cluster.addons == ("jobset",)
        jobs = json.loads(cluster.kubectl("get", "jobs", "-l", "jobset.sigs.k8s.io/jobset-name=demo",
                                          "-o", "json").stdout)["items"]
        assert sorted(j["metadata"]["name"] for j in jobs) == ["demo-driver-0", "demo-workers-0", "demo-workers-1"]
        workloads = json.loads(cluster.kubectl("get", "workloads", "-o", "json").stdout)["items"]
        assert [w["metadata"]["name"].rsplit("-", 1)[0] for w in workloads] == ["jobset-demo"]  # no Job's own
        (workload,) = workloads
        assert [(p["name"], p["count"]) for p in workload["spec"]["podSets"]] == [("driver", 1), ("workers", 4)]
        finished = [c for c in workload["status"]["conditions"] if c["type"] == "Finished"]
        assert finished and finished[0]["reason"] == "Succeeded"
