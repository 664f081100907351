"""The webhook configurations a controller run from a kubeconfig registers for itself
(``pykueue.controller.webhooks.local``): the release manifest's, called at the local URL with the
controller's CA, and marked as its own; and when ``--local-webhooks`` is on."""

from __future__ import annotations

import argparse
from typing import Any

import yaml

from pykueue.controller.command import _local
from pykueue.controller.webhooks import local, names
from pykueue.manifests import render


def _installed() -> dict[str, dict[str, Any]]:
    return {d["kind"]: d for d in yaml.safe_load_all(render.MANIFESTS.read_text())
            if d and d["kind"].endswith("WebhookConfiguration")}


def test_local_configurations_are_the_manifests_but_called_at_the_url() -> None:
    installed = _installed()
    built = local.configurations(names.SERVICE, names.NAMESPACE, "https://127.0.0.1:9443", "Q0E=")
    assert [body["kind"] for _, body in built] == ["MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"]
    for _, body in built:
        manifest = installed[body["kind"]]
        assert body["metadata"]["name"] == manifest["metadata"]["name"]
        assert body["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "pykueue-controller"}
        assert local.is_ours(body) and not local.is_ours(manifest)
        assert len(body["webhooks"]) == len(manifest["webhooks"])
        for mine, theirs in zip(body["webhooks"], manifest["webhooks"], strict=True):
            path = theirs["clientConfig"]["service"]["path"]
            assert mine["clientConfig"] == {"url": f"https://127.0.0.1:9443{path}", "caBundle": "Q0E="}
            # everything else as installed: name, rules, failurePolicy Fail, namespaceSelector
            assert {k: v for k, v in mine.items() if k != "clientConfig"} == \
                {k: v for k, v in theirs.items() if k != "clientConfig"}


def test_fail_open_configurations_ignore_failures() -> None:
    built = local.configurations("x-webhook-service", "x", "https://127.0.0.1:1", "", failure_policy="Ignore")
    assert {w["failurePolicy"] for _, body in built for w in body["webhooks"]} == {"Ignore"}
    assert [body["metadata"]["name"] for _, body in built] == [
        "x-mutating-webhook-configuration", "x-validating-webhook-configuration"]


def test_local_mode_is_on_outside_the_cluster_where_the_api_server_can_call_back() -> None:
    def args(**kw: Any) -> argparse.Namespace:
        return argparse.Namespace(**{"kubeconfig": None, "local_webhooks": "auto", "webhook_url": None, **kw})

    dev = "https://127.0.0.1:41234"  # the dev cluster's API server, on this machine
    assert _local(args(kubeconfig="/tmp/kc/kubeconfig"), dev)  # run from a kubeconfig: outside the cluster
    assert _local(args(kubeconfig="/tmp/kc/kubeconfig"), "https://localhost:6443")
    assert not _local(args(), dev)  # in a pod (its service account)
    # a remote API server cannot call 127.0.0.1 back: only with a URL the user says it can reach
    assert not _local(args(kubeconfig="/k"), "https://api.example.com:6443")
    assert _local(args(kubeconfig="/k", webhook_url="https://10.0.0.5:9443"), "https://api.example.com:6443")
    assert _local(args(local_webhooks="on"), "https://api.example.com:6443")
    assert not _local(args(kubeconfig="/tmp/kc/kubeconfig", local_webhooks="off"), dev)


def test_visibility_objects_send_the_aggregator_to_this_machine() -> None:
    objects = local.visibility_objects(names.SERVICE, names.NAMESPACE, 9443, "Q0E=", ("v1beta2", "v1beta1"))
    (_, service), *apis = objects
    assert service["spec"] == {"type": "ExternalName", "externalName": "localhost",
                               "ports": [{"name": "https", "port": 9443, "protocol": "TCP"}]}
    assert [a["metadata"]["name"] for _, a in apis] == ["v1beta2.visibility.kueue.x-k8s.io",
                                                         "v1beta1.visibility.kueue.x-k8s.io"]
    # as the chart's (charts/pykueue/templates/visibility.yaml), but trusting the controller's CA
    assert [a["spec"]["versionPriority"] for _, a in apis] == [200, 100]
    for _, api in apis:
        assert api["spec"]["service"] == {"name": names.SERVICE, "namespace": names.NAMESPACE, "port": 9443}
        assert api["spec"]["caBundle"] == "Q0E=" and local.is_ours(api)
