"""MultiKueueConfig and MultiKueueCluster in the generated CRDs and through the conversion webhook:
v1beta1's ``spec.kubeConfig`` is v1beta2's ``spec.clusterSource.kubeConfig`` (upstream's
multikueue_conversion.go), and a round trip loses nothing."""

from __future__ import annotations

import copy

from pykueue.api.kinds import KUEUE_V1BETA1, KUEUE_V1BETA2
from pykueue.controller.webhooks import conversion
from pykueue.manifests import crds

OLD = {"apiVersion": KUEUE_V1BETA1, "kind": "MultiKueueCluster", "metadata": {"name": "w1"},
       "spec": {"kubeConfig": {"location": "w1-secret", "locationType": "Secret"}},
       "status": {"conditions": [{"type": "Active", "status": "True"}]}}


def test_v1beta1_kubeconfig_moves_under_cluster_source_and_back() -> None:
    up = conversion.convert(copy.deepcopy(OLD), KUEUE_V1BETA2)
    assert up["spec"] == {"clusterSource": {"kubeConfig": {"location": "w1-secret", "locationType": "Secret"}}}
    assert up["status"] == OLD["status"]
    assert conversion.convert(up, KUEUE_V1BETA1) == OLD


def test_profile_reference_survives_v1beta1() -> None:
    new = {"apiVersion": KUEUE_V1BETA2, "kind": "MultiKueueCluster", "metadata": {"name": "p"},
           "spec": {"clusterSource": {"clusterProfileRef": {"name": "prof"}}}}
    down = conversion.convert(copy.deepcopy(new), KUEUE_V1BETA1)
    assert down["spec"]["clusterProfileRef"] == {"name": "prof"}
    assert conversion.convert(down, KUEUE_V1BETA2) == new


def test_crds_serve_both_kinds_as_upstream_declares() -> None:
    docs = {d["spec"]["names"]["kind"]: d for d in crds.crds()}
    cluster, config = docs["MultiKueueCluster"], docs["MultiKueueConfig"]
    assert cluster["spec"]["scope"] == config["spec"]["scope"] == "Cluster"
    assert cluster["spec"]["conversion"]["strategy"] == "Webhook"
    assert "conversion" not in config["spec"]  # the same shape in both versions
    v2 = cluster["spec"]["versions"][0]
    assert v2["name"] == "v1beta2" and v2["storage"] and v2["subresources"] == {"status": {}}
    source = v2["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["clusterSource"]
    assert source["properties"]["kubeConfig"]["properties"]["locationType"]["default"] == "Secret"
    assert "exactly one of" in source["x-kubernetes-validations"][0]["message"]
    clusters = config["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"][
        "clusters"]
    assert (clusters["minItems"], clusters["maxItems"], clusters["x-kubernetes-list-type"]) == (1, 20, "set")
