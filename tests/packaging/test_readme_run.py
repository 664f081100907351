"""The README's short "Run on a cluster" block, run as it stands (issue 24): a newcomer's controller
started from a kubeconfig registers its webhooks for its loopback URL, so upstream's v1beta1
ClusterQueue is converted and a queue-labelled Job created without `suspend: true` is created
suspended, then admitted. When the controller stops (SIGTERM), its webhook configurations are removed
(the default `--webhooks-on-stop remove`), and a Job created then is left alone. The visibility API is
registered while the controller serves it (on its own port, 8082), and removed with it.

Only `/tmp/kc` is changed, to a directory of this test.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pykueue.controller.visibility.api import API_SERVICES, GROUP
from pykueue.controller.webhooks import names
from pykueue.devcluster.cluster import DevCluster
from tests.e2e.conftest import eventually
from tests.packaging.readme_blocks import running, sh_block, workdir  # noqa: F401 - a fixture

pytestmark = pytest.mark.e2e


def test_readme_run_block_webhooks_registered_locally_and_removed_on_stop(workdir: Path) -> None:  # noqa: F811
    kc = workdir / "kc"
    with running(sh_block("Run on a cluster"), workdir) as (returncode, out):
        assert returncode == 0, out[-3000:]
        cluster = DevCluster.load(kc)
        # upstream's v1beta1 ClusterQueue was converted both ways: stored as v1beta2, printed as v1beta1
        assert "apiVersion: kueue.x-k8s.io/v1beta1" in out and "nominalQuota: 36Gi" in out, out[-3000:]
        # the Job was created without suspend and came back suspended: the Job controller records that
        # it was suspended, then resumed when Kueue admitted it
        job = json.loads(cluster.kubectl("get", "job", "sample-job", "-n", "default", "-o", "json").stdout)
        suspended = [c for c in job["status"].get("conditions") or [] if c["type"] == "Suspended"]
        assert suspended and suspended[0]["status"] == "False" and suspended[0]["reason"] == "JobResumed", job
        assert re.search(r"^default\s+job-sample-job-\w+\s+user-queue\s+cluster-queue\s+True", out, re.MULTILINE), \
            out[-2000:]
        mutating, validating = names.configuration_names(names.SERVICE)
        config = json.loads(cluster.kubectl("get", "mutatingwebhookconfiguration", mutating, "-o", "json").stdout)
        assert config["webhooks"][0]["clientConfig"]["url"] == "https://127.0.0.1:9443/mutate-batch-v1-job"
        # the visibility API is registered while served: the aggregator reaches the controller
        cluster.kubectl("wait", "--for=condition=Available", *(f"apiservice/{name}" for name in API_SERVICES),
                        "--timeout=60s")
        # at the controller's visibility port (8082, its own), not the webhook port, as the README says
        api = json.loads(cluster.kubectl("get", "apiservice", API_SERVICES[0], "-o", "json").stdout)
        assert api["spec"]["service"] == {"name": "pykueue-visibility-server", "namespace": names.NAMESPACE,
                                          "port": 8082}
        summary = json.loads(cluster.kubectl("get", "--raw", f"/apis/{GROUP}/v1beta2/clusterqueues/cluster-queue/"
                                             "pendingworkloads").stdout)
        assert summary["kind"] == "PendingWorkloadsSummary" and summary["items"] == []  # sample-job is admitted

    def gone() -> bool:
        return all(cluster.kubectl("get", kind, name, check=False).returncode != 0 for kind, name in (
            ("mutatingwebhookconfiguration", mutating), ("validatingwebhookconfiguration", validating),
            *(("apiservice", name) for name in API_SERVICES), ("namespace", names.NAMESPACE)))

    # the configurations, the APIServices, and the namespace the controller made for their Service
    eventually(gone, 90, what="webhook configurations and the visibility API removed on stop")
    log = (kc / "controller.log").read_text()
    assert "webhooks unregistered" in log and "visibility API unregistered" in log
    assert cluster.kubectl("api-resources").returncode == 0  # discovery is whole: nothing stale left
    # the cluster behaves as without pykueue: a queue-labelled Job is created as written, not refused
    job = {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": "after-stop", "namespace": "default",
                        "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}},
           "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}}}
    created = cluster.kubectl("create", "-f", "-", "-o", "json", input=json.dumps(job))
    assert json.loads(created.stdout)["spec"].get("suspend") is False
