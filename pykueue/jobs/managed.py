"""Which jobs Kueue manages: upstream's ``managedJobsNamespaceSelector`` and ``manageJobsWithoutQueueName``.

The job reconciler and the mutating webhooks read these rules differently, as upstream v0.18 does:

- the reconciler (with ManagedJobsNamespaceSelectorAlwaysRespected, beta and on since v0.15) leaves alone
  every job of a namespace the selector does not match, queue label or not; a job without a queue label
  is reconciled only under ``manageJobsWithoutQueueName``;
- the job webhooks suspend a job naming a queue wherever it is (the webhook configuration already leaves
  kube-system and the controller's namespace out), and one without a queue label only under
  ``manageJobsWithoutQueueName`` in a selected namespace;
- the Pod webhook applies the selector to every Pod its Deployment or StatefulSet did not hand it.

A namespace's labels come from a cache; one not seen yet is read as carrying only its immutable
``kubernetes.io/metadata.name`` label, which is what upstream's default selector reads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pykueue.engine.model import DEFAULT_MANAGED_JOBS_NAMESPACES, LabelSelector, Requirement
from pykueue.engine.selectors import selector_matches
from pykueue.jobs.integration import Frameworks

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
SYSTEM_NAMESPACE = "kube-system"
CONTROLLER_NAMESPACE = "kueue-system"  # upstream's default Configuration.namespace

NamespaceLabels = Callable[[str], Mapping[str, str] | None]


DEFAULT_SELECTOR = DEFAULT_MANAGED_JOBS_NAMESPACES


def default_selector(controller_namespace: str = CONTROLLER_NAMESPACE) -> LabelSelector:
    """Upstream's default: every namespace but kube-system and the controller's own."""
    if controller_namespace == CONTROLLER_NAMESPACE:
        return DEFAULT_SELECTOR
    return LabelSelector(match_expressions=(
        Requirement(NAMESPACE_NAME_LABEL, "NotIn", (SYSTEM_NAMESPACE, controller_namespace)),))


def _unknown(_namespace: str) -> Mapping[str, str] | None:
    return None


@dataclass(frozen=True, slots=True)
class Scope:
    """The selector, and where a namespace's labels are read from."""

    selector: LabelSelector | None = DEFAULT_SELECTOR  # None: no namespace is left out
    namespaces: NamespaceLabels = _unknown

    def labels(self, namespace: str) -> dict[str, str]:
        return {**(self.namespaces(namespace) or {}), NAMESPACE_NAME_LABEL: namespace}

    def selected(self, namespace: str) -> bool:
        return self.selector is None or selector_matches(self.selector, self.labels(namespace))


DEFAULT_SCOPE = Scope()


def reconciled(queue_name: str | None, namespace: str, manage_without_queue_name: bool, scope: Scope) -> bool:
    """Upstream's ReconcileGenericJob gate for a top-level job: its namespace selected, and a queue
    label or ``manageJobsWithoutQueueName``."""
    if not scope.selected(namespace):
        return False
    return bool(queue_name) or manage_without_queue_name


def suspended_on_create(queue_name: str | None, namespace: str, manage_without_queue_name: bool,
                        scope: Scope) -> bool:
    """Upstream's WorkloadShouldBeSuspended for a job no managed ancestor owns."""
    if queue_name:
        return True
    return manage_without_queue_name and scope.selected(namespace)


def selector_problems(selector: LabelSelector | None, controller_namespace: str) -> list[str]:
    """Upstream's validateManagedJobsNamespaceSelector: kube-system and the controller's namespace
    must never be selected."""
    if selector is None:
        return []
    return [f'should not match the "{ns}" namespace' for ns in dict.fromkeys((SYSTEM_NAMESPACE, controller_namespace))
            if ns and selector_matches(selector, {NAMESPACE_NAME_LABEL: ns})]


def controller_owner(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for owner in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if isinstance(owner, dict) and owner.get("controller"):
            return owner
    return None


def managed_owner(obj: Mapping[str, Any], frameworks: Frameworks) -> Mapping[str, Any] | None:
    """The controller owner of ``obj`` when it is a job of an integration that is on (upstream's
    IsOwnerManagedByKueue): ``obj`` is then queued with it and never by itself. A Pod is never an
    owner here (its integration queues no children)."""
    owner = controller_owner(obj)
    if owner is None:
        return None
    group = str(owner.get("apiVersion") or "").rpartition("/")[0]
    integration = frameworks.owner_integration(group, str(owner.get("kind") or ""))
    return owner if integration is not None and integration.kind != "Pod" else None


def copied_labels(objects: Sequence[Mapping[str, Any]], keys: Sequence[str]) -> dict[str, str]:
    """``integrations.labelKeysToCopy``: the listed labels the job's objects carry, for its Workload.
    Raises ValueError when two objects (Pods of a group) give one key different values, as upstream."""
    out: dict[str, str] = {}
    for key in keys:
        values = {v for o in objects if (v := ((o.get("metadata") or {}).get("labels") or {}).get(key)) is not None}
        if len(values) > 1:
            raise ValueError(f"the label {key!r} has different values on the job's objects: {sorted(values)}")
        if values:
            out[key] = values.pop()
    return out
