"""The role hash over upstream's fields and bytes (``utilpod.GenerateRoleHash``).

The expected hashes were computed by Go: a program that unmarshals each pod spec below into
``corev1.PodSpec`` (k8s.io/api v0.34) and hashes ``{"spec": SpecShape(spec)}`` with ``json.Marshal`` and
SHA-256 exactly as upstream's ``pkg/util/pod`` does; the JSON each hash is taken over is shown for the
first one."""

from __future__ import annotations

import copy

from pykueue.jobs import registry
from pykueue.jobs.pod import groups as pods
from pykueue.jobs.pod.shape import immutable_shape_errors, role_hash

PLAIN = {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}
# Go hashed: {"spec":{"affinity":null,"containers":[{"ports":null,"resources":{"requests":{"cpu":"1"}}}],
#   "initContainers":null,"nodeSelector":null,"overhead":null,"priority":null,"resourceClaims":null,
#   "runtimeClassName":null,"tolerations":null,"topologySpreadConstraints":null}}
PLAIN_HASH = "dc85db45"

FULL = {
    "containers": [{"name": "c", "resources": {"requests": {"memory": "1Gi", "cpu": "500m"}},
                    "ports": [{"containerPort": 80, "protocol": "TCP", "name": "http"}]}],
    "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "100m"}}}],
    "nodeSelector": {"zone": "a", "arch": "amd64"},
    "tolerations": [{"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}],
    "runtimeClassName": "rc", "priority": 0, "overhead": {"cpu": "250m"},
}
FULL_HASH = "8d88d9e0"

SPREAD = {
    "containers": [{"name": "c", "resources": {"requests": {"cpu": "1000m"}}}],
    "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}]}}},
    "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                                   "labelSelector": {"matchLabels": {"app": "x"}}}],
}
SPREAD_HASH = "6cfbe036"


def test_role_hash_is_upstreams() -> None:
    assert role_hash(PLAIN) == PLAIN_HASH
    assert role_hash(FULL) == FULL_HASH
    assert role_hash(SPREAD) == SPREAD_HASH  # "1000m" is the canonical "1"


def test_names_images_and_limits_are_not_part_of_a_role() -> None:
    other = {"containers": [{"name": "other-name", "image": "nginx",
                             "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "2"}}}]}
    assert role_hash(other) == PLAIN_HASH


def test_ports_tolerations_priority_and_claims_are() -> None:
    for change in ({"priority": 5}, {"tolerations": [{"key": "k", "operator": "Exists"}]},
                   {"resourceClaims": [{"name": "gpu", "resourceClaimName": "c"}]}):
        assert role_hash({**PLAIN, **change}) != PLAIN_HASH, change
    with_port = copy.deepcopy(PLAIN)
    with_port["containers"][0]["ports"] = [{"containerPort": 8080}]
    assert role_hash(with_port) != PLAIN_HASH


def test_the_pod_webhook_writes_upstreams_hash_on_a_group_member() -> None:
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "p", "namespace": "ns", "labels": {
               "kueue.x-k8s.io/queue-name": "lq", "kueue.x-k8s.io/pod-group-name": "g"},
               "annotations": {"kueue.x-k8s.io/pod-group-total-count": "2"}},
           "spec": copy.deepcopy(FULL)}
    ops = pods.pod_defaults(pod, registry.enabled(["pod"]), False)
    written = {op["path"]: op["value"] for op in ops if op["op"] == "add"}
    annotations = written.get("/metadata/annotations") or {}
    hashed = annotations.get("kueue.x-k8s.io/role-hash") or written.get(
        "/metadata/annotations/kueue.x-k8s.io~1role-hash")
    assert hashed == FULL_HASH


def test_a_pod_groups_pod_set_is_named_with_it() -> None:
    members = [{"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"p{i}", "namespace": "ns", "uid": f"u{i}",
                             "labels": {"kueue.x-k8s.io/queue-name": "lq", "kueue.x-k8s.io/pod-group-name": "g"},
                             "annotations": {"kueue.x-k8s.io/pod-group-total-count": "2"}},
                "spec": copy.deepcopy(PLAIN)} for i in range(2)]
    built = pods.PodGroup("ns", "g", members).build_workload()
    assert built is not None
    assert [(s["name"], s["count"]) for s in built["spec"]["podSets"]] == [(PLAIN_HASH, 2)]


def test_the_shape_rule_compares_a_request_list_whole() -> None:
    bigger = copy.deepcopy(PLAIN)
    bigger["containers"][0]["resources"]["requests"]["cpu"] = "2"
    bigger["nodeSelector"] = {"zone": "b"}
    errors = immutable_shape_errors(bigger, PLAIN, "spec.template.spec")
    assert [e.path for e in errors] == ["spec.template.spec.containers[0].resources.requests",
                                        "spec.template.spec.nodeSelector"]
    renamed = copy.deepcopy(PLAIN)
    renamed["containers"][0]["image"] = "nginx:2"
    assert immutable_shape_errors(renamed, PLAIN, "spec.template.spec") == []
