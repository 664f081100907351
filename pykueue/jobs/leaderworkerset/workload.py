"""The LeaderWorkerSet integration, as upstream v0.18's (``pkg/controller/jobs/leaderworkerset``).

A ``leaderworkerset.x-k8s.io/v1`` LeaderWorkerSet runs ``replicas`` groups of ``size`` Pods (a leader
and ``size - 1`` workers, or ``size`` workers without a leader template). Each group is one prebuilt
Workload, ``leaderworkerset-NAME-INDEX-<hash>`` (``GetWorkloadNameForOwnerWithGVK`` of
``NAME-INDEX`` and the LWS's UID), owned by the LWS (not as its controller) and made by the LWS's
reconciler: pod sets ``leader`` (1) and ``worker`` (size - 1), or ``main`` (size), each with its
template's spec only. Scaling up makes the new groups' Workloads, scaling down deletes theirs; during
a rolling update with ``maxSurge`` the surge groups (``status.replicas`` above ``spec.replicas``)
keep theirs.

The webhook marks both templates (``pod-suspending-parent``, serving group, the WorkloadPriorityClass
label), so the Pods LWS's StatefulSets make are gated; the Pod side of the reconciler then names each
Pod's group and prebuilt Workload after its group index (``leaderworkerset.sigs.k8s.io/group-index``)
and its role (``leader`` for the Pod without a leader-name annotation, else ``worker``; ``main``
without a leader template), so each group is released on its own once its Workload is admitted.

The simulator has no UID: a manifest without one hashes ``NAME-INDEX`` in the UID's place, as every
other kind's Workload name does there (``framework.workload.workload_name_for_owner``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pykueue.jobs import generic_update
from pykueue.jobs.framework import (
    ERR_WORKLOAD_COMPOSE,
    Action,
    CreateWorkload,
    Delete,
    Note,
    Patch,
    SetPriority,
    Warn,
)
from pykueue.jobs.framework.validation import JobConversionError, quote
from pykueue.jobs.framework.workload import (
    INDEX_ANNOTATION,
    MULTIKUEUE_ORIGIN_LABEL,
    ORIGIN_UID_ANNOTATION,
    OWNER_GVK_ANNOTATION,
    OWNER_NAME_ANNOTATION,
    PODSET_SLICE_SIZE_ANNOTATION,
    PREBUILT_WORKLOAD_LABEL,
    QUEUE_NAME_LABEL,
    RESOURCE_IN_USE_FINALIZER,
    WORKLOAD_PRIORITY_CLASS_LABEL,
    Manifest,
    owner_workload,
    pod_set_template,
    pod_sets_priority_class_ref,
    queue_name,
    topology_request,
    workload_name_for_owner,
)
from pykueue.jobs.pod.shape import immutable_shape_errors
from pykueue.jobs.pod.workload import (
    GROUP_NAME_LABEL,
    GROUP_SERVING,
    GROUP_TOTAL_COUNT,
    SUSPENDED_BY_PARENT,
)
from pykueue.kube import objects

API_VERSION = "leaderworkerset.x-k8s.io/v1"
GROUP = "leaderworkerset.x-k8s.io"
KIND = "LeaderWorkerSet"
FRAMEWORK = "leaderworkerset.x-k8s.io/leaderworkerset"
IMPLIES = ("pod",)  # upstream's ImplicitlyEnabledFrameworkNames
SET_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"  # on LWS's StatefulSets and Pods
GROUP_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/group-index"
WORKER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"
LEADER_NAME_ANNOTATION = "leaderworkerset.sigs.k8s.io/leader-name"  # on workers only
LEADER, WORKER, MAIN = "leader", "worker", "main"
ROLE_HASH = "kueue.x-k8s.io/role-hash"
IS_GROUP_WORKLOAD = "kueue.x-k8s.io/is-group-workload"
MANAGED_LABEL = "kueue.x-k8s.io/managed"
POD_FINALIZER = "kueue.x-k8s.io/managed"
# each group's Workload names its LWS and index (OWNER_GVK_ANNOTATION, OWNER_NAME_ANNOTATION,
# INDEX_ANNOTATION), so MultiKueue finds its adapter and its sibling groups
OWNER_GVK_ANNOTATION, OWNER_NAME_ANNOTATION, INDEX_ANNOTATION = (
    OWNER_GVK_ANNOTATION, OWNER_NAME_ANNOTATION, INDEX_ANNOTATION)
GVK = f"{GROUP}/v1, Kind={KIND}"  # apimachinery's GroupVersionKind.String()
TERMINAL = ("Succeeded", "Failed")

Errors = list[JobConversionError]
TEMPLATE_PATH = "spec.leaderWorkerTemplate"


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _template(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return (obj.get("spec") or {}).get("leaderWorkerTemplate") or {}


def leader_template(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    return _template(obj).get("leaderTemplate")


def worker_template(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return _template(obj).get("workerTemplate") or {}


def _int(value: object, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def replicas(obj: Mapping[str, Any]) -> int:
    """``spec.replicas`` (the CRD's default 1)."""
    return _int((obj.get("spec") or {}).get("replicas"), 1)


def size(obj: Mapping[str, Any]) -> int:
    """``spec.leaderWorkerTemplate.size``: Pods per group (the CRD's default 1)."""
    return _int(_template(obj).get("size"), 1)


def workload_name(name: str, uid: str | None, index: int | str) -> str:
    """Upstream's ``GetWorkloadName(uid, name, groupIndex)``."""
    return workload_name_for_owner(KIND, GROUP, f"{name}-{index}", uid or None)


def remote(obj: Mapping[str, Any]) -> bool:
    """A MultiKueue worker's copy (the manager's origin label): its groups' Workloads are the copies
    MultiKueue made there, never ones this cluster makes (upstream's isMultiKueueRemote)."""
    return MULTIKUEUE_ORIGIN_LABEL in (_meta(obj).get("labels") or {})


def owner_uid(obj: Mapping[str, Any]) -> str | None:
    """Upstream's GetOwnerUID: a worker's copy names its groups after the manager's LWS (its UID in an
    annotation), so they are the Workloads MultiKueue copied there."""
    meta = _meta(obj)
    if remote(obj) and (origin := (meta.get("annotations") or {}).get(ORIGIN_UID_ANNOTATION)):
        return str(origin)
    return meta.get("uid")


def name_of(obj: Mapping[str, Any], index: int | str) -> str:
    return workload_name(_meta(obj).get("name", ""), owner_uid(obj), index)


def groups(obj: Mapping[str, Any]) -> int:
    """The groups that need a Workload: ``spec.replicas``, or ``status.replicas`` while a rolling
    update with ``maxSurge`` runs more (upstream's ``isRollingUpdateWithSurge``)."""
    want = replicas(obj)
    status = obj.get("status") or {}
    current = _int(status.get("replicas"), 0)
    rolling = ((obj.get("spec") or {}).get("rolloutStrategy") or {}).get("rollingUpdateConfiguration") or {}
    surge = rolling.get("maxSurge")
    surging = isinstance(surge, int) and surge > 0 or isinstance(surge, str) and surge not in ("", "0", "0%")
    if current > want and surging and _int(status.get("updatedReplicas"), 0) < want:
        return current
    return want


def _pod_set(name: str, count: int, template: Mapping[str, Any], indexed: bool) -> dict[str, Any]:
    """``newPodSet``: the template's spec only (env de-duplicated), and its topology request."""
    pod_set: dict[str, Any] = {"name": name, "count": count,
                               "template": {"spec": pod_set_template({"spec": template.get("spec") or {}})["spec"]}}
    topology = topology_request(template)
    if topology is not None:
        if indexed:
            topology["podIndexLabel"] = WORKER_INDEX_LABEL
        pod_set["topologyRequest"] = topology
    return pod_set


def pod_sets(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``podSets``: ``leader`` x1 and ``worker`` x(size-1), or ``main`` x size without a leader template."""
    leader = leader_template(obj)
    if leader is None:
        return [_pod_set(MAIN, size(obj), worker_template(obj), True)]
    return [_pod_set(LEADER, 1, leader, False), _pod_set(WORKER, size(obj) - 1, worker_template(obj), True)]


def template_paths(obj: Mapping[str, Any]) -> list[str]:
    """Each pod set's template field path, in pod set order."""
    worker = f"{TEMPLATE_PATH}.workerTemplate"
    return [worker] if leader_template(obj) is None else [f"{TEMPLATE_PATH}.leaderTemplate", worker]


def validate(obj: Mapping[str, Any]) -> Errors:
    """What the CRD requires of what becomes a Workload, then the webhook's create rules."""
    errors: Errors = []
    spec = obj.get("spec") or {}
    for key, path, minimum in (("replicas", "spec.replicas", 0),):
        value = spec.get(key)
        if value is not None and (_int(value, -1) < minimum):
            errors.append(JobConversionError(path, f"Invalid value: {value!r}: must be greater than or equal to {minimum}"))
    value = _template(obj).get("size")
    if value is not None and _int(value, 0) < 1:
        errors.append(JobConversionError(f"{TEMPLATE_PATH}.size", f"Invalid value: {value!r}: must be greater than or equal to 1"))
    if not (worker_template(obj).get("spec") or {}).get("containers"):
        errors.append(JobConversionError(f"{TEMPLATE_PATH}.workerTemplate.spec.containers", "Required value"))
    leader = leader_template(obj)
    if leader is not None and not (leader.get("spec") or {}).get("containers"):
        errors.append(JobConversionError(f"{TEMPLATE_PATH}.leaderTemplate.spec.containers", "Required value"))
    return errors + validate_create(obj)


def owner_reference(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``SetOwnerReference``: the LWS owns its groups' Workloads, not as their controller."""
    meta = _meta(obj)
    ref = {"apiVersion": API_VERSION, "kind": KIND, "name": meta.get("name", "")}
    if meta.get("uid"):
        ref["uid"] = meta["uid"]
    return ref


def workload_for_group(obj: Mapping[str, Any], index: int, *, label_keys_to_copy: tuple[str, ...] = ()) -> Manifest:
    """``constructWorkload``: group ``index``'s Workload (``NewGroupWorkload``): its pod sets, the
    LWS's queue, priority class and provisioning annotations, marked a group Workload. Raises the
    first ``JobConversionError`` of ``validate``."""
    errors = validate(obj)
    if errors:
        raise errors[0]
    sets = pod_sets(obj)
    ref, _ = pod_sets_priority_class_ref(obj, sets)
    built = owner_workload(obj, api_version=API_VERSION, kind=KIND, group=GROUP, pod_sets=sets,
                                 priority_ref=ref, label_keys_to_copy=label_keys_to_copy)
    meta = built["metadata"]
    meta["name"] = name_of(obj, index)  # NewGroupWorkload's labels: the LWS's UID as the job-uid too
    annotations = meta.setdefault("annotations", {})
    annotations[IS_GROUP_WORKLOAD] = "true"
    annotations.update({OWNER_GVK_ANNOTATION: GVK, OWNER_NAME_ANNOTATION: _meta(obj).get("name", ""),
                        INDEX_ANNOTATION: str(index)})
    meta["ownerReferences"] = [owner_reference(obj)]
    built["spec"].pop("maximumExecutionTimeSeconds", None)  # NewGroupWorkload sets none
    return built


def workloads(obj: Mapping[str, Any]) -> list[Manifest]:
    """Every group's Workload, group 0 first."""
    return [workload_for_group(obj, i) for i in range(replicas(obj))]


def priority_class_path(obj: Mapping[str, Any]) -> str | None:
    _, index = pod_sets_priority_class_ref(obj, pod_sets(obj))
    return None if index < 0 else template_paths(obj)[index] + ".spec.priorityClassName"


# ---- the webhook -----------------------------------------------------------------------------------


def template_marks(obj: Mapping[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
    """``podTemplateSpecDefault``: the labels and annotations put on each template of a managed LWS: its
    WorkloadPriorityClass, and its queue (v0.18 stamps the LWS's queue over one a template names, so its
    Pods join the group's Workload in the LWS's queue instead of waiting, gated, for one of their own)."""
    labels = {}
    if priority := generic_update.label(obj, WORKLOAD_PRIORITY_CLASS_LABEL):
        labels[WORKLOAD_PRIORITY_CLASS_LABEL] = priority
    if queue := queue_name(obj):
        labels[QUEUE_NAME_LABEL] = queue
    return labels, {SUSPENDED_BY_PARENT: FRAMEWORK, GROUP_SERVING: "true"}


def _template_ops(path: str, template: Mapping[str, Any] | None, labels: Mapping[str, str],
                  annotations: Mapping[str, str]) -> list[dict[str, Any]]:
    tmeta = (template or {}).get("metadata")
    if template is None:
        return []
    if tmeta is None:
        body: dict[str, Any] = {"annotations": dict(annotations)}
        if labels:
            body["labels"] = dict(labels)
        return [{"op": "add", "path": f"{path}/metadata", "value": body}]
    ops: list[dict[str, Any]] = []
    for field, values in (("labels", labels), ("annotations", annotations)):
        current = tmeta.get(field)
        if not values:
            continue
        if current is None:
            ops.append({"op": "add", "path": f"{path}/metadata/{field}", "value": dict(values)})
        else:
            ops += [{"op": "add", "path": f"{path}/metadata/{field}/{objects.pointer_segment(k)}", "value": v}
                    for k, v in values.items() if current.get(k) != v]
    return ops


def defaults(obj: Mapping[str, Any], suspend: bool) -> list[dict[str, Any]]:
    """The webhook's ``Default`` after LocalQueueDefaulting: a LWS Kueue manages (``suspend``: it
    names a queue, or every job is Kueue's) gets both templates marked."""
    if not suspend:
        return []
    labels, annotations = template_marks(obj)
    base = "/spec/leaderWorkerTemplate"
    return (_template_ops(f"{base}/leaderTemplate", leader_template(obj), labels, annotations)
            + _template_ops(f"{base}/workerTemplate", worker_template(obj), labels, annotations))


def validate_create(obj: Mapping[str, Any]) -> Errors:
    """``ValidateCreate``: the queue name and each template's topology annotations. Either startup
    policy is allowed (v0.18 queues a LeaderReady LWS too: its workers' StatefulSet comes once the leader
    runs, and their Pods join the group's admitted Workload)."""
    errors = generic_update.queue_name_errors(obj)
    try:
        counts = {p["name"]: p["count"] for p in pod_sets(obj)}
    except (JobConversionError, ValueError, TypeError):
        counts = {}  # upstream checks the bound only when the pod sets could be built
    for path, template, pod_set in ((f"{TEMPLATE_PATH}.leaderTemplate", leader_template(obj), LEADER),
                                    (f"{TEMPLATE_PATH}.workerTemplate", worker_template(obj),
                                     WORKER if LEADER in counts else MAIN)):
        if template is None:
            continue
        try:
            topology_request(template)
        except JobConversionError as exc:
            errors.append(JobConversionError(exc.path.replace("spec.template.", f"{path}.", 1), exc.message))
        errors += _slice_size_bound(template, f"{path}.metadata", counts.get(pod_set), errors)
    return errors


def _slice_size_bound(template: Mapping[str, Any], path: str, count: int | None, found: Errors) -> Errors:
    """``ValidateSliceSizeAnnotationUpperBound``: a template's slice size is a number no greater than its
    pod set's count (1 for the leader; the workers, or all ``size`` without a leader)."""
    value = ((template.get("metadata") or {}).get("annotations") or {}).get(PODSET_SLICE_SIZE_ANNOTATION)
    if value is None or count is None:
        return []
    where = f"{path}.annotations[{PODSET_SLICE_SIZE_ANNOTATION}]"
    try:
        size = int(str(value), 10)
    except ValueError:
        if any(e.path == where for e in found):
            return []  # the topology rule already said so
        return [JobConversionError(where, f"Invalid value: {quote(value)}: must be a numeric value")]
    if size > count:
        return [JobConversionError(where, f"Invalid value: {quote(value)}: must not be greater than "
                                          f"pod set count {count}")]
    return []


def _template_errors(new: Mapping[str, Any] | None, old: Mapping[str, Any] | None, path: str) -> Errors:
    if new is None or old is None:
        return [] if new is old else generic_update.immutable(path, new, old)
    return immutable_shape_errors(new.get("spec") or {}, old.get("spec") or {}, f"{path}.spec")


def validate_update(old: Mapping[str, Any], new: Mapping[str, Any], managed: bool) -> Errors:
    """``ValidateUpdate``: the create rules; the queue name changes only while no group is ready (v0.18:
    a LWS queued in the wrong LocalQueue is moved, its groups' Workloads with it); the WorkloadPriorityClass
    rule (suspended meaning no ready group yet, as for the queue); and, for a LWS Kueue manages, each
    template's shape (containers' names and resources, placement) stays as it is: an image rolls out, a
    size does not."""
    key = QUEUE_NAME_LABEL
    errors = validate_create(new)
    suspended = _int((old.get("status") or {}).get("readyReplicas"), 0) == 0
    if not suspended:
        errors += generic_update.immutable(generic_update.label_path(key), queue_name(new) or "",
                                           queue_name(old) or "")
    errors += generic_update.priority_class(old, new, suspended=suspended)
    if managed:
        errors += _template_errors(leader_template(new), leader_template(old), f"{TEMPLATE_PATH}.leaderTemplate")
        errors += _template_errors(worker_template(new), worker_template(old), f"{TEMPLATE_PATH}.workerTemplate")
    return errors


# ---- the reconcilers ---------------------------------------------------------------------------------


def managed(obj: Mapping[str, Any]) -> bool:
    """Kueue's webhook marked its worker template."""
    annotations = (worker_template(obj).get("metadata") or {}).get("annotations") or {}
    return annotations.get(SUSPENDED_BY_PARENT) == FRAMEWORK


def is_member(pod: Mapping[str, Any], obj: Mapping[str, Any]) -> bool:
    """One of ``obj``'s Pods: its set-name label and the webhook's parent mark."""
    return (((_meta(pod).get("labels") or {}).get(SET_NAME_LABEL) == _meta(obj).get("name"))
            and ((_meta(pod).get("annotations") or {}).get(SUSPENDED_BY_PARENT) == FRAMEWORK))


def pod_role(obj: Mapping[str, Any], pod: Mapping[str, Any]) -> str:
    if leader_template(obj) is None:
        return MAIN
    return WORKER if LEADER_NAME_ANNOTATION in (_meta(pod).get("annotations") or {}) else LEADER


def pod_marks(obj: Mapping[str, Any], pod: Mapping[str, Any]) -> tuple[dict[str, str], dict[str, str]] | None:
    """``setDefault``: the labels and annotations a Pod of a queued LWS gets once LWS's controller
    gave it its group index (None: nothing to do yet, or already done)."""
    labels = _meta(pod).get("labels") or {}
    queue = queue_name(obj)
    if GROUP_INDEX_LABEL not in labels or not queue:
        return None
    if GROUP_NAME_LABEL in labels and labels.get(QUEUE_NAME_LABEL) == queue:
        return None  # done (the queue label alone is the template's, which the webhook stamps)
    name = name_of(obj, labels[GROUP_INDEX_LABEL])
    return ({MANAGED_LABEL: "true", QUEUE_NAME_LABEL: queue, GROUP_NAME_LABEL: name, PREBUILT_WORKLOAD_LABEL: name},
            {GROUP_TOTAL_COUNT: str(size(obj)), ROLE_HASH: pod_role(obj, pod)})


def _ended(pod: Mapping[str, Any]) -> bool:
    return bool(_meta(pod).get("deletionTimestamp")) or (pod.get("status") or {}).get("phase") in TERMINAL


def _unfinalized(pod: Mapping[str, Any]) -> list[Action]:
    """Kueue's finalizer off a Pod that is being deleted or has ended (upstream's LWS Pod reconciler)."""
    meta = _meta(pod)
    finalizers = meta.get("finalizers") or []
    if POD_FINALIZER not in finalizers:
        return []
    kept = [f for f in finalizers if f != POD_FINALIZER]
    return [Patch("Pod", meta.get("namespace") or "default", meta["name"], {"metadata": {
        "finalizers": kept or None, "resourceVersion": meta.get("resourceVersion")}}, missing_ok=True)]


def _pod_actions(obj: Mapping[str, Any], pod: Mapping[str, Any]) -> list[Action]:
    meta = _meta(pod)
    namespace = meta.get("namespace") or "default"
    if _ended(pod):
        return _unfinalized(pod)
    marks = pod_marks(obj, pod)
    if marks is None:
        return []
    labels, annotations = marks
    return [Patch("Pod", namespace, meta["name"], {"metadata": {"labels": labels, "annotations": annotations}},
                  missing_ok=True)]


def reconcile(obj: Mapping[str, Any], owned: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]],
              label_keys: tuple[str, ...] = ()) -> list[Action]:
    """Both of upstream's reconcilers for one LWS: its Pods' group labels (the Pod reconciler), then
    ``filterWorkloads``: a Workload for each group that has none (none on a MultiKueue worker's copy; with the LWS's labels named in
    ``integrations.labelKeysToCopy``, ``label_keys``), the priority class of those that do, and the
    Workloads of groups no longer there deleted (their finalizer dropped first)."""
    if not managed(obj):
        return []
    meta = _meta(obj)
    namespace = meta.get("namespace") or "default"
    actions: list[Action] = [a for pod in pods if is_member(pod, obj) for a in _pod_actions(obj, pod)]
    errors = validate(obj)
    if errors:  # the webhook refuses most of these; one that slipped by is said once, not retried
        return actions + [Warn(obj, ERR_WORKLOAD_COMPOSE, f"{errors[0].path}: {errors[0].message}")]
    existing = {_meta(w).get("name"): w for w in owned}
    ref, _ = pod_sets_priority_class_ref(obj, pod_sets(obj))
    for index in range(groups(obj)):
        name = name_of(obj, index)
        workload = existing.pop(name, None)
        if workload is None and remote(obj):
            continue  # a worker's copy: MultiKueue made its Workloads (each group's arrives on its own)
        if workload is None:
            built = workload_for_group(obj, index, label_keys_to_copy=label_keys)
            actions.append(CreateWorkload(built, f"{KIND} {namespace}/{meta.get('name')}"))
        elif (queue := _moved_queue(obj, workload)) is not None:
            # the LWS moved to another queue while no group was ready: each group's Workload holding no
            # quota follows it, updated in place (it keeps its creation time), as a suspended job's does
            actions += [Patch("Workload", namespace, name, {"spec": {"queueName": queue}}),
                        Note("leaderworkerset changed queues; workload updated", {"workload": f"{namespace}/{name}",
                                                                                 "queue": queue})]
        elif (workload.get("spec") or {}).get("priorityClassRef") != ref and ref is not None:
            actions.append(SetPriority(namespace, name, _meta(workload).get("uid"), ref))
    for name, workload in sorted(existing.items()):
        wl_meta = _meta(workload)
        finalizers = wl_meta.get("finalizers") or []
        if RESOURCE_IN_USE_FINALIZER in finalizers:
            kept = [f for f in finalizers if f != RESOURCE_IN_USE_FINALIZER]
            actions.append(Patch("Workload", namespace, name, {"metadata": {
                "finalizers": kept or None, "resourceVersion": wl_meta.get("resourceVersion")}}, missing_ok=True))
        actions += [Delete("Workload", namespace, name),
                    Note("leaderworkerset group gone; its workload deleted", {"workload": f"{namespace}/{name}"})]
    return actions


def _moved_queue(obj: Mapping[str, Any], workload: Mapping[str, Any]) -> str | None:
    """The LWS's queue, when its group's Workload (holding no quota) names another."""
    queue = queue_name(obj)
    if not queue or (workload.get("status") or {}).get("admission"):
        return None
    return queue if queue != (workload.get("spec") or {}).get("queueName") else None


def reconcile_gone(namespace: str, name: str, pods: Iterable[Mapping[str, Any]]) -> list[Action]:
    """The Pods of LWS ``name`` once the LWS itself is gone: those being deleted or ended lose Kueue's
    finalizer. Upstream's LWS Pod reconciler does this per Pod whether or not its LWS is still there;
    without it a deleted LWS's leader Pods stay Terminating, and with them the worker StatefulSets
    they own."""
    return [a for pod in pods if (_meta(pod).get("namespace") or "default") == namespace
            and (_meta(pod).get("labels") or {}).get(SET_NAME_LABEL) == name
            and (_meta(pod).get("annotations") or {}).get(SUSPENDED_BY_PARENT) == FRAMEWORK
            and _ended(pod) for a in _unfinalized(pod)]


def owned_by(obj: Mapping[str, Any], candidates: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The Workloads ``obj`` owns (by UID)."""
    uid = _meta(obj).get("uid")
    return [w for w in candidates if any(o.get("uid") == uid and o.get("kind") == KIND
                                         for o in _meta(w).get("ownerReferences") or [])]


def named_workloads(obj: Mapping[str, Any]) -> list[tuple[str, Manifest]]:
    """``(name, Workload)`` for the simulator: a group's Workload by its leader's name, ``NAME-INDEX``."""
    name = (obj.get("metadata") or {}).get("name", "")
    return [(f"{name}-{i}", workload_for_group(obj, i)) for i in range(replicas(obj))]


def key_for_pod(pod: Mapping[str, Any]) -> str | None:
    """The ``namespace/name`` of the LWS a Pod it marked belongs to (by its set-name label)."""
    meta = _meta(pod)
    if (meta.get("annotations") or {}).get(SUSPENDED_BY_PARENT) != FRAMEWORK:
        return None
    name = (meta.get("labels") or {}).get(SET_NAME_LABEL)
    return None if not name else f"{meta.get('namespace')}/{name}"


def reconcile_owner(obj: Mapping[str, Any], workloads: Mapping[str, Mapping[str, Any]],
                    pods: Sequence[Mapping[str, Any]], label_keys: tuple[str, ...] = ()) -> list[Action]:
    """``reconcile`` as the controller's group-owner reconciler calls it (``Integration.groups``): the
    Workloads it owns found among the cached ones of its namespace."""
    namespace = _meta(obj).get("namespace")
    owned = owned_by(obj, (w for w in workloads.values() if _meta(w).get("namespace") == namespace))
    return reconcile(obj, owned, pods, label_keys)
