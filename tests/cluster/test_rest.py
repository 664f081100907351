"""The tests' in-process reader (``pykueue.devcluster.rest``) reads what kubectl reads: the same object
for the same name, kind or short name, lists with each item's apiVersion and kind, a CRD installed
after its first discovery, and a failure where kubectl fails."""

from __future__ import annotations

import json
import uuid

import pytest
import yaml

from pykueue.devcluster.cluster import DevCluster
from pykueue.devcluster.rest import RestError

pytestmark = pytest.mark.cluster


def _kubectl_json(cluster: DevCluster, *args: str) -> dict:
    return json.loads(cluster.kubectl("get", *args, "-o", "json").stdout)


def test_an_object_read_by_each_of_its_names_is_what_kubectl_shows(control_plane: DevCluster) -> None:
    name = f"rest-{uuid.uuid4().hex[:8]}"
    control_plane.kubectl("create", "namespace", name)
    control_plane.kubectl("create", "configmap", "one", "-n", name, "--from-literal=a=b")
    expected = _kubectl_json(control_plane, "configmap", "one", "-n", name)
    rest = control_plane.rest
    for kind in ("configmap", "configmaps", "cm", "ConfigMap"):
        assert rest.get(kind, "one", name) == expected, kind
    assert rest.get("ns", name) == _kubectl_json(control_plane, "namespace", name)
    assert rest.get("configmap", "none", name) is None
    assert rest.get("configmap", "one", "default") is None  # namespaced: not in another namespace


def test_a_list_carries_each_items_kind_and_filters_by_label(control_plane: DevCluster) -> None:
    name = f"rest-{uuid.uuid4().hex[:8]}"
    control_plane.kubectl("create", "namespace", name)
    for cm, tier in (("a", "front"), ("b", "back"), ("c", "front")):
        control_plane.kubectl("apply", "-f", "-", input=yaml.safe_dump({
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": cm, "namespace": name, "labels": {"tier": tier}}}))
    listed = control_plane.rest.list("configmaps", name, "tier=front")
    assert [(i["apiVersion"], i["kind"], i["metadata"]["name"]) for i in listed] == [("v1", "ConfigMap", "a"),
                                                                                    ("v1", "ConfigMap", "c")]
    kubectl = _kubectl_json(control_plane, "configmaps", "-n", name, "-l", "tier=front")["items"]
    assert listed == kubectl
    groups = {i["metadata"]["name"] for i in control_plane.rest.list("clusterroles.rbac.authorization.k8s.io")}
    assert "cluster-admin" in groups  # resource.group form, cluster-scoped


def test_a_crd_installed_after_discovery_is_found(control_plane: DevCluster) -> None:
    control_plane.rest.resource("pods")  # discovery read before the CRD exists
    group = f"g{uuid.uuid4().hex[:8]}.pykueue.dev"
    control_plane.kubectl("apply", "-f", "-", input=yaml.safe_dump({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"gadgets.{group}"},
        "spec": {"group": group, "scope": "Cluster",
                 "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "shortNames": ["gd"]},
                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                     "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}))
    control_plane.wait_for("Established", f"crd/gadgets.{group}", timeout=30)
    control_plane.kubectl("apply", "-f", "-", input=f"apiVersion: {group}/v1\nkind: Gadget\nmetadata: {{name: g}}\n")
    got = control_plane.rest.get("gd", "g")
    assert got is not None and got["kind"] == "Gadget"
    for name in (f"gadgets.v1.{group}", f"gadget.{group}", f"gd.{group}", f"Gadget.v1.{group}"):
        assert control_plane.rest.get(name, "g") == got, name


def test_an_unknown_resource_is_an_error_for_a_list_and_none_for_a_get(control_plane: DevCluster) -> None:
    assert control_plane.rest.get("nosuchthings", "x") is None
    with pytest.raises(RestError, match='doesn\'t have a resource type "nosuchthings"'):
        control_plane.rest.list("nosuchthings")
