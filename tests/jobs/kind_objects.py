"""What the tests of the custom kinds (JobSet, the Ray kinds, the Kubeflow kinds) share: the flavors a job
is admitted to, an admitted Workload, and the admission webhook's request and patch."""

from __future__ import annotations

import base64
import json
from typing import Any

FLAVORS = {
    "gpu": {"metadata": {"name": "gpu"}, "spec": {
        "nodeLabels": {"gpu": "h100"},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}},
    "cpu": {"metadata": {"name": "cpu"}, "spec": {"nodeLabels": {"pool": "cpu"}}},
}
TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def admitted(name: str, flavors: list[tuple[str, str, int]]) -> dict[str, Any]:
    """An admitted Workload: each (pod set, cpu flavor, count) assigned in ClusterQueue cq."""
    return {"metadata": {"name": name, "namespace": "ns"},
            "status": {"conditions": [{"type": "QuotaReserved", "status": "True"},
                                      {"type": "Admitted", "status": "True"}],
                       "admission": {"clusterQueue": "cq", "podSetAssignments": [
                           {"name": n, "count": c, "flavors": {"cpu": f}} for n, f, c in flavors]}}}


def request(obj: dict[str, Any], operation: str = "CREATE", old: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"uid": "r1", "operation": operation, "namespace": "ns", "object": obj, "oldObject": old}


def patch(response: dict[str, Any]) -> list[dict[str, Any]]:
    return json.loads(base64.b64decode(response["patch"])) if response.get("patch") else []
