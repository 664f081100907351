"""The controller's webhooks on the tier 2 cluster as a user meets them through kubectl: managed Jobs
created suspended, bad Kueue objects refused with `pykueue validate`'s message, v1beta1 converted both ways, and upstream's failurePolicy while the controller is down.

The module stops the session's controller, installs the release manifest's webhook configurations and
runs `pykueue controller --webhook-url https://127.0.0.1:PORT` (the controller runs outside the cluster,
so it points the configurations and the CRDs' conversion at itself); afterwards it removes them, puts
the CRDs' conversion back on the Service and starts the session's controller again.
"""

from __future__ import annotations

import base64
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pykueue.controller.serving import certs
from pykueue.controller.webhooks import names
from pykueue.devcluster.cluster import free_port
from pykueue.manifests import crds, render
from tests.e2e.conftest import Kueue, eventually, is_true
from tests.objects import batch_job
from tests.validate_cli import validate_lines

NAMES = certs.service_names(names.SERVICE, names.NAMESPACE)


# --- on the cluster -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def webhooks(kueue: Kueue, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kueue]:
    """The session's controller, restarted with its webhooks on a free loopback port."""
    cluster = kueue.cluster
    configs = [d for d in yaml.safe_load_all(render.MANIFESTS.read_text())
               if d and d["kind"] in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")]
    port = free_port()
    saved = kueue.args
    kueue.stop()
    cluster.kubectl("apply", "--server-side", "-f", "-", input=yaml.safe_dump_all(configs))
    kueue.args = (*saved, f"--webhook-port={port}", "--webhook-host=127.0.0.1",
                  f"--webhook-url=https://127.0.0.1:{port}",
                  f"--webhook-cert-dir={tmp_path_factory.mktemp('webhook-certs')}")
    try:
        kueue.start()
        yield kueue
    finally:
        kueue.stop()
        for config in configs:
            cluster.kubectl("delete", config["kind"].lower(), config["metadata"]["name"], "--ignore-not-found",
                            check=False)
        service = json.dumps([{"op": "replace", "path": "/spec/conversion/webhook/clientConfig",
                               "value": crds.conversion()["webhook"]["clientConfig"]}])
        for plural in names.CONVERTED_PLURALS:
            cluster.kubectl("patch", "crd", names.crd_name(plural), "--type=json", "-p", service, check=False)
        kueue.args = saved
        kueue.start()


def _create(kueue: Kueue, manifest: dict[str, Any], *args: str) -> subprocess.CompletedProcess[str]:
    return kueue.cluster.kubectl("create", *args, "-f", "-", input=json.dumps(manifest), check=False)


def _namespace_job(name: str, namespace: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    job = batch_job(labels)
    job["metadata"] = {"name": name, "namespace": namespace, "labels": labels or {}}
    job["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    return job


def _flag(kueue: Kueue, name: str) -> str:
    """The value the controller runs with (the last of the flag, as argparse reads them)."""
    return [a.split("=", 1)[1] for a in kueue.args if a.startswith(f"{name}=")][-1]


@pytest.mark.e2e
def test_bundles_are_patched_and_point_at_the_controller(webhooks: Kueue) -> None:
    cluster = webhooks.cluster
    port = _flag(webhooks, "--webhook-port")
    ca = Path(_flag(webhooks, "--webhook-cert-dir")) / "ca.crt"
    bundle = base64.b64encode(ca.read_bytes()).decode()
    mutating, validating = names.configuration_names(names.SERVICE)
    for kind, name in (("mutatingwebhookconfiguration", mutating), ("validatingwebhookconfiguration", validating)):
        config = json.loads(cluster.kubectl("get", kind, name, "-o", "json").stdout)
        for hook in config["webhooks"]:
            assert hook["clientConfig"]["caBundle"] == bundle
            assert hook["clientConfig"]["url"].startswith(f"https://127.0.0.1:{port}/")
    for plural in names.CONVERTED_PLURALS:
        crd = json.loads(cluster.kubectl("get", "crd", names.crd_name(plural), "-o", "json").stdout)
        assert crd["spec"]["conversion"]["webhook"]["clientConfig"] == {
            "url": f"https://127.0.0.1:{port}/convert", "caBundle": bundle}


@pytest.mark.e2e
def test_managed_job_created_unsuspended_comes_back_suspended(webhooks: Kueue, ns: str) -> None:
    created = _create(webhooks, _namespace_job("queued", ns, {"kueue.x-k8s.io/queue-name": "lq"}), "-o", "json")
    assert created.returncode == 0, created.stderr
    assert json.loads(created.stdout)["spec"]["suspend"] is True  # as it was stored, before any reconcile
    plain = _create(webhooks, _namespace_job("plain", ns), "-o", "json")  # not Kueue's: left alone
    assert plain.returncode == 0, plain.stderr
    assert json.loads(plain.stdout)["spec"]["suspend"] is False


@pytest.mark.e2e
def test_a_job_upstreams_webhook_refuses_is_refused_at_create_and_on_update(webhooks: Kueue, ns: str) -> None:
    """Upstream's vjob: a bad job-min-parallelism is refused at create (not created, then left
    suspended); a running Job's queue label is immutable; a suspended one's may change."""
    bad = _namespace_job("bad-min", ns, {"kueue.x-k8s.io/queue-name": "lq"})
    bad["metadata"]["annotations"] = {"kueue.x-k8s.io/job-min-parallelism": "abc"}
    refused = _create(webhooks, bad)
    assert refused.returncode != 0
    assert ('metadata.annotations[kueue.x-k8s.io/job-min-parallelism]: Invalid value: "abc": strconv.Atoi: '
            'parsing "abc": invalid syntax') in refused.stderr, refused.stderr
    assert webhooks.get("job", "bad-min", ns) is None
    plain = _create(webhooks, _namespace_job("runs", ns))  # not Kueue's: runs at once
    assert plain.returncode == 0, plain.stderr
    moved = webhooks.cluster.kubectl("label", "job", "runs", "-n", ns, "kueue.x-k8s.io/queue-name=lq", check=False)
    assert moved.returncode != 0 and "field is immutable" in moved.stderr, moved.stderr
    queued = _create(webhooks, _namespace_job("waits", ns, {"kueue.x-k8s.io/queue-name": "lq"}))
    assert queued.returncode == 0, queued.stderr
    relabelled = webhooks.cluster.kubectl("label", "job", "waits", "-n", ns, "kueue.x-k8s.io/queue-name=other",
                                          "--overwrite", check=False)
    assert relabelled.returncode == 0, relabelled.stderr


@pytest.mark.e2e
def test_a_job_without_queue_is_queued_in_the_namespaces_default_local_queue(webhooks: Kueue, ns: str) -> None:
    """LocalQueueDefaulting on the cluster: once `default` exists, a Job created without a queue label
    is labelled, suspended, queued there and admitted; dropping the label afterwards is refused."""
    from tests.e2e.objects import PLAIN_FLAVOR, cluster_queue, local_queue

    webhooks.apply(PLAIN_FLAVOR)
    webhooks.apply(cluster_queue(ns, "2"))
    webhooks.apply(local_queue(ns, ns, "default"))
    attempts = iter(range(1000))

    def defaulted() -> dict[str, Any] | None:
        # the webhook learns of the LocalQueue through its own watch: a Job made before that is not labelled
        name = f"plain-{next(attempts)}"
        created = _create(webhooks, _namespace_job(name, ns), "-o", "json")
        assert created.returncode == 0, created.stderr
        job = json.loads(created.stdout)
        if job["metadata"].get("labels", {}).get("kueue.x-k8s.io/queue-name") == "default":
            return job
        webhooks.cluster.kubectl("delete", "job", name, "-n", ns, "--wait=false")
        return None
    job = eventually(defaulted, 30, interval=1.0, what="a Job labelled with the default LocalQueue")
    assert job["spec"]["suspend"] is True
    name = job["metadata"]["name"]
    eventually(lambda: is_true(webhooks.workload_of(name, ns), "Admitted"), what="its workload admitted in default")
    assert webhooks.workload_of(name, ns)["spec"]["queueName"] == "default"
    dropped = webhooks.cluster.kubectl("label", "job", name, "-n", ns, "kueue.x-k8s.io/queue-name-", check=False)
    assert dropped.returncode != 0 and "queue-name must not be empty in namespace with default queue" in dropped.stderr


CQ = "kueue.x-k8s.io/v1beta2"


def _cluster_queue(name: str, groups: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {"apiVersion": CQ, "kind": "ClusterQueue", "metadata": {"name": name},
            "spec": {"namespaceSelector": {}, "resourceGroups": groups, **spec}}


def _group(resource: str, flavor: str, quota: str) -> dict[str, Any]:
    return {"coveredResources": [resource], "flavors": [{"name": flavor, "resources": [
        {"name": resource, "nominalQuota": quota}]}]}


@pytest.mark.e2e
@pytest.mark.parametrize("case", ["negative quota", "flavor listed twice"])
def test_bad_cluster_queue_is_refused_with_validates_message(webhooks: Kueue, tmp_path: Path, case: str) -> None:
    name = "wh-" + case.replace(" ", "-")
    if case == "negative quota":
        bad = _cluster_queue(name, [_group("cpu", "default", "-2")])
    else:
        bad = _cluster_queue(name, [_group("cpu", "default", "1"), _group("memory", "default", "1Gi")])
    (line,) = validate_lines(tmp_path, bad)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(bad))
    refused = webhooks.cluster.kubectl("apply", "-f", str(path), check=False)
    assert refused.returncode != 0
    assert f'admission webhook "vclusterqueue.kb.io" denied the request: {line}' in refused.stderr, refused.stderr
    assert webhooks.get("clusterqueue", name) is None


@pytest.mark.e2e
def test_good_objects_are_accepted_and_admission_runs_through_the_webhooks(webhooks: Kueue, ns: str) -> None:
    """Every Kueue kind passes its validating webhook, and the controller's own writes (Workload
    creation and status, on which the Workload webhook runs too) pass on the way to admission."""
    webhooks.apply(f"""
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {{name: {ns}}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {{name: {ns}}}
value: 100
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {{name: {ns}}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {{name: {ns}}}
spec:
  cohortName: {ns}
  namespaceSelector: {{}}
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{{name: {ns}, resources: [{{name: cpu, nominalQuota: "4", borrowingLimit: "1"}}]}}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {{name: lq, namespace: {ns}}}
spec: {{clusterQueue: {ns}}}
""")
    job = _namespace_job("runs", ns, {"kueue.x-k8s.io/queue-name": "lq",
                                      "kueue.x-k8s.io/priority-class": ns})
    job["spec"]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
    assert _create(webhooks, job).returncode == 0
    wl = eventually(lambda: (w := webhooks.workload_of("runs", ns)) and is_true(w, "Admitted") and w, 60,
                    what="the Job's Workload admitted")
    assert wl["spec"]["priorityClassRef"]["name"] == ns and wl["spec"]["priority"] == 100
    eventually(lambda: (j := webhooks.get("job", "runs", ns)) and j["spec"]["suspend"] is False, 60,
               what="the Job started")
    for kind in ("clusterqueue", "cohort", "resourceflavor", "workloadpriorityclass"):
        webhooks.cluster.kubectl("delete", kind, ns, "--wait=false", check=False)


@pytest.mark.e2e
def test_kinds_the_webhooks_do_not_cover_are_unaffected(webhooks: Kueue, ns: str) -> None:
    cluster = webhooks.cluster
    cluster.kubectl("create", "configmap", "settings", "-n", ns, "--from-literal=a=b")
    system = _create(webhooks, _namespace_job("system-job", "kube-system", {"kueue.x-k8s.io/queue-name": "lq"}),
                     "-o", "json")  # the mutating webhook's namespaceSelector leaves kube-system out
    assert system.returncode == 0, system.stderr
    assert json.loads(system.stdout)["spec"]["suspend"] is False
    cluster.kubectl("delete", "job", "system-job", "-n", "kube-system", "--wait=false")


@pytest.mark.e2e
def test_v1beta1_is_served_and_converted_both_ways(webhooks: Kueue, tmp_path: Path) -> None:
    cluster = webhooks.cluster
    v1beta1 = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": "wh-v1beta1"},
               "spec": {"cohort": "research", "namespaceSelector": {},
                        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{"name": "default", "resources": [
                            {"name": "cpu", "nominalQuota": "2", "borrowingLimit": "1"}]}]}]}}
    v1beta2 = {"apiVersion": CQ, "kind": "ClusterQueue", "metadata": {"name": "wh-v1beta2"},
               "spec": {"cohortName": "research", "namespaceSelector": {}}}
    try:
        webhooks.apply([v1beta1, v1beta2])
        as_v1beta2 = json.loads(cluster.kubectl("get", "clusterqueues.v1beta2.kueue.x-k8s.io", "wh-v1beta1",
                                                "-o", "json").stdout)
        assert as_v1beta2["apiVersion"] == CQ
        assert as_v1beta2["spec"]["cohortName"] == "research" and "cohort" not in as_v1beta2["spec"]
        as_v1beta1 = json.loads(cluster.kubectl("get", "clusterqueues.v1beta1.kueue.x-k8s.io", "wh-v1beta2",
                                                "-o", "json").stdout)
        assert as_v1beta1["apiVersion"] == "kueue.x-k8s.io/v1beta1"
        assert as_v1beta1["spec"]["cohort"] == "research" and "cohortName" not in as_v1beta1["spec"]
        table = cluster.kubectl("get", "clusterqueues.v1beta1.kueue.x-k8s.io", "wh-v1beta2").stdout
        assert table.split("\n")[1].split()[:2] == ["wh-v1beta2", "research"]  # v1beta1's own Cohort column
        # v1beta1's CEL rules, in v1beta1's words; then its objects go through the v1beta2 webhooks too
        no_cohort = {**v1beta1, "metadata": {"name": "wh-v1beta1-bad"},
                     "spec": {k: v for k, v in v1beta1["spec"].items() if k != "cohort"}}
        refused = _create(webhooks, no_cohort)
        assert 'spec: Invalid value: "object": borrowingLimit must be nil when cohort is empty' in refused.stderr
        negative = json.loads(json.dumps(v1beta1).replace('"nominalQuota": "2"', '"nominalQuota": "-2"'))
        negative["metadata"]["name"] = "wh-v1beta1-negative"
        refused = _create(webhooks, negative)
        assert ('denied the request: spec.resourceGroups[0].flavors[0].resources[0].nominalQuota: '
                'Invalid value: "-2": must be greater than or equal to 0') in refused.stderr
    finally:
        for name in ("wh-v1beta1", "wh-v1beta2"):
            cluster.kubectl("delete", "clusterqueue", name, "--ignore-not-found", check=False)


@pytest.mark.e2e
def test_with_the_controller_down_the_webhooks_fail_closed(webhooks: Kueue, ns: str) -> None:
    """failurePolicy: Fail, as upstream: nothing Kueue checks is created unchecked, nothing else stops.
    (Last in the module: the controller is started again by the fixture's teardown.)"""
    webhooks.stop()
    cq = _cluster_queue("wh-unchecked", [_group("cpu", "default", "1")])
    refused = _create(webhooks, cq)
    assert refused.returncode != 0
    assert 'failed calling webhook "vclusterqueue.kb.io"' in refused.stderr, refused.stderr
    job = _create(webhooks, _namespace_job("unsuspended", ns, {"kueue.x-k8s.io/queue-name": "lq"}))
    assert 'failed calling webhook "mjob.kb.io"' in job.stderr, job.stderr
    # upstream's mjob has no objectSelector (manageJobsWithoutQueueName may make any Job Kueue's): every Job waits
    plain = _create(webhooks, _namespace_job("plain", ns))
    assert 'failed calling webhook "mjob.kb.io"' in plain.stderr, plain.stderr
    assert webhooks.cluster.kubectl("create", "configmap", "still-fine", "-n", ns, check=False).returncode == 0


