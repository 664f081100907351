"""The development install block of docs/cluster.md (the manifest applied, the controller run locally), run as it stands: a newcomer's commands from the test
cluster's start through `kubectl apply --server-side -f config/manifests.yaml` to seed 001's smoke Job
admitted, with the controller running locally on the ServiceAccount's token.

Only `/tmp/kc` is changed, to a directory of this test; the controller the block starts in the
background is stopped by its process group and the cluster by `pykueue dev-cluster down`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pykueue.devcluster.cluster import DevCluster
from tests.packaging.readme_blocks import INSTALL_DOC, INSTALL_SECTION, running, sh_block, workdir  # noqa: F401 - a fixture

pytestmark = pytest.mark.e2e


def install_block() -> str:
    """The first sh block of the development install section (docs/cluster.md, linked from the README)."""
    return sh_block(INSTALL_SECTION, INSTALL_DOC)


def test_readme_install_admits_seed_001_smoke_job(workdir: Path) -> None:  # noqa: F811
    with running(install_block(), workdir) as (returncode, out):
        assert returncode == 0, out[-3000:]
        cluster = DevCluster.load(workdir / "kc")
        # no APIService is left without a backend (the block removes the visibility API's, which nothing
        # serves while the Deployment is at 0), so a namespace is deleted, not stuck in Terminating
        services = json.loads(cluster.kubectl("get", "apiservices", "-o", "json").stdout)["items"]
        unavailable = [a["metadata"]["name"] for a in services if not any(
            c["type"] == "Available" and c["status"] == "True" for c in a["status"].get("conditions") or [])]
        assert unavailable == []
        assert "visibility.kueue.x-k8s.io" not in " ".join(a["metadata"]["name"] for a in services)
        cluster.kubectl("delete", "namespace", "team-a", "--timeout=120s")
    assert "deployment.apps/pykueue-controller scaled" in out
    assert out.count("job.batch/train-smoke condition met") == 2, out[-3000:]  # unsuspended, then Complete
    assert re.search(r"^workload\.kueue\.x-k8s\.io/job-train-smoke-\w+ condition met$", out, re.MULTILINE)
    assert re.search(r"^job-train-smoke-\w+\s+gpu-queue\s+team-a\s+True\s", out, re.MULTILINE), out[-3000:]
    assert re.search(r"^team-a\s+research\s+0\b", out, re.MULTILINE), out[-1000:]  # nothing pending
    assert "secrets" not in out  # `kubectl auth can-i --list` as the ServiceAccount
    assert "without a token: 401" in out
    assert re.search(r'^kueue_admitted_workloads_total\{cluster_queue="team-a",priority_class="",'
                     r'replica_role="(standalone|leader)"\} 1\.0$', out, re.MULTILINE), out[-3000:]
    log = (workdir / "kc" / "controller.log").read_text()
    assert "controller ready" in log
    assert not [line for line in log.splitlines() if ": 403 " in line or "Forbidden" in line]
    assert "stale APIService" not in log
