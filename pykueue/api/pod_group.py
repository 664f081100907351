"""A pod group, as upstream's pod integration reads one: the Pods sharing the label
``kueue.x-k8s.io/pod-group-name`` with the annotation ``kueue.x-k8s.io/pod-group-total-count`` are one
Workload, named as the group, admitted all or nothing. Pods of one shape (their spec) are one pod set,
named by a hash of that shape as upstream's role hash names it; the Workload exists once all the
group's Pods do."""

from __future__ import annotations

from pykueue.api.models import kueue_v1beta2 as v2
from pykueue.jobs.pod import webhook as pod_update
from pykueue.jobs.pod.shape import role_hash

TOTAL_COUNT = "kueue.x-k8s.io/pod-group-total-count"
Errors = list[tuple[str, str]]


def member_errors(annotations: dict[str, str]) -> Errors:
    """What upstream's pod webhook refuses in a group member's count, in its words (the rule is
    ``pykueue.jobs.pod.webhook``'s, which the controller's webhook answers with)."""
    value = annotations.get(TOTAL_COUNT)
    path = f"metadata.annotations[{TOTAL_COUNT}]"
    if value is None:
        return [(path, f"Required value: {pod_update.BOTH}")]
    problem = pod_update.total_count_error(value)
    return [] if problem is None else [(path, f'Invalid value: "{value}": {problem}')]


def role(pod_spec: object) -> str:
    """The role of a member Pod: the pod integration's role hash (``pykueue.jobs.pod.shape.role_hash``),
    the same live and here, so a group's pod sets have the same names in both."""
    return role_hash(pod_spec if isinstance(pod_spec, dict) else {})


def merge(members: list[tuple[v2.Workload, object]], name: str, total: int) -> tuple[v2.Workload | None, str]:
    """One Workload for the group, or why there is none (the group is not complete)."""
    if len(members) != total:
        return None, (f"pod group {name} has {len(members)} of its {total} Pods "
                      "(kueue.x-k8s.io/pod-group-total-count): it is never admitted")
    counts: dict[str, int] = {}
    shapes: dict[str, v2.PodSet] = {}
    for member, pod_spec in members:
        pod_set = member.spec.pod_sets[0]
        key = role(pod_spec)
        counts[key] = counts.get(key, 0) + 1
        shapes.setdefault(key, pod_set)
    pod_sets = [shapes[k].model_copy(update={"name": k, "count": counts[k]}) for k in shapes]
    base = members[0][0]
    spec = base.spec.model_copy(update={"pod_sets": pod_sets})
    meta = base.metadata.model_copy(update={"name": name})
    return base.model_copy(update={"spec": spec, "metadata": meta}), ""
