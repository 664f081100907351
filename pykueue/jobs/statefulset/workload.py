"""The StatefulSet integration, as upstream v0.18's (``pkg/controller/jobs/statefulset``).

The StatefulSet itself stands for its Workload: one pod set ``main`` of ``replicas`` Pods with the
template's spec, named ``GetWorkloadName(uid, name)`` (``statefulset-NAME-<hash of kind, group, name
and UID>``), owned by the StatefulSet and created by the StatefulSet's reconciler (a "prebuilt"
Workload). Its webhook marks the pod template (queue label, ``pod-suspending-parent: statefulset``,
the group's total count, fast admission, serving, the role ``main``); the Pod webhook, which sees
the Pod's owner with its UID, names the Pod's group and prebuilt Workload after it. So the Pods are
one serving pod group, admitted all or nothing, that never finishes by itself.

Scaling to 0 drops the StatefulSet's owner reference from the Workload: once its Pods (also its
owners, see ``pods.PodGroup.adopt``) are gone, the garbage collector deletes it, and scaling up again
makes a new one. A replaced Pod (rolling update, drain) joins the same admitted Workload; while a
rolling update is under way, a Pod of the old revision is released at once and let go. A changed
queue label moves a Workload that holds no quota and relabels the Pods.

A MultiKueue worker's copy (the manager's origin label, the manager's UID in
``kueue.x-k8s.io/multikueue-origin-uid``) is named after the manager's StatefulSet, so its Workload is
the copy MultiKueue made there; it never makes one of its own (upstream's GetOwnerUID).

The simulator has no UID: a StatefulSet manifest without one hashes its name in the UID's place, as
every other kind's Workload name does there (``framework.workload.workload_name_for_owner``). Pods are ``NAME-0`` ..
``NAME-<replicas-1>``, as the StatefulSet controller names them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pykueue.engine.engine import (
    ON_HOLD_MESSAGE,  # upstream's putWorkloadOnHold wording, the engine's default
)
from pykueue.jobs.framework import Action, CreateWorkload, Hold, JobStopped, Note, Patch
from pykueue.jobs.framework.workload import (
    JOB_UID_LABEL,
    MULTIKUEUE_ORIGIN_LABEL,
    ORIGIN_UID_ANNOTATION,
    OWNER_GVK_ANNOTATION,
    OWNER_NAME_ANNOTATION,
    PREBUILT_WORKLOAD_LABEL,
    QUEUE_NAME_LABEL,
    Manifest,
    priority_class_ref,
    workload_name_for_owner,
)
from pykueue.jobs.pod.serving import replicas, validate
from pykueue.jobs.pod.workload import (
    GROUP_FAST_ADMISSION,
    GROUP_NAME_LABEL,
    GROUP_SERVING,
    GROUP_TOTAL_COUNT,
    SUSPENDED_BY_PARENT,
    pod_from_template,
    workload_from_pod,
)

FRAMEWORK = "statefulset"
IMPLIES = ("pod",)  # upstream's ImplicitlyEnabledFrameworkNames
KIND = "StatefulSet"
API_VERSION = "apps/v1"
GVK = "apps/v1, Kind=StatefulSet"  # apimachinery's GroupVersionKind.String(), as the job-owner annotation names it
POD_SET = "main"  # kueue.DefaultPodSetName: the Workload's one pod set, and every Pod's role
ROLE_HASH = "kueue.x-k8s.io/role-hash"
IS_GROUP_WORKLOAD = "kueue.x-k8s.io/is-group-workload"
POD_INDEX_LABEL_ANNOTATION = "kueue.x-k8s.io/pod-group-pod-index-label"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
MANAGED_FINALIZER = "kueue.x-k8s.io/managed"
SCHEDULING_GATE = "kueue.x-k8s.io/admission"
REVISION_LABEL = "controller-revision-hash"  # apps/v1 ControllerRevisionHashLabelKey, on every replica
TERMINAL = ("Succeeded", "Failed")


def workload_name(name: str, uid: str | None) -> str:
    """Upstream's ``GetWorkloadName(uid, name)``; a manifest without a UID (the simulator's) hashes
    its name in the UID's place."""
    return workload_name_for_owner(KIND, "apps", name, uid or None)


def remote(sts: Mapping[str, Any]) -> bool:
    """A MultiKueue worker's copy (it carries the manager's origin label): its Workload is the manager's
    copy, never one this cluster makes."""
    return MULTIKUEUE_ORIGIN_LABEL in _labels_of(sts)


def owner_uid(sts: Mapping[str, Any]) -> str | None:
    """Upstream's GetOwnerUID: a worker's copy is named after the manager's StatefulSet (its UID in an
    annotation), so its Workload is the copy MultiKueue made there."""
    meta = sts.get("metadata") or {}
    if remote(sts) and (origin := (meta.get("annotations") or {}).get(ORIGIN_UID_ANNOTATION)):
        return str(origin)
    return meta.get("uid")


