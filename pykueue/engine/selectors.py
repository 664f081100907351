"""Label selectors, node affinity against a flavor's labels, and taints against tolerations.

These decide whether a namespace may use a ClusterQueue and whether a pod set may land on a flavor.
A flavor is judged as if it were a node carrying only its ``nodeLabels``: constraints on label keys the
flavor does not set are ignored, as upstream does, so other flavors' keys never rule a flavor out.
"""

from __future__ import annotations

from pykueue.engine.model import (
    LabelSelector,
    NodeSelectorTerm,
    PodSet,
    Requirement,
    ResourceFlavor,
    Taint,
    Toleration,
)


def requirement_matches(req: Requirement, labels: dict[str, str]) -> bool:
    op = req.operator
    present = req.key in labels
    if op == "In":
        return present and labels[req.key] in req.values
    if op == "NotIn":
        return not present or labels[req.key] not in req.values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt"):
        if not present or len(req.values) != 1:
            return False
        try:
            have, want = int(labels[req.key]), int(req.values[0])
        except ValueError:
            return False
        return have > want if op == "Gt" else have < want
    return False


def selector_matches(selector: LabelSelector | None, labels: dict[str, str]) -> bool:
    """metav1.LabelSelector semantics; ``None`` (an absent selector) matches nothing."""
    if selector is None:
        return False
    for key, value in selector.match_labels.items():
        if labels.get(key) != value:
            return False
    return all(requirement_matches(r, labels) for r in selector.match_expressions)


def _affinity_terms_for(terms: tuple[NodeSelectorTerm, ...], keys: set[str]) -> list[list[Requirement]] | None:
    """Keep only expressions on the flavor's keys; a term left empty matches any flavor (terms are ORed)."""
    kept: list[list[Requirement]] = []
    for term in terms:
        exprs = [e for e in term.match_expressions if e.key in keys]
        if not exprs:
            return None
        kept.append(exprs)
    return kept or None


def flavor_matches_affinity(pod_set: PodSet, flavor: ResourceFlavor) -> bool:
    if not pod_set.node_selector and pod_set.required_affinity is None:
        return True  # the common case, asked for every flavor of every nomination
    labels = flavor.node_labels
    keys = set(labels)
    for key, value in pod_set.node_selector.items():
        if key in keys and labels[key] != value:
            return False
    if pod_set.required_affinity is None:
        return True
    terms = _affinity_terms_for(pod_set.required_affinity, keys)
    if terms is None:
        return True
    return any(all(requirement_matches(r, labels) for r in term) for term in terms)


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if not toleration.key and toleration.operator != "Exists":
        return False
    if toleration.operator == "Exists":
        return True
    return toleration.value == taint.value


def untolerated_taint(pod_set: PodSet, flavor: ResourceFlavor) -> Taint | None:
    """The first NoSchedule/NoExecute taint of the flavor that neither the pod nor the flavor tolerates."""
    if not flavor.node_taints:
        return None
    tolerations = pod_set.tolerations + flavor.tolerations
    for taint in flavor.node_taints:
        if taint.effect not in ("NoSchedule", "NoExecute"):
            continue
        if not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None
