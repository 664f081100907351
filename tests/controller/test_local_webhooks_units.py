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


def test_local_mode_is_on_outside_the_cluster_by_default() -> None:
    def args(**kw: Any) -> argparse.Namespace:
        return argparse.Namespace(**{"kubeconfig": None, "local_webhooks": "auto", **kw})

    assert _local(args(kubeconfig="/tmp/kc/kubeconfig"))  # run from a kubeconfig: outside the cluster
    assert not _local(args())  # in a pod (its service account)
    assert _local(args(local_webhooks="on"))
    assert not _local(args(kubeconfig="/tmp/kc/kubeconfig", local_webhooks="off"))
