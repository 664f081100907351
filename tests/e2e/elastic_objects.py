"""What the elastic-job end-to-end tests read back: the elastic-job scheduling gate on pods, and the cpu a
ClusterQueue's status says it holds."""

from __future__ import annotations

from typing import Any

from tests.e2e.conftest import Kueue

GATE = "kueue.x-k8s.io/elastic-job"


def gated(pod: dict[str, Any]) -> bool:
    return any(g.get("name") == GATE for g in pod["spec"].get("schedulingGates") or [])


def reserved_cpu(kueue: Kueue, cq_name: str) -> str:
    """The cpu the ClusterQueue's status says it holds."""
    cq = kueue.get("clusterqueue", cq_name) or {}
    for flavor in (cq.get("status") or {}).get("flavorsReservation") or []:
        for res in flavor.get("resources") or []:
            if res.get("name") == "cpu":
                return str(res.get("total"))
    return ""
