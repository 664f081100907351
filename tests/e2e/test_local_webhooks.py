"""A controller run from a kubeconfig with ``--webhooks-on-stop fail-open``: it registers its webhooks
for its loopback URL, and when it stops they stay registered but ignore failures, so the cluster keeps
working unchecked until it comes back (the README's block covers the default, ``remove``:
tests/packaging/test_readme_run.py). A visibility APIService it finds with nothing serving it is named
in a warning with the command that removes it.

The module stops the session's controller and starts its own; afterwards it deletes the configurations,
puts the CRDs' conversion back on the Service and starts the session's controller again.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pykueue.controller.webhooks import local, names
from pykueue.devcluster.cluster import free_port
from tests.e2e.conftest import Kueue, forget_local_webhooks


def _job(name: str, namespace: str) -> str:
    return json.dumps({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}}})


@pytest.mark.e2e
def test_fail_open_on_stop_keeps_the_configurations_ignoring_failures_and_stale_apis_are_named(kueue: Kueue, ns: str, tmp_path: Path) -> None:
    cluster = kueue.cluster
    port = free_port()
    configs = list(zip(("mutatingwebhookconfiguration", "validatingwebhookconfiguration"),
                       names.configuration_names(names.SERVICE), strict=True))
    # a visibility APIService an install left behind, whose Service does not exist: warned about
    stale = {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
             "metadata": {"name": "v1beta1.visibility.kueue.x-k8s.io"},
             "spec": {"group": "visibility.kueue.x-k8s.io", "version": "v1beta1", "groupPriorityMinimum": 100,
                      "versionPriority": 90, "insecureSkipTLSVerify": True,
                      "service": {"name": "gone", "namespace": ns, "port": 443}}}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(stale))
    kueue.stop()
    mine = Kueue(cluster, tmp_path / "local-controller.log", args=(
        f"--webhook-port={port}", f"--webhook-cert-dir={tmp_path / 'certs'}", "--webhooks-on-stop=fail-open",
        f"--visibility-port={free_port()}"))
    try:
        mine.start(ready=b"webhooks registered")
        warned = [line for line in mine.log.read_text().splitlines() if "stale APIService" in line]
        assert len(warned) == 1 and "v1beta1.visibility.kueue.x-k8s.io" in warned[0], warned
        assert "kubectl delete apiservice v1beta1.visibility.kueue.x-k8s.io" in warned[0]
        for kind, name in configs:
            config = json.loads(cluster.kubectl("get", kind, name, "-o", "json").stdout)
            assert local.is_ours(config)
            assert {w["failurePolicy"] for w in config["webhooks"]} == {"Fail"}
            assert all(w["clientConfig"]["url"].startswith(f"https://127.0.0.1:{port}/") for w in config["webhooks"])
        crd = json.loads(cluster.kubectl("get", "crd", names.crd_name("clusterqueues"), "-o", "json").stdout)
        assert crd["spec"]["conversion"]["webhook"]["clientConfig"]["url"] == f"https://127.0.0.1:{port}/convert"
        created = cluster.kubectl("create", "-f", "-", "-o", "json", input=_job("while-running", ns))
        assert json.loads(created.stdout)["spec"]["suspend"] is True  # the webhook suspended it

        mine.stop()  # SIGTERM: the configurations stay, failing open
        assert "webhooks left failing open" in mine.log.read_text()
        for kind, name in configs:
            config = json.loads(cluster.kubectl("get", kind, name, "-o", "json").stdout)
            assert {w["failurePolicy"] for w in config["webhooks"]} == {"Ignore"}
        created = cluster.kubectl("create", "-f", "-", "-o", "json", input=_job("while-away", ns))
        assert json.loads(created.stdout)["spec"].get("suspend") is False  # unchecked, not refused
    finally:
        mine.stop()
        cluster.kubectl("delete", "apiservice", stale["metadata"]["name"], "--ignore-not-found", check=False)
        forget_local_webhooks(cluster)
        kueue.start()
