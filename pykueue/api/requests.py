"""Per-pod resource requests of a pod template, as Kueue charges them to quota.

Kueue first lets limits stand in for missing requests (``workload.UseLimitsAsMissingRequestsInPod``, per
container and for the pod-level resources), then takes the Kubernetes pod request
(``resourcehelpers.PodRequests``): the regular containers and the sidecars (init containers with
``restartPolicy: Always``) add up; each plain init container needs its own request plus the sidecars
started before it; the pod needs the larger of the two. Pod-level requests replace that aggregate only
upwards (``pkg/resources/requests.go`` keeps the maximum), and the RuntimeClass overhead is added last.
Sums are exact; each total is then turned into Kueue's canonical integer once.
"""

from __future__ import annotations

from fractions import Fraction

from pykueue.api.models.pod import Container, PodSpec, ResourceRequirements
from pykueue.quantity import to_canonical

Amounts = dict[str, Fraction]


def _effective(resources: ResourceRequirements | None) -> Amounts:
    """Requests, with limits standing in for the resources that only have a limit."""
    if resources is None:
        return {}
    out = dict(resources.requests or {})
    for name, value in (resources.limits or {}).items():
        out.setdefault(name, value)
    return out


def _add(into: Amounts, other: Amounts) -> None:
    for name, value in other.items():
        into[name] = into.get(name, Fraction(0)) + value


def _keep_max(into: Amounts, other: Amounts) -> None:
    for name, value in other.items():
        if name not in into or value > into[name]:
            into[name] = value


def _is_sidecar(container: Container) -> bool:
    return container.restart_policy == "Always"


def _pod_level_supported(name: str) -> bool:
    return name in ("cpu", "memory") or name.startswith("hugepages-")


def pod_amounts(spec: PodSpec) -> Amounts:
    """Exact per-pod requests (quantities, not yet canonical)."""
    total: Amounts = {}
    for container in spec.containers:
        _add(total, _effective(container.resources))
    sidecars: Amounts = {}
    init_peak: Amounts = {}
    for container in spec.init_containers or []:
        own = _effective(container.resources)
        if _is_sidecar(container):
            _add(total, own)
            _add(sidecars, own)
            _keep_max(init_peak, sidecars)
        else:
            needed = dict(own)
            _add(needed, sidecars)
            _keep_max(init_peak, needed)
    _keep_max(total, init_peak)
    pod_level = {name: v for name, v in _effective(spec.resources).items() if _pod_level_supported(name)}
    _keep_max(total, pod_level)
    _add(total, dict(spec.overhead or {}))
    return total


def pod_requests(spec: PodSpec) -> dict[str, int]:
    """Per-pod requests in canonical units (milli-cpu, bytes, counts), keys sorted for determinism."""
    amounts = pod_amounts(spec)
    return {name: to_canonical(name, amounts[name]) for name in sorted(amounts)}
