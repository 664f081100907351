"""The release manifest's webhooks against the server's table (``pykueue.controller.webhooks.names``):
the same names, paths and rules, the Service the Deployment serves, the flags the controller is run
with, and RBAC for exactly the objects its certificate manager touches. No helm needed: this reads the
committed ``config/manifests.yaml`` (tests/packaging checks it is current)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from pykueue.controller.webhooks import names
from pykueue.manifests import render

Docs = dict[str, list[dict[str, Any]]]


@pytest.fixture(scope="module")
def manifests() -> Docs:
    kinds: Docs = {}
    for doc in yaml.safe_load_all(render.MANIFESTS.read_text()):
        if doc:
            kinds.setdefault(doc["kind"], []).append(doc)
    return kinds


def _hooks(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {w["name"]: w for w in config["webhooks"]}


@pytest.mark.parametrize("kind,table", [("MutatingWebhookConfiguration", names.mutating_for(("batch/job",))),
                                        ("ValidatingWebhookConfiguration",
                                         names.VALIDATING + names.validating_jobs_for(("batch/job",)))])
def test_configurations_are_the_servers_table(manifests: Docs, kind: str, table: tuple[names.Hook, ...]) -> None:
    (config,) = manifests[kind]
    mutating, validating = names.configuration_names(names.SERVICE)
    assert config["metadata"]["name"] == (mutating if kind.startswith("Mutating") else validating)
    hooks = _hooks(config)
    assert list(hooks) == [h.name for h in table]
    for hook in table:
        got = hooks[hook.name]
        assert got["clientConfig"] == {"service": {"name": names.SERVICE, "namespace": names.NAMESPACE,
                                                   "path": hook.path}}, hook.name
        assert got["rules"] == [{"apiGroups": [hook.group], "apiVersions": [hook.version],
                                 "operations": list(hook.operations), "resources": list(hook.resources)}]
        assert got["failurePolicy"] == "Fail" and got["sideEffects"] == "None"
        assert got["admissionReviewVersions"] == ["v1"]
    # kube-system and the controller's own namespace are never queued, nor their Jobs checked
    job_hook = "mjob.kb.io" if kind.startswith("Mutating") else "vjob.kb.io"
    assert hooks[job_hook]["namespaceSelector"]["matchExpressions"] == [
        {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system", names.NAMESPACE]}]


def test_every_kueue_kind_is_validated() -> None:
    from pykueue.manifests import crds

    assert {h.kind for h in names.VALIDATING} | set(names.SCHEMA_VALIDATED_KINDS) == {k.kind for k in crds.KINDS}


def test_service_reaches_the_deployments_webhook_port(manifests: Docs) -> None:
    (service,) = [s for s in manifests["Service"] if s["metadata"]["name"] == names.SERVICE]  # and the metrics'
    (deployment,) = manifests["Deployment"]
    pod = deployment["spec"]["template"]
    assert service["metadata"] == {**service["metadata"], "name": names.SERVICE, "namespace": names.NAMESPACE}
    assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    assert service["spec"]["ports"] == [{"name": "webhook", "port": 443, "protocol": "TCP",
                                         "targetPort": "webhook-server"}]
    (container,) = pod["spec"]["containers"]
    assert {"name": "webhook-server", "containerPort": names.PORT, "protocol": "TCP"} in container["ports"]
    assert {f"--webhook-port={names.PORT}", f"--webhook-service={names.SERVICE}", f"--webhook-secret={names.SECRET}",
            f"--webhook-namespace={names.NAMESPACE}"} <= set(container["args"])
    assert any(m["mountPath"] == "/tmp" for m in container["volumeMounts"])  # where the cert dir is written


def test_visibility_service_reaches_the_deployments_visibility_port(manifests: Docs) -> None:
    """As upstream's chart: a Service of its own (443 -> the container's `visibility` port, 8082), the
    APIServices pointing at it, the controller told the port; the webhook Service does not carry it."""
    visibility_service = names.visibility_service(names.SERVICE)
    assert visibility_service == "pykueue-visibility-server"
    (service,) = [s for s in manifests["Service"] if s["metadata"]["name"] == visibility_service]
    (deployment,) = manifests["Deployment"]
    pod = deployment["spec"]["template"]
    assert service["metadata"]["namespace"] == names.NAMESPACE
    assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    assert service["spec"]["ports"] == [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": "visibility"}]
    (container,) = pod["spec"]["containers"]
    assert {"name": "visibility", "containerPort": names.VISIBILITY_PORT, "protocol": "TCP"} in container["ports"]
    assert names.VISIBILITY_PORT == 8082 and f"--visibility-port={names.VISIBILITY_PORT}" in container["args"]
    assert {a["metadata"]["name"]: a["spec"]["service"] for a in manifests["APIService"]} == {
        f"{v}.visibility.kueue.x-k8s.io": {"name": visibility_service, "namespace": names.NAMESPACE, "port": 443}
        for v in ("v1beta2", "v1beta1")}


def test_certificate_rbac_names_its_objects(manifests: Docs) -> None:
    """The Secret exists (created empty) and is the only one the controller may read or update; the
    webhook configurations and the converted CRDs are the only ones whose CA bundle it may patch."""
    (secret,) = manifests["Secret"]
    assert secret["metadata"]["name"] == names.SECRET and "data" not in secret
    role = next(r for r in manifests["Role"] if any("secrets" in rule["resources"] for rule in r["rules"]))
    assert role["metadata"]["namespace"] == names.NAMESPACE
    assert role["rules"] == [{"apiGroups": [""], "resources": ["secrets"], "resourceNames": [names.SECRET],
                              "verbs": ["get", "update"]}]
    binding = next(b for b in manifests["RoleBinding"] if b["roleRef"]["name"] == role["metadata"]["name"])
    assert binding["subjects"][0]["name"] == manifests["ServiceAccount"][0]["metadata"]["name"]
    bound = {b["roleRef"]["name"] for b in manifests["ClusterRoleBinding"]}
    (cluster_role,) = [r for r in manifests["ClusterRole"] if r["metadata"]["name"] in bound]
    scoped = {(rule["apiGroups"][0], rule["resources"][0]): rule for rule in cluster_role["rules"]
              if rule.get("resourceNames")}
    mutating, validating = names.configuration_names(names.SERVICE)
    expected = {
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"): [mutating],
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations"): [validating],
        ("apiextensions.k8s.io", "customresourcedefinitions"): [names.crd_name(p) for p in names.CONVERTED_PLURALS],
        ("apiregistration.k8s.io", "apiservices"): ["v1beta2.visibility.kueue.x-k8s.io",
                                                    "v1beta1.visibility.kueue.x-k8s.io"],
    }
    assert {key: rule["resourceNames"] for key, rule in scoped.items()} == expected
    assert all(rule["verbs"] == ["get", "patch"] for rule in scoped.values())
    crds = {d["metadata"]["name"]: d for d in manifests["CustomResourceDefinition"]}
    converted = {name for name, d in crds.items() if d["spec"].get("conversion", {}).get("strategy") == "Webhook"}
    assert converted == set(expected[("apiextensions.k8s.io", "customresourcedefinitions")])
