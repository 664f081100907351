"""Flavor matching: only the flavor's own label keys count; required affinity terms are ORed."""

from __future__ import annotations

from pykueue.engine import model as m
from pykueue.engine.selectors import flavor_matches_affinity, selector_matches, untolerated_taint

T4 = m.ResourceFlavor("t4", node_labels={"gpu": "t4", "zone": "a"})
A100 = m.ResourceFlavor("a100", node_labels={"gpu": "a100"})


def pod(**kw) -> m.PodSet:
    return m.PodSet("main", 1, {"cpu": 1000}, **kw)


def req(key: str, op: str, *values: str) -> m.Requirement:
    return m.Requirement(key, op, tuple(values))


def test_node_selector_on_a_key_the_flavor_lacks_is_ignored() -> None:
    p = pod(node_selector={"zone": "b"})
    assert not flavor_matches_affinity(p, T4)  # T4 sets zone=a
    assert flavor_matches_affinity(p, A100)  # A100 has no zone label: the constraint is not its concern


def test_required_affinity_terms_are_ored_and_filtered_to_flavor_keys() -> None:
    terms = (m.NodeSelectorTerm((req("gpu", "In", "a100"),)), m.NodeSelectorTerm((req("zone", "In", "a"), req("gpu", "In", "t4"))))
    p = pod(required_affinity=terms)
    assert flavor_matches_affinity(p, A100)
    assert flavor_matches_affinity(p, T4)
    only_a100 = pod(required_affinity=(m.NodeSelectorTerm((req("gpu", "NotIn", "t4"),)),))
    assert flavor_matches_affinity(only_a100, A100)
    assert not flavor_matches_affinity(only_a100, T4)
    # a term left empty after filtering (no key of this flavor) matches any flavor
    other_key = pod(required_affinity=(m.NodeSelectorTerm((req("disk", "In", "ssd"),)),))
    assert flavor_matches_affinity(other_key, T4)


def test_taints_need_a_matching_toleration_from_pod_or_flavor() -> None:
    tainted = m.ResourceFlavor("spot", node_taints=(m.Taint("spot", "true", "NoSchedule"),))
    assert untolerated_taint(pod(), tainted) == m.Taint("spot", "true", "NoSchedule")
    ok = pod(tolerations=(m.Toleration("spot", "Equal", "true", "NoSchedule"),))
    assert untolerated_taint(ok, tainted) is None
    exists = pod(tolerations=(m.Toleration("spot", "Exists"),))
    assert untolerated_taint(exists, tainted) is None
    wrong_value = pod(tolerations=(m.Toleration("spot", "Equal", "false", "NoSchedule"),))
    assert untolerated_taint(wrong_value, tainted) is not None
    self_tolerating = m.ResourceFlavor("spot", node_taints=tainted.node_taints, tolerations=(m.Toleration("spot", "Exists"),))
    assert untolerated_taint(pod(), self_tolerating) is None
    prefer = m.ResourceFlavor("soft", node_taints=(m.Taint("x", "y", "PreferNoSchedule"),))
    assert untolerated_taint(pod(), prefer) is None


def test_namespace_selector_semantics() -> None:
    labels = {"kubernetes.io/metadata.name": "team-a", "tier": "gold"}
    assert selector_matches(m.LabelSelector(), labels)  # {} matches all
    assert not selector_matches(None, labels)  # absent matches nothing
    assert selector_matches(m.LabelSelector({"tier": "gold"}), labels)
    assert not selector_matches(m.LabelSelector(match_expressions=(req("tier", "NotIn", "gold"),)), labels)
    assert selector_matches(m.LabelSelector(match_expressions=(req("env", "DoesNotExist"),)), labels)