def copy_group(sts: Mapping[str, Any]) -> str | None:
    """A MultiKueue worker's copy's group, named after the manager's StatefulSet (None for any other
    StatefulSet). Known when the copy is created, so its webhook writes it into the pod template and
    every replica is created in that group (a Pod's group label is immutable once set)."""
    meta = sts.get("metadata") or {}
    if not remote(sts) or not (meta.get("annotations") or {}).get(ORIGIN_UID_ANNOTATION):
        return None
    return name_of(sts)


def name_of(sts: Mapping[str, Any]) -> str:
    """The Workload name of ``sts`` (a StatefulSet manifest)."""
    return workload_name((sts.get("metadata") or {}).get("name", ""), owner_uid(sts))


def owner(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The Pod's controlling StatefulSet reference, or None."""
    for ref in (pod.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") == KIND and ref.get("apiVersion") == API_VERSION:
            return ref
    return None


def owner_reference(sts: Mapping[str, Any]) -> dict[str, Any]:
    """The Workload's reference to its StatefulSet (upstream's ``SetOwnerReference``: not the controller)."""
    meta = sts.get("metadata") or {}
    ref = {"apiVersion": API_VERSION, "kind": KIND, "name": meta.get("name", "")}
    if meta.get("uid"):
        ref["uid"] = meta["uid"]
    return ref


def template_marks(queue: str | None, count: int) -> tuple[dict[str, str], dict[str, str]]:
    """The labels and annotations the webhook puts on the pod template of a managed StatefulSet."""
    annotations = {SUSPENDED_BY_PARENT: FRAMEWORK}
    if not queue:
        return {}, annotations
    annotations.update({GROUP_TOTAL_COUNT: str(count), GROUP_FAST_ADMISSION: "true", GROUP_SERVING: "true",
                        POD_INDEX_LABEL_ANNOTATION: POD_INDEX_LABEL, ROLE_HASH: POD_SET})
    return {QUEUE_NAME_LABEL: queue}, annotations


def pod_marks(pod: Mapping[str, Any]) -> dict[str, str]:
    """The labels the Pod webhook adds to a StatefulSet's Pod: its group and prebuilt Workload, both
    named after the owner (``{}`` for a Pod no StatefulSet controls)."""
    ref = owner(pod)
    if ref is None or (((pod.get("metadata") or {}).get("annotations") or {}).get(SUSPENDED_BY_PARENT) != FRAMEWORK):
        return {}
    if _labels_of(pod).get(GROUP_NAME_LABEL):
        return {}  # named by its template already (a MultiKueue worker's copy: ``copy_group``)
    name = workload_name(ref.get("name", ""), ref.get("uid"))
    return {GROUP_NAME_LABEL: name, PREBUILT_WORKLOAD_LABEL: name}


def pods(sts: Mapping[str, Any]) -> list[Manifest]:
    """The replicas' Pods, ``NAME-0`` .. ``NAME-<replicas-1>``, with the webhooks' marks."""
    meta = sts.get("metadata") or {}
    count = replicas(sts)
    labels, marks = template_marks((meta.get("labels") or {}).get(QUEUE_NAME_LABEL), count)
    group = name_of(sts)
    labels.update({GROUP_NAME_LABEL: group, PREBUILT_WORKLOAD_LABEL: group})
    name = meta.get("name", "")
    return [pod_from_template(sts, f"{name}-{i}", {**labels, POD_INDEX_LABEL: str(i)}, marks)
            for i in range(count)]


def workload_from_statefulset(sts: Mapping[str, Any]) -> Manifest | None:
    """The StatefulSet's Workload (``None`` for ``replicas: 0``): one pod set ``main`` of ``replicas``
    with the template's spec, owned by the StatefulSet. Raises ``JobConversionError`` for a
    StatefulSet the API server or Kueue's webhook would refuse."""
    errors = validate(sts)
    if errors:
        raise errors[0]
    members = pods(sts)
    if not members:
        return None
    built = workload_from_pod(members[0])
    meta = built["metadata"]
    meta["name"] = name_of(sts)
    meta.pop("labels", None)  # no Pod's UID stands for the StatefulSet: its own does (upstream's job-uid)
    if (uid := (sts.get("metadata") or {}).get("uid")):
        meta["labels"] = {JOB_UID_LABEL: uid}
    annotations = meta.setdefault("annotations", {})
    annotations.update({IS_GROUP_WORKLOAD: "true", OWNER_GVK_ANNOTATION: GVK,
                        OWNER_NAME_ANNOTATION: (sts.get("metadata") or {}).get("name", "")})
    meta["ownerReferences"] = [owner_reference(sts)]
    # upstream's PrepareWorkloadPriority on the StatefulSet itself: its own priority-class label, else
    # its template's priorityClassName (a label on the template alone is not read)
    ref = priority_class_ref(sts)
    if ref is None:
        built["spec"].pop("priorityClassRef", None)
    else:
        built["spec"]["priorityClassRef"] = ref
    pod_set = built["spec"]["podSets"][0]
    pod_set["name"] = POD_SET
    pod_set["count"] = len(members)
    return built


def _labels_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


def managed(sts: Mapping[str, Any]) -> bool:
    """Kueue's webhook marked its pod template (it has a queue, or Kueue manages jobs without one)."""
    template = (sts.get("spec") or {}).get("template") or {}
    return ((template.get("metadata") or {}).get("annotations") or {}).get(SUSPENDED_BY_PARENT) == FRAMEWORK


def managed_by_another_framework(sts: Mapping[str, Any]) -> str | None:
    """The framework whose mark the pod template carries when it is not this one's (a LeaderWorkerSet's
    StatefulSets carry their LWS's): upstream's StatefulSet webhooks and reconciler leave such a
    StatefulSet to that framework, as if the integration were off."""
    template = (sts.get("spec") or {}).get("template") or {}
    parent = ((template.get("metadata") or {}).get("annotations") or {}).get(SUSPENDED_BY_PARENT)
    return parent if parent is not None and parent != FRAMEWORK else None


def members(sts: Mapping[str, Any], candidates: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The Pods ``sts`` controls (by UID, so a successor of the same name never claims them)."""
    uid = (sts.get("metadata") or {}).get("uid")
    return [p for p in candidates if (ref := owner(p)) is not None and ref.get("uid") == uid]


def _going(pod: Mapping[str, Any]) -> bool:
    """Being deleted or ended: upstream's StatefulSet Pod reconciler removes Kueue's finalizer then."""
    return bool((pod.get("metadata") or {}).get("deletionTimestamp")) or (pod.get("status") or {}).get("phase") in TERMINAL


def reconcile_gone(namespace: str, name: str, pods: Iterable[Mapping[str, Any]]) -> list[Action]:
    """The Pods of StatefulSet ``name`` once the StatefulSet itself is gone: those being deleted or ended
    lose Kueue's finalizer. Upstream's Pod reconciler for StatefulSets reads only the Pod, so it does
    this whether or not the StatefulSet is still there; without it a deleted StatefulSet's Pods stay
    Terminating."""
    actions: list[Action] = []
    for pod in pods:
        meta = pod.get("metadata") or {}
        ref = owner(pod)
        finalizers = meta.get("finalizers") or []
        if (meta.get("namespace") or "default") != namespace or ref is None or ref.get("name") != name \
                or not _going(pod) or MANAGED_FINALIZER not in finalizers \
                or (meta.get("annotations") or {}).get(SUSPENDED_BY_PARENT) != FRAMEWORK:
            continue
        actions.append(Patch("Pod", namespace, meta["name"], {"metadata": {
            "finalizers": [f for f in finalizers if f != MANAGED_FINALIZER] or None,
            "resourceVersion": meta.get("resourceVersion")}}, missing_ok=True))
    return actions


def reconcile(sts: Mapping[str, Any], workload: Mapping[str, Any] | None,
              pods_of_sts: Iterable[Mapping[str, Any]]) -> list[Action]:
    """Upstream's StatefulSet reconciler: the writes that keep the StatefulSet's Workload and Pods in
    step with it. Its Pods carry its group, prebuilt Workload and queue; the Workload is made from the
    StatefulSet while it has replicas and none exists, and the StatefulSet owns it, at 0 replicas too.
    At 0 it is put on hold (``Hold``: its quota given back once none of its Pods may run, ``JobStopped``;
    reason OnHold, not queued) and let go once it has replicas again, its count following them while it
    holds no quota; a Workload that holds no quota follows the StatefulSet's queue label."""
    if not managed(sts):
        return []
    meta = sts.get("metadata") or {}
    namespace, uid, name = meta.get("namespace") or "default", meta.get("uid"), name_of(sts)
    queue = _labels_of(sts).get(QUEUE_NAME_LABEL)
    want = {GROUP_NAME_LABEL: name, PREBUILT_WORKLOAD_LABEL: name, **({QUEUE_NAME_LABEL: queue} if queue else {})}
    status = sts.get("status") or {}
    current = status.get("currentRevision")
    rolling = bool(current) and current != status.get("updateRevision")
    actions: list[Action] = []
    for pod in pods_of_sts:
        pod_meta = pod.get("metadata") or {}
        going = _going(pod)
        change = {k: v for k, v in want.items() if _labels_of(pod).get(k) != v}
        if change and not going:
            actions.append(Patch("Pod", namespace, pod_meta["name"], {"metadata": {"labels": change}}, missing_ok=True))
        # upstream's shouldUngate: during a rolling update a Pod of the current (old) revision, such as
        # one recreated in a partition the update leaves alone, runs at once and is no longer tracked
        old_revision = rolling and _labels_of(pod).get(REVISION_LABEL) == current
        finalizers = pod_meta.get("finalizers") or []
        gates = (pod.get("spec") or {}).get("schedulingGates") or []
        body: dict[str, Any] = {}
        if (going or old_revision) and MANAGED_FINALIZER in finalizers:  # upstream's shouldFinalize
            body["metadata"] = {"finalizers": [f for f in finalizers if f != MANAGED_FINALIZER] or None}
        if old_revision and any(g.get("name") == SCHEDULING_GATE for g in gates):
            body["spec"] = {"schedulingGates": [g for g in gates if g.get("name") != SCHEDULING_GATE] or None}
        if body:
            body.setdefault("metadata", {})["resourceVersion"] = pod_meta.get("resourceVersion")
            actions.append(Patch("Pod", namespace, pod_meta["name"], body, missing_ok=True))
    count = replicas(sts)
    if workload is None:
        if count > 0 and not remote(sts):
            built = workload_from_statefulset(sts)
            assert built is not None
            actions.append(CreateWorkload(built, f"{KIND} {namespace}/{meta.get('name')}"))
        return actions
    wl_meta = workload.get("metadata") or {}
    owners = list(wl_meta.get("ownerReferences") or [])
    owned = any(o.get("uid") == uid and o.get("kind") == KIND for o in owners)
    if not owned and count > 0:
        # an owner lost before (a Workload of an earlier pykueue, released at 0): the StatefulSet again
        annotations = {OWNER_GVK_ANNOTATION: GVK, OWNER_NAME_ANNOTATION: meta.get("name", "")}
        actions += [Patch("Workload", namespace, wl_meta["name"], {"metadata": {
                        "ownerReferences": [*owners, owner_reference(sts)], "annotations": annotations,
                        "resourceVersion": wl_meta.get("resourceVersion")}}),
                    Note("statefulset ownership of its workload", {
                        "workload": f"{namespace}/{wl_meta['name']}", "owned": "true"})]
    holds_quota = bool((workload.get("status") or {}).get("admission"))
    if count == 0:
        # upstream's putWorkloadOnHold; the quota goes only once nothing of the StatefulSet may run
        actions.append(Hold(namespace, wl_meta["name"], True, ON_HOLD_MESSAGE))
        if not any((p.get("status") or {}).get("phase") not in TERMINAL for p in pods_of_sts):
            actions.append(JobStopped(namespace, wl_meta["name"]))
        return actions
    actions.append(Hold(namespace, wl_meta["name"], False))
    pod_sets = (workload.get("spec") or {}).get("podSets") or []
    if not holds_quota and len(pod_sets) == 1 and pod_sets[0].get("count") != count:
        # scaled up from 0 to another size: the held Workload's one pod set follows, as it holds nothing
        actions.append(Patch("Workload", namespace, wl_meta["name"], {"spec": {
            "podSets": [{**pod_sets[0], "count": count}]}, "metadata": {"resourceVersion": wl_meta.get("resourceVersion")}}))
    if queue and not holds_quota and queue != (workload.get("spec") or {}).get("queueName"):
        actions += [Patch("Workload", namespace, wl_meta["name"], {"spec": {"queueName": queue}}),
                    Note("statefulset changed queues; workload updated", {
                        "workload": f"{namespace}/{wl_meta['name']}", "queue": queue})]
    return actions


def workloads(sts: Mapping[str, Any]) -> list[tuple[str, Manifest]]:
    """``(name, Workload)`` for the simulator: one pod group named as the StatefulSet, none at
    ``replicas: 0``."""
    group = workload_from_statefulset(sts)
    return [] if group is None else [((sts.get("metadata") or {}).get("name", ""), group)]


def template_paths(sts: Mapping[str, Any]) -> list[str]:
    return ["spec.template"]


def key_for_pod(pod: Mapping[str, Any]) -> str | None:
    """The ``namespace/name`` of the StatefulSet that controls ``pod``, if one does."""
    ref = owner(pod)
    return None if ref is None else f"{(pod.get('metadata') or {}).get('namespace')}/{ref['name']}"


def reconcile_owner(sts: Mapping[str, Any], workloads: Mapping[str, Mapping[str, Any]],
                    pods: Sequence[Mapping[str, Any]], label_keys: tuple[str, ...] = ()) -> list[Action]:
    """``reconcile`` as the controller's group-owner reconciler calls it (``Integration.groups``): its
    Workload found by name among the cached ones, its Pods among its namespace's."""
    namespace = (sts.get("metadata") or {}).get("namespace")
    return reconcile(sts, workloads.get(f"{namespace}/{name_of(sts)}"), members(sts, pods))
