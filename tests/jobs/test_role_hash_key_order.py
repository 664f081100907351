"""The role hash of a hand-written pod spec is upstream's whatever order its keys were written in.

Go marshals a struct in its declared field order, leaves out what ``omitempty`` omits and drops keys it
does not know; the role hash is taken over those bytes. The expected hashes below were derived with Go:
tests/jobs/role_hash_go/main.go unmarshals each spec of ``SPECS`` (as JSON, one a line) into
k8s.io/api v0.34.4's ``corev1.PodSpec``, passes it through the API server's round trip (marshal,
unmarshal), and prints the SHA-256 of ``json.Marshal({"spec": SpecShape(spec)})``, with ``SpecShape``
and ``GenerateRoleHash`` as upstream v0.18's ``pkg/util/pod`` has them. pykueue must give the same
first 8 hex digits for each spec as written, and for the same spec with every object's keys in
another order (reversed, and shuffled with fixed seeds)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from pykueue.jobs.pod.shape import role_hash

NODE_AFFINITY = {  # node affinity (required and preferred), tolerations, an init container, ports
    "initContainers": [{"name": "init", "image": "busybox",
                        "resources": {"requests": {"memory": "64Mi", "cpu": "100m"}}}],
    "containers": [{"name": "main", "image": "x",
                    "ports": [{"containerPort": 8080, "protocol": "TCP", "name": "http"},
                              {"hostPort": 0, "containerPort": 9090}],
                    "resources": {"requests": {"cpu": "2", "memory": "1Gi"}, "limits": {"cpu": "4"}}}],
    "affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{
            "matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}],
            "matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]}]},
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 10, "preference": {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}}]}},
    "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"},
                    {"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
    "nodeSelector": {"b": "2", "a": "1"},
}
POD_AFFINITY = {  # pod affinity and anti-affinity: label and namespace selectors, (mis)match label keys
    "containers": [{"name": "c", "resources": {"requests": {"cpu": "500m"}}}],
    "affinity": {
        "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": {"matchLabels": {"app": "db", "tier": "x"},
                              "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod"]}]},
            "topologyKey": "kubernetes.io/hostname", "namespaces": ["a", "b"],
            "namespaceSelector": {"matchLabels": {"team": "t"}}, "matchLabelKeys": ["pod-template-hash"]}]},
        "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
            "weight": 50, "podAffinityTerm": {
                "labelSelector": {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]},
                "topologyKey": "topology.kubernetes.io/zone", "mismatchLabelKeys": ["x"]}}]}},
    "priority": 100, "runtimeClassName": "gvisor",
}
SPREAD_AND_CLAIMS = {  # topology spread constraints, resource claims, overhead
    "containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "example.com/gpu": "1"}}}],
    "topologySpreadConstraints": [
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"app": "x"}}, "minDomains": 2, "nodeAffinityPolicy": "Honor",
         "nodeTaintsPolicy": "Ignore", "matchLabelKeys": ["pod-template-hash"]},
        {"maxSkew": 2, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway"}],
    "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu-template"},
                       {"name": "shared", "resourceClaimName": "shared-claim"}],
    "overhead": {"memory": "100Mi", "cpu": "250m"},
}
EMPTIES = {  # what omitempty drops (empty maps, lists, strings) and keeps (a pointer to 0, an empty selector)
    "containers": [{"name": "c", "resources": {"requests": {}}}, {"name": "d", "ports": [], "resources": {}}],
    "affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {}, "matchExpressions": []}, "topologyKey": "k", "namespaces": []}]}},
    "tolerations": [{"key": "k", "operator": "Exists", "tolerationSeconds": 0, "value": ""}],
    "nodeSelector": {}, "overhead": {}, "resourceClaims": [], "topologySpreadConstraints": [],
}
EMPTY_AFFINITY = {  # an empty affinity object is written {}; a host port in an init container's port
    "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}], "affinity": {},
    "initContainers": [{"name": "i", "ports": [
        {"containerPort": 53, "protocol": "UDP", "hostIP": "0.0.0.0", "hostPort": 53}]}],
}

# Go's output for each (tests/jobs/role_hash_go, full SHA-256; the role hash is its first 8 digits).
# For NODE_AFFINITY Go hashed {"spec":{"affinity":{"nodeAffinity":{"requiredDuringScheduling...":
# {"nodeSelectorTerms":[{"matchExpressions":[{"key":"zone","operator":"In","values":["a","b"]}],...
# and for EMPTIES: "affinity":{"podAffinity":{"required...":[{"labelSelector":{},"topologyKey":"k"}]}},
# "containers":[{"ports":null,"resources":{"requests":null}},...],"tolerations":[{"key":"k",
# "operator":"Exists","tolerationSeconds":0}],"nodeSelector":null,"overhead":null,"resourceClaims":null
SPECS: dict[str, tuple[dict[str, Any], str]] = {
    "node affinity": (NODE_AFFINITY, "5d81f6d26c5414156c434fba469f1a544466f3beec03a4c9f82dc29c06ac3164"),
    "pod affinity": (POD_AFFINITY, "2a48ad573b0812856cf19d1105829ea469d44651db6432d1c66d007b32589000"),
    "spread and claims": (SPREAD_AND_CLAIMS, "2994316e81ec08239021b44673c4e574ae5db409debaf4f4448be9b36aff22fb"),
    "empties": (EMPTIES, "940564e80c67b819ef2dbacfac73e2d82a8c6648b28f44ae30690f4ddd23c732"),
    "empty affinity": (EMPTY_AFFINITY, "c25d5c0bccdd4c504436e9cc0d5d5b43e6448918913ad86753e7592b6db2f8b9"),
}


def _reordered(value: Any, order) -> Any:
    """``value`` with every object's keys in ``order(keys)`` (lists keep their order: it is meaningful)."""
    if isinstance(value, dict):
        return {k: _reordered(value[k], order) for k in order(list(value))}
    if isinstance(value, list):
        return [_reordered(v, order) for v in value]
    return value


def _shuffler(seed: int):
    rng = random.Random(seed)

    def order(keys: list[str]) -> list[str]:
        rng.shuffle(keys)
        return keys
    return order


ORDERS = {"as written": lambda keys: keys, "reversed": lambda keys: keys[::-1],
          **{f"shuffled {seed}": _shuffler(seed) for seed in (1, 2, 3)}}


@pytest.mark.parametrize("order", list(ORDERS))
@pytest.mark.parametrize("name", list(SPECS))
def test_role_hash_matches_go_whatever_the_key_order(name: str, order: str) -> None:
    spec, go_sha256 = SPECS[name]
    reordered = _reordered(spec, ORDERS[order])
    assert role_hash(reordered) == go_sha256[:8]


def test_a_reversed_affinity_really_changes_key_order() -> None:
    """The reordering reaches the nested structs the old code kept as given (a guard on the test)."""
    term = _reordered(NODE_AFFINITY, ORDERS["reversed"])["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
    assert list(term) == ["matchFields", "matchExpressions"]
    assert list(term["matchExpressions"][0]) == ["values", "operator", "key"]


def test_unknown_keys_are_dropped_as_go_drops_them() -> None:
    """A key Go's struct has no field for is not in Go's bytes: a stray key in a selector changes nothing."""
    spec, go_sha256 = SPECS["pod affinity"]
    stray = _reordered(spec, ORDERS["as written"])
    stray["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]["labelSelector"]["x"] = 1
    assert role_hash(stray) == go_sha256[:8]
