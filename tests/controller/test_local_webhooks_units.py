"""The webhook configurations a controller run from a kubeconfig registers for itself
(``pykueue.controller.webhooks.local``): the release manifest's, called at the local URL with the
controller's CA, and marked as its own; and when ``--local-webhooks`` is on."""

from __future__ import annotations

import argparse
import asyncio
import copy
from typing import Any

import yaml

from pykueue.controller.command import _local
from pykueue.controller.webhooks import local, names
from pykueue.kube.client import ApiError
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
    service_name = names.visibility_service(names.SERVICE)  # pykueue-visibility-server, as the chart's
    objects = local.visibility_objects(service_name, names.NAMESPACE, 8082, "Q0E=", ("v1beta2", "v1beta1"))
    (_, service), *apis = objects
    assert service["metadata"]["name"] == "pykueue-visibility-server"
    assert service["spec"] == {"type": "ExternalName", "externalName": "localhost",
                               "ports": [{"name": "https", "port": 8082, "protocol": "TCP"}]}
    assert [a["metadata"]["name"] for _, a in apis] == ["v1beta2.visibility.kueue.x-k8s.io",
                                                         "v1beta1.visibility.kueue.x-k8s.io"]
    # as the chart's (charts/pykueue/templates/visibility.yaml), but trusting the controller's CA and
    # calling its visibility port (not the webhook port) on this machine
    assert [a["spec"]["versionPriority"] for _, a in apis] == [200, 100]
    for _, api in apis:
        assert api["spec"]["service"] == {"name": "pykueue-visibility-server", "namespace": names.NAMESPACE,
                                          "port": 8082}
        assert api["spec"]["caBundle"] == "Q0E=" and local.is_ours(api)


def test_a_local_controller_registers_the_visibility_api_at_its_visibility_port() -> None:
    """``_register_local`` hands LocalVisibility the visibility server's bound port and Service."""
    from types import SimpleNamespace

    from pykueue.controller import command
    from pykueue.controller.webhooks.server import Options

    kube = FakeKube()
    kube.api = SimpleNamespace(configuration=SimpleNamespace(host="https://127.0.0.1:6443"))  # type: ignore[attr-defined]
    options = Options(port=9443, url="https://127.0.0.1:9443", visibility=True)
    webhooks = SimpleNamespace(options=options, certs=SimpleNamespace(bundle=SimpleNamespace(ca_bundle="Q0E=")))
    args = SimpleNamespace(kubeconfig="/k", local_webhooks="auto", webhook_url=None, webhooks_on_stop="remove")
    done = asyncio.run(command._register_local(kube, webhooks, SimpleNamespace(port=18082), args))
    assert done is not None
    api = kube.objects[("apiservices", "v1beta2.visibility.kueue.x-k8s.io", None)]
    assert api["spec"]["service"] == {"name": "pykueue-visibility-server", "namespace": names.NAMESPACE,
                                      "port": 18082}
    service = kube.objects[("services", "pykueue-visibility-server", names.NAMESPACE)]
    assert service["spec"]["ports"][0]["port"] == 18082
    asyncio.run(done.unregister())
    assert kube.objects == {}
    # without a visibility server (--visibility-port 0) only the webhook configurations
    done = asyncio.run(command._register_local(kube, webhooks, None, args))
    assert {k[0] for k in kube.objects} == {"mutatingwebhookconfigurations", "validatingwebhookconfigurations"}
    asyncio.run(done.unregister())


class FakeKube:
    """The few calls LocalWebhooks and LocalVisibility make, on a dict of objects."""

    def __init__(self, *objects: tuple[Any, dict[str, Any]]) -> None:
        self.objects: dict[tuple[str, str, str | None], dict[str, Any]] = {}
        self.calls: list[tuple[str, str]] = []
        for res, obj in objects:
            self.objects[self._key(res, obj["metadata"]["name"], obj["metadata"].get("namespace"))] = obj

    @staticmethod
    def _key(res: Any, name: str, namespace: str | None) -> tuple[str, str, str | None]:
        return res.plural, name, namespace

    async def get(self, res: Any, name: str, namespace: str | None = None) -> dict[str, Any]:
        self.calls.append(("get", name))
        obj = self.objects.get(self._key(res, name, namespace))
        if obj is None:
            raise ApiError(404, {"reason": "NotFound"}, "GET", name)
        return copy.deepcopy(obj)

    async def apply(self, res: Any, obj: dict[str, Any], *, manager: str) -> dict[str, Any]:
        self.calls.append(("apply", obj["metadata"]["name"]))
        self.objects[self._key(res, obj["metadata"]["name"], obj["metadata"].get("namespace"))] = copy.deepcopy(obj)
        return obj

    async def create(self, res: Any, obj: dict[str, Any]) -> dict[str, Any]:
        return await self.apply(res, obj, manager="create")

    async def delete(self, res: Any, name: str, namespace: str | None = None, propagation: str | None = None) -> None:
        self.calls.append(("delete", name))
        if self.objects.pop(self._key(res, name, namespace), None) is None:
            raise ApiError(404, {"reason": "NotFound"}, "DELETE", name)

    async def json_patch(self, res: Any, name: str, ops: list[dict[str, Any]]) -> None:
        self.calls.append(("patch", name))
        obj = self.objects[self._key(res, name, None)]
        for op in ops:
            _, _, index, field = op["path"].split("/")
            obj["webhooks"][int(index)][field] = op["value"]


URL = "https://127.0.0.1:9443"
MUTATING_NAME, VALIDATING_NAME = names.configuration_names(names.SERVICE)


def _registered(kube: FakeKube, on_stop: str) -> local.LocalWebhooks:
    hooks = local.LocalWebhooks(kube, names.SERVICE, names.NAMESPACE, URL, on_stop)  # type: ignore[arg-type]
    assert asyncio.run(hooks.register("Q0E=")) == [MUTATING_NAME, VALIDATING_NAME]
    return hooks


def _policies(kube: FakeKube) -> set[str]:
    return {w["failurePolicy"] for obj in kube.objects.values() for w in obj["webhooks"]}


def test_remove_deletes_what_it_registered() -> None:
    kube = FakeKube()
    hooks = _registered(kube, "remove")
    assert _policies(kube) == {"Fail"}
    asyncio.run(hooks.unregister())
    assert kube.objects == {}


def test_fail_open_keeps_them_ignoring_failures_and_keep_leaves_them_failing_closed() -> None:
    kube = FakeKube()
    asyncio.run(_registered(kube, "fail-open").unregister())
    assert len(kube.objects) == 2 and _policies(kube) == {"Ignore"}
    # the next start takes them over, failing closed again while it runs
    hooks = _registered(kube, "keep")
    assert _policies(kube) == {"Fail"}
    asyncio.run(hooks.unregister())
    assert len(kube.objects) == 2 and _policies(kube) == {"Fail"}


def test_an_installs_configurations_are_left_as_installed() -> None:
    installed = _installed()
    kube = FakeKube(*((local.MUTATING if kind.startswith("Mutating") else local.VALIDATING, obj)
                      for kind, obj in installed.items()))
    hooks = local.LocalWebhooks(kube, names.SERVICE, names.NAMESPACE, URL, "remove")  # type: ignore[arg-type]
    assert asyncio.run(hooks.register("Q0E=")) == []
    assert hooks.installed == [MUTATING_NAME, VALIDATING_NAME]
    asyncio.run(hooks.unregister())
    assert len(kube.objects) == 2 and not [c for c in kube.calls if c[0] in ("apply", "delete", "patch")]


def test_configurations_another_controller_took_over_are_left_to_it() -> None:
    kube = FakeKube()
    first = _registered(kube, "remove")
    asyncio.run(local.LocalWebhooks(kube, names.SERVICE, names.NAMESPACE, "https://127.0.0.1:9444",
                                    "remove").register("Q0E="))  # type: ignore[arg-type]
    asyncio.run(first.unregister())
    assert len(kube.objects) == 2  # the second controller's, still in use


def test_the_visibility_api_is_registered_beside_nothing_else_and_removed_with_the_namespace_it_made() -> None:
    kube = FakeKube()
    visibility = local.LocalVisibility(kube, names.SERVICE, names.NAMESPACE, 8082)  # type: ignore[arg-type]
    assert asyncio.run(visibility.register("Q0E=", ("v1beta2", "v1beta1")))
    assert {k[0] for k in kube.objects} == {"namespaces", "services", "apiservices"}
    asyncio.run(visibility.unregister())
    assert kube.objects == {}
    # beside an install's Service of that name: nothing registered, nothing removed
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": names.SERVICE, "namespace": names.NAMESPACE},
               "spec": {"ports": [{"port": 443}]}}
    kube = FakeKube((local.SERVICE_RES, service))
    visibility = local.LocalVisibility(kube, names.SERVICE, names.NAMESPACE, 8082)  # type: ignore[arg-type]
    assert not asyncio.run(visibility.register("Q0E=", ("v1beta2",)))
    asyncio.run(visibility.unregister())
    assert list(kube.objects.values()) == [service]
