"""Plain Pods and pod groups on the job framework, as upstream's pod integration runs them live.

A queue-labelled Pod is created gated: the webhook (``pod_defaults``) adds the scheduling gate
``kueue.x-k8s.io/admission``, the ``kueue.x-k8s.io/managed`` label and the same-named finalizer. Its
Workload (one pod set ``main`` of one pod) is admitted like any other; admission removes the gate and adds
the flavors' node selector and tolerations in one update, which the API server allows for a gated Pod.
A Pod cannot be suspended again, so eviction marks it ``TerminationTarget`` and deletes it; the finalizer
keeps it until its Workload is updated.

A pod group (Pods sharing ``kueue.x-k8s.io/pod-group-name``, with ``kueue.x-k8s.io/pod-group-total-count``)
is one Workload named as the group, with a pod set per role (Pods of one shape); it is created once all
the group's Pods exist (at the first one with ``kueue.x-k8s.io/pod-group-fast-admission``, as a
StatefulSet's are) and every Pod of it is released together. Failed Pods are replaced by new ones that
join the admitted group. Deployments and StatefulSets queue through here: their webhooks
(``jobs.deployment.webhook``, ``jobs.statefulset.webhook``) label the pod template, so each of a Deployment's
Pods is a Workload of its own and a StatefulSet's Pods are one group.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pykueue.jobs import managed, prebuilt
from pykueue.jobs.framework import Action, Delete, Event, Note, OneObject, Patch, WorkloadConditions
from pykueue.jobs.framework.podset import merge_pod_set_info
from pykueue.jobs.framework.workload import (
    MAX_EXEC_TIME_SECONDS_LABEL,
    PREBUILT_WORKLOAD_LABEL,
    annotations_of,
    labels_of,
    meta_of,
    queue_name,
    workload_name_for_owner,
)
from pykueue.jobs.hooks import no_marks
from pykueue.jobs.integration import Frameworks
from pykueue.jobs.pod.shape import role_hash
from pykueue.jobs.pod.workload import (
    GROUP_FAST_ADMISSION,
    GROUP_NAME_LABEL,
    GROUP_SERVING,
    GROUP_TOTAL_COUNT,
    SUSPENDED_BY_PARENT,
    workload_from_pod,
)
from pykueue.kube import objects

KIND = "Pod"
LWS_FRAMEWORK = "leaderworkerset.x-k8s.io/leaderworkerset"  # its Pods' parent mark (pykueue.jobs.leaderworkerset.workload)
GATE = "kueue.x-k8s.io/admission"
EXCESS_POD_DELETED = "ExcessPodDeleted"  # the pod controller's ReasonExcessPodDeleted, on the Pod
MANAGED_LABEL = "kueue.x-k8s.io/managed"
FINALIZER = MANAGED_LABEL
ROLE_HASH = "kueue.x-k8s.io/role-hash"
RETRIABLE_IN_GROUP = "kueue.x-k8s.io/retriable-in-group"
IS_GROUP_WORKLOAD = "kueue.x-k8s.io/is-group-workload"
TERMINATION_TARGET = "TerminationTarget"
WORKLOAD_DELETED = "WorkloadDeleted"  # upstream's StopReasonWorkloadDeleted
WAITING_FOR_REPLACEMENT_PODS = "WaitingForReplacementPods"
REPLACEMENT_MANAGER = "kueue-pod-group-replacements"  # its own field manager: PodsReady's writes keep it

# The owners whose integrations manage their Pods themselves (the Pod webhook leaves those Pods alone).


def group_name(pod: Mapping[str, Any]) -> str:
    return labels_of(pod).get(GROUP_NAME_LABEL, "")


def awaits_parent(pod: Mapping[str, Any]) -> bool:
    """A LeaderWorkerSet's Pod its reconciler has not yet named into its group: gated, but nobody's
    Workload yet (upstream's Pod webhook leaves it unlabelled, so the pod reconciler skips it)."""
    return annotations_of(pod).get(SUSPENDED_BY_PARENT) == LWS_FRAMEWORK and not group_name(pod)


def pod_role(pod: Mapping[str, Any]) -> str:
    """A group member's role: the annotation the webhook wrote wins, as upstream's."""
    return annotations_of(pod).get(ROLE_HASH) or role_hash(pod.get("spec") or {})


def workload_name_for_pod(name: str, uid: str | None) -> str:
    return workload_name_for_owner("Pod", "", name, uid or None)


# ---- webhooks: what Kueue adds to a Pod, Deployment or StatefulSet on create ----------------------------


def _add(path: str, value: Any) -> dict[str, Any]:
    return {"op": "add", "path": path, "value": value}


def _map_ops(obj: Mapping[str, Any], path: str, current: Mapping[str, str] | None, values: Mapping[str, str]
             ) -> list[dict[str, Any]]:
    """JSON patch ops setting ``values`` into the map at ``path`` (created when missing)."""
    if current is None:
        return [_add(path, dict(values))]
    return [_add(f"{path}/{objects.pointer_segment(k)}", v) for k, v in values.items() if current.get(k) != v]


def manages_pod(pod: Mapping[str, Any], frameworks: Frameworks, manage_without_queue_name: bool,
                scope: managed.Scope = managed.DEFAULT_SCOPE) -> bool:
    """Upstream's pod webhook ``Default``: whether Kueue gates this Pod (``frameworks``: the
    integrations that are on, from ``jobs.registry.enabled``)."""
    if SUSPENDED_BY_PARENT in annotations_of(pod):
        return True  # its Deployment or StatefulSet asked for it
    if "pod" not in frameworks or not scope.selected(meta_of(pod).get("namespace") or ""):
        return False
    for owner in meta_of(pod).get("ownerReferences") or []:
        if owner.get("controller"):
            group = (owner.get("apiVersion") or "").partition("/")[0] if "/" in (owner.get("apiVersion") or "") else ""
            integration = frameworks.owner_integration(group, owner.get("kind", ""))
            if (integration is not None and integration.owns_pods) or (
                    owner.get("kind") == "ReplicaSet" and "deployment" in frameworks):
                return False  # its owner's integration manages it
    return queue_name(pod) is not None or manage_without_queue_name


def pod_defaults(pod: Mapping[str, Any], frameworks: Frameworks, manage_without_queue_name: bool,
                 scope: managed.Scope = managed.DEFAULT_SCOPE,
                 owner_marks: Callable[[Mapping[str, Any]], dict[str, str]] = no_marks) -> list[dict[str, Any]]:
    """The JSON patch the Pod webhook answers: gate, label and finalizer a Pod Kueue manages, plus the
    labels its parent's integration names for it (``owner_marks``: a StatefulSet's Pods are one group
    named after the owner's UID, which only the Pod webhook knows; the caller passes that rule in, so
    this package knows no parent kind), and its role hash (every Pod gated, as upstream's ``addRoleHash``:
    a Pod that later joins a group keeps the role it was made with). A Pod suspended by a parent that is
    no integration on here (another controller's) gets no managed label, as upstream's webhook gives it
    none: nobody's Workload until its owner labels it, with its group."""
    if not manages_pod(pod, frameworks, manage_without_queue_name, scope):
        return []
    meta, spec = meta_of(pod), pod.get("spec") or {}
    parent = annotations_of(pod).get(SUSPENDED_BY_PARENT)
    ops: list[dict[str, Any]] = []
    finalizers = meta.get("finalizers")
    if finalizers is None:
        ops.append(_add("/metadata/finalizers", [FINALIZER]))
    elif FINALIZER not in finalizers:
        ops.append(_add("/metadata/finalizers/-", FINALIZER))
    labelled = parent is None or parent in frameworks
    if labelled:
        ops += _map_ops(pod, "/metadata/labels", meta.get("labels"), {MANAGED_LABEL: "true"})
    gates = spec.get("schedulingGates")
    if gates is None:
        ops.append(_add("/spec/schedulingGates", [{"name": GATE}]))
    elif not any(g.get("name") == GATE for g in gates):
        ops.append(_add("/spec/schedulingGates/-", {"name": GATE}))
    owner_labels = owner_marks(pod)
    if owner_labels:
        base = {**(meta.get("labels") or {}), MANAGED_LABEL: "true"} if labelled else meta.get("labels")
        ops += _map_ops(pod, "/metadata/labels", base, owner_labels)
    if ROLE_HASH not in (meta.get("annotations") or {}):
        ops += _map_ops(pod, "/metadata/annotations", meta.get("annotations"), {ROLE_HASH: role_hash(spec)})
    return ops


def template_ops(obj: Mapping[str, Any], labels: Mapping[str, str], annotations: Mapping[str, str]
                  ) -> list[dict[str, Any]]:
    template = (obj.get("spec") or {}).get("template") or {}
    tmeta = template.get("metadata")
    if tmeta is None:
        return [_add("/spec/template/metadata", {"labels": dict(labels), "annotations": dict(annotations)})]
    return (_map_ops(obj, "/spec/template/metadata/labels", tmeta.get("labels"), labels)
            + _map_ops(obj, "/spec/template/metadata/annotations", tmeta.get("annotations"), annotations))


# ---- pod state -----------------------------------------------------------------------------------------


def gated(pod: Mapping[str, Any]) -> bool:
    return any(g.get("name") == GATE for g in (pod.get("spec") or {}).get("schedulingGates") or [])


def phase(pod: Mapping[str, Any]) -> str:
    return (pod.get("status") or {}).get("phase") or "Pending"


def terminated(pod: Mapping[str, Any]) -> bool:
    return phase(pod) in ("Succeeded", "Failed")


def dispatched(workload: Mapping[str, Any]) -> bool:
    """Admitted through MultiKueue (``status.clusterName`` names the worker running it): the Pods run
    there, created by MultiKueue, and the manager's own stay gated (upstream's Pod MultiKueue adapter)."""
    return bool((workload.get("status") or {}).get("clusterName"))


def suspended(pod: Mapping[str, Any]) -> bool:
    return terminated(pod) or gated(pod)


def active(pod: Mapping[str, Any]) -> bool:
    """Its containers may run: released from the gate and not yet Succeeded or Failed (a terminating
    Pod counts until it is, as upstream's Pod integration without fast quota release)."""
    return not suspended(pod)


def ready(pod: Mapping[str, Any]) -> bool:
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False


def runnable_or_succeeded(pod: Mapping[str, Any]) -> bool:
    """Upstream's isPodRunnableOrSucceeded: not failed, and not deleted before it had a node."""
    if meta_of(pod).get("deletionTimestamp") and not (pod.get("spec") or {}).get("nodeName"):
        return False
    return phase(pod) != "Failed"


def _key(pod: Mapping[str, Any]) -> str:
    return f"{meta_of(pod).get('namespace')}/{meta_of(pod).get('name')}"


def _release(pod: Mapping[str, Any], info: Mapping[str, Any]) -> Patch:
    """The one update that lets a gated Pod run: gate off, the flavors' node selector, tolerations and
    labels on (the API server accepts scheduling directives added to a Pod that is still gated)."""
    meta, spec = meta_of(pod), pod.get("spec") or {}
    merged = merge_pod_set_info(
        {"labels": dict(meta.get("labels") or {}), "annotations": dict(meta.get("annotations") or {}),
         "nodeSelector": dict(spec.get("nodeSelector") or {}), "tolerations": list(spec.get("tolerations") or []),
         "schedulingGates": [g for g in spec.get("schedulingGates") or [] if g.get("name") != GATE]},
        {k: v for k, v in info.items() if k != "schedulingGates"})
    body: dict[str, Any] = {
        "metadata": {"labels": merged["labels"], "annotations": merged["annotations"] or None,
                     "resourceVersion": meta.get("resourceVersion")},
        "spec": {"schedulingGates": merged["schedulingGates"] or None,
                 "nodeSelector": merged["nodeSelector"] or None, "tolerations": merged["tolerations"] or None},
    }
    return Patch(KIND, meta["namespace"], meta["name"], body)


def _terminate(pod: Mapping[str, Any], reason: str, message: str, event: str = "") -> list[Action]:
    """Upstream's Pod ``Stop``: say why on the Pod (condition TerminationTarget), delete it, and record
    the ``Stopped`` Event with the stop's message (an eviction's own, e.g. why it was preempted)."""
    meta = meta_of(pod)
    condition = {"type": TERMINATION_TARGET, "status": "True", "reason": reason, "message": message}
    return [Patch(KIND, meta["namespace"], meta["name"], {"status": {"conditions": [condition]}},
                  subresource="status", json=False, missing_ok=True),
            Delete(KIND, meta["namespace"], meta["name"]),
            Event("v1", KIND, meta["namespace"], meta["name"], meta.get("uid"), "Stopped", event or message)]


def _finalize(pods: Iterable[Mapping[str, Any]]) -> list[Action]:
    actions: list[Action] = []
    for pod in pods:
        meta = meta_of(pod)
        finalizers = meta.get("finalizers") or []
        if FINALIZER in finalizers:
            kept = [f for f in finalizers if f != FINALIZER]
            actions.append(Patch(KIND, meta["namespace"], meta["name"], {"metadata": {
                "finalizers": kept or None, "resourceVersion": meta.get("resourceVersion")}}, missing_ok=True))
    return actions


def _stop_reason(evicted: bool) -> tuple[str, str]:
    return ("WorkloadEvicted", "Evicted by Kueue") if evicted else ("NotAdmitted", "Not admitted by cluster queue")


def _stop_message(workload: Mapping[str, Any], evicted: bool) -> str:
    """The Stopped Event's message: an eviction's condition message (upstream's StopReason), else the reason's."""
    cond = objects.condition(workload, "Evicted") if evicted else None
    return str((cond or {}).get("message") or _stop_reason(evicted)[1])


# ---- the GenericJobs ---------------------------------------------------------------------------------


class Pod(OneObject):
    """One plain Pod, its own Workload."""

    kind = KIND
    api_version = "v1"

    def __init__(self, pod: dict[str, Any]) -> None:
        super().__init__(pod)
        self.pod = pod

    def workload_name(self) -> str:
        return workload_name_for_pod(self.meta["name"], self.meta.get("uid"))

    def is_suspended(self) -> bool:
        return suspended(self.pod)

    def finished(self) -> tuple[bool, bool, str]:
        ph = phase(self.pod)
        message = (self.pod.get("status") or {}).get("message") or ""
        return ph in ("Succeeded", "Failed"), ph == "Succeeded", message

    def pods_ready(self) -> bool:
        return ready(self.pod)

    def is_active(self) -> bool:
        return active(self.pod)

    def reclaimable_pods(self) -> dict[str, int]:
        return {}

    def build_workload(self) -> dict[str, Any]:
        built = workload_from_pod(_for_workload(self.pod))
        built["metadata"]["name"] = self.workload_name()
        return built

    def suspend(self) -> list[Action]:
        # a managed Pod running without a Workload (its Workload was deleted): upstream stops it
        return _terminate(self.pod, "NoMatchingWorkload", "Missing Workload; unable to restore pod templates")

    def run(self, infos: Sequence[Mapping[str, Any]], workload: Mapping[str, Any]) -> list[Action]:
        if not gated(self.pod) or dispatched(workload):
            return []
        return [_release(self.pod, infos[0]), Note("pod started", {"pod": _key(self.pod)})]

    def stop(self, workload: Mapping[str, Any], evicted: bool) -> list[Action]:
        if self.deleting() or suspended(self.pod):
            return []
        reason, message = _stop_reason(evicted)
        return (_terminate(self.pod, reason, message, _stop_message(workload, evicted))
                + [Note("pod stopped", {"pod": _key(self.pod), "reason": reason})])

    def finalize(self) -> list[Action]:
        return _finalize([self.pod])

    def cleanup(self) -> list[Action]:
        return []


class PodGroup:
    """The Pods of one group in one namespace: one Workload, released together."""

    kind = "PodGroup"
    compared_whole = False

    def __init__(self, namespace: str, name: str, pods: Sequence[dict[str, Any]],
                 departed: Sequence[dict[str, Any]] = ()) -> None:
        """``departed``: members that lost Kueue's managed label alive: never acted on, but the group is
        active while one of them may run (its quota is not handed on before)."""
        self._namespace = namespace
        self.name = name
        self.pods = sorted(pods, key=lambda p: (meta_of(p).get("creationTimestamp") or "", meta_of(p).get("name")))
        self.departed = departed

    @property
    def namespace(self) -> str:
        return self._namespace

    def describe(self) -> str:
        return f"pod group {self._namespace}/{self.name}"

    def workload_name(self) -> str:
        return self.name

    def totals(self) -> set[int]:
        """Every positive ``pod-group-total-count`` the members name (one, in a well-formed group)."""
        values: set[int] = set()
        for pod in self.pods:
            try:
                value = int(annotations_of(pod).get(GROUP_TOTAL_COUNT, ""))
            except ValueError:
                continue
            if value > 0:
                values.add(value)
        return values

    def total(self) -> int:
        return min(self.totals(), default=0)

    def serving(self) -> bool:
        """``pod-group-serving``: the group runs until it is deleted (a StatefulSet's)."""
        return any(annotations_of(p).get(GROUP_SERVING) == "true" for p in self.pods)

    def prebuilt(self) -> str | None:
        """The prebuilt Workload the members name (a StatefulSet's, made from the StatefulSet)."""
        for pod in self.pods:
            if name := labels_of(pod).get(PREBUILT_WORKLOAD_LABEL):
                return str(name)
        return None

    def active(self) -> list[dict[str, Any]]:
        return [p for p in self.pods if runnable_or_succeeded(p)]

    def deleting(self) -> bool:
        return not self.pods

    def is_suspended(self) -> bool:
        return any(suspended(p) for p in self.pods)

    def finished(self) -> tuple[bool, bool, str]:
        if self.serving():
            return False, False, ""  # upstream: a serving group never finishes by itself
        total = self.total()
        succeeded = sum(1 for p in self.pods if phase(p) == "Succeeded")
        unretriable = any(annotations_of(p).get(RETRIABLE_IN_GROUP) == "false" for p in self.pods)
        active = any(not terminated(p) for p in self.pods)
        if total and (succeeded == total or (not active and unretriable)):
            return True, True, f"Pods succeeded: {succeeded}/{total}."
        return False, False, ""

    def lingering_pods(self) -> tuple[str, ...]:
        return ()  # its Pods are watched (and a departed one kept), each counted until it has ended

    def is_active(self) -> bool:
        return any(active(p) for p in (*self.pods, *self.departed))

    def pods_ready(self) -> bool:
        """The whole group is ready: as many members ready (or succeeded) as the group counts."""
        done = sum(1 for p in self.pods if phase(p) == "Succeeded" or (ready(p) and not terminated(p)))
        return bool(self.total()) and done >= self.total()

    def reclaimable_pods(self) -> dict[str, int]:
        if self.serving():
            return {}  # upstream's isReclaimable: a serving group reclaims nothing
        counts: dict[str, int] = {}
        for pod in self.pods:
            if phase(pod) == "Succeeded":
                counts[pod_role(pod)] = counts.get(pod_role(pod), 0) + 1
        return counts

    def build_workload(self) -> dict[str, Any] | None:
        total, active = self.total(), self.active()
        if len(self.totals()) > 1:
            raise ValueError(f"pod group {self.name}: its Pods have different {GROUP_TOTAL_COUNT} values "
                             f"{sorted(self.totals())}")
        if not total:
            raise ValueError(f"pod group {self.name}: {GROUP_TOTAL_COUNT} must be a positive integer")
        if self.prebuilt():
            return None  # made by its owner (a StatefulSet's reconciler): the group waits for it
        queues = {queue_name(p) for p in active}
        if len(queues) > 1:
            raise ValueError(f"pod group {self.name}: its Pods name different queues: {sorted(map(str, queues))}")
        fast = any(annotations_of(p).get(GROUP_FAST_ADMISSION) == "true" for p in active)
        if not active or (len(active) < total and not fast):
            return None  # the group is not all there yet
        members = active[:total]
        roles: dict[str, tuple[dict[str, Any], int]] = {}
        for pod in members:
            role = pod_role(pod)
            first, count = roles.get(role, (pod, 0))
            roles[role] = (first, count + 1)
        if fast and len(members) < total:  # the first Pod stands for the whole group
            role = pod_role(members[0])
            roles = {role: (members[0], total)}
        if len(roles) > 8:
            raise ValueError(f"pod group {self.name}: pod group can't include more than 8 roles")
        built = workload_from_pod(_for_workload(members[0]))
        pod_sets = []
        for role in sorted(roles):
            first, count = roles[role]
            pod_set = workload_from_pod(_for_workload(first))["spec"]["podSets"][0]
            pod_set.update({"name": role, "count": count})
            pod_sets.append(pod_set)
        built["spec"]["podSets"] = pod_sets
        meta = built["metadata"]
        meta["name"] = self.name
        meta.pop("labels", None)  # no single Pod's uid stands for the group
        meta.setdefault("annotations", {})[IS_GROUP_WORKLOAD] = "true"
        meta["ownerReferences"] = [_owner(p) for p in members if meta_of(p).get("uid")]
        return built

    def labelled(self) -> dict[str, Any] | None:
        """A Workload built from the first runnable member, read for the queue and the priority class
        the group names now (upstream reads the Pod it reconciles)."""
        first = next(iter(self.active()), None)
        if first is None:
            return None
        try:
            return workload_from_pod(_for_workload(first))
        except ValueError:
            return None

    def sync_workload(self, workload: Mapping[str, Any]) -> list[Action]:
        """Upstream's FindMatchingWorkloads for a group whose Workload exists: per pod set (role), the
        runnable members beyond its count are deleted (gated and newest first), failed members that
        runnable ones replace lose their finalizer, and every member kept becomes an owner of the
        Workload, so deleting the failed originals never garbage-collects it. A group whose execution
        limit (``max-exec-time-seconds``) no longer matches its Workload's, or none of whose members has
        a role of the Workload (``roles_match``), is stopped and its Workload deleted, to be made anew
        (upstream's equivalence rule for groups). A prebuilt Workload (``prebuilt-workload-name``) is
        compared by roles only, as upstream's group ``EquivalentToWorkload``, and when they no longer
        match it is finished ``OutOfSync`` and the group stopped, never deleted."""
        meta = workload.get("metadata") or {}
        made_by_others = self.prebuilt() is not None
        if self.pods and not made_by_others \
                and (limit := _limit(self.pods[0])) != (workload.get("spec") or {}).get("maximumExecutionTimeSeconds"):
            stop = [] if self.is_suspended() and not self.is_active() else self.stop(workload, False)
            return [*stop, Delete("Workload", meta["namespace"], meta["name"]),
                    Note("workload no longer matches its pod group; replaced", {
                        "object": self.describe(), "why": f"maximumExecutionTimeSeconds {limit}"})]
        kept: list[dict[str, Any]] = []
        excess: list[dict[str, Any]] = []
        replaced: list[dict[str, Any]] = []
        absent = 0
        pod_sets = (workload.get("spec") or {}).get("podSets") or []
        for pod_set in pod_sets:
            count = int(pod_set.get("count", 1))
            role = [p for p in self.pods if pod_role(p) == pod_set.get("name")]
            runnable = sorted((p for p in role if runnable_or_succeeded(p)), key=_keep_first)
            failed = sorted((p for p in role if not runnable_or_succeeded(p)), key=_created)
            absent += max(0, count - len(runnable))
            kept += runnable[:count]
            excess += runnable[count:]
            finalizable = max(0, min(len(failed), len(failed) + len(runnable) - count))
            replaced += failed[:finalizable]  # the oldest failures are the ones replaced
            kept += failed[finalizable:]
        if self.pods and pod_sets and (not kept or not roles_match(workload, _role_counts(kept))):
            # upstream's equivalentToWorkload for a group: no member of a role its Workload has
            if made_by_others:  # ensurePrebuiltWorkloadInSync: never replaced, finished OutOfSync
                return prebuilt.out_of_sync(self, workload)
            stop = [] if self.is_suspended() and not self.is_active() else self.stop(workload, False)
            return [*stop, Delete("Workload", meta["namespace"], meta["name"]),
                    Note("workload no longer matches its pod group; replaced", {
                        "object": self.describe(), "why": "no member has a role of its workload"})]
        actions: list[Action] = []
        owners = list(meta.get("ownerReferences") or [])
        known = {o.get("uid") for o in owners}
        added = [_owner(p) for p in kept if meta_of(p).get("uid") and meta_of(p).get("uid") not in known]
        if added:
            actions += [Patch("Workload", meta["namespace"], meta["name"], {"metadata": {
                            "ownerReferences": owners + added, "resourceVersion": meta.get("resourceVersion")}}),
                        Note("pods added as owners of their group's workload", {
                            "workload": f"{meta['namespace']}/{meta['name']}", "count": str(len(added))})]
        for pod in excess:
            actions += _finalize([pod])
            if not meta_of(pod).get("deletionTimestamp"):
                actions += [Delete(KIND, meta_of(pod)["namespace"], meta_of(pod)["name"]),
                            Event("v1", KIND, meta_of(pod)["namespace"], meta_of(pod)["name"], meta_of(pod).get("uid"),
                                  EXCESS_POD_DELETED, "Excess pod deleted"),
                            Note("excess pod in group deleted", {"pod": _key(pod), "group": self.name})]
        return actions + _finalize(replaced) + _waiting_for_replacements(workload, absent)

    def cleanup(self) -> list[Action]:
        """Pods the group no longer counts (failed and replaced, or deleted before they ran) lose
        their finalizer, so they can go. A member that ran and was deleted (a preempted one, stopped by
        its eviction) keeps it until a replacement makes the group whole again, as upstream's group
        ``Stop`` keeps it: without it the member vanished, and with the group's last member gone so did
        the Workload it owns, which the replacements would have joined. A serving group's (Deployment,
        StatefulSet, LeaderWorkerSet) members go once ended, as their parents' Pod reconcilers do."""
        total, active = self.total(), self.active()
        gone = [p for p in self.pods if not runnable_or_succeeded(p)]
        replaced = gone if len(active) >= total else []
        ended = terminated if self.serving() else (lambda p: False)
        deleted = [p for p in self.pods if meta_of(p).get("deletionTimestamp") and (gated(p) or ended(p))]
        return _finalize({_key(p): p for p in [*replaced, *deleted]}.values())

    def suspend(self) -> list[Action]:
        actions: list[Action] = []
        for pod in self.pods:
            if not suspended(pod) and not meta_of(pod).get("deletionTimestamp"):
                actions += _terminate(pod, "NoMatchingWorkload", "Missing Workload; unable to restore pod templates")
        return actions

    def run(self, infos: Sequence[Mapping[str, Any]], workload: Mapping[str, Any]) -> list[Action]:
        if dispatched(workload):
            return []
        by_role = {info["name"]: info for info in infos}

        def info_of(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
            return by_role.get(pod_role(pod)) or (infos[0] if len(infos) == 1 else None)

        # The admission holds quota for `count` Pods of each role: a Pod beyond that (one more member
        # created while the group runs) stays gated, so the group never runs more than it holds.
        free = {info["name"]: info.get("count") for info in infos}
        for pod in self.pods:
            info = info_of(pod)
            if info is not None and not gated(pod) and runnable_or_succeeded(pod) and free[info["name"]] is not None:
                free[info["name"]] -= 1
        actions: list[Action] = []
        for pod in self.pods:
            if not gated(pod) or meta_of(pod).get("deletionTimestamp"):
                continue
            info = info_of(pod)
            if info is None:
                actions.append(Note("pod of no admitted role left gated", {"pod": _key(pod)}, warning=True))
                continue
            if free[info["name"]] is not None and free[info["name"]] <= 0:
                actions.append(Note("pod beyond its group's admitted count left gated", {"pod": _key(pod)},
                                    warning=True))
                continue
            if free[info["name"]] is not None:
                free[info["name"]] -= 1
            actions.append(_release(pod, info))
        if actions:
            actions.append(Note("pod group started", {"group": f"{self._namespace}/{self.name}"}))
        return actions

    def stop(self, workload: Mapping[str, Any], evicted: bool) -> list[Action]:
        reason, message = _stop_reason(evicted)
        actions: list[Action] = []
        for pod in self.pods:
            if not suspended(pod) and not meta_of(pod).get("deletionTimestamp"):
                actions += _terminate(pod, reason, message, _stop_message(workload, evicted))
        if actions:
            actions.append(Note("pod group stopped", {"group": f"{self._namespace}/{self.name}", "reason": reason}))
        return actions

    def workload_deleted(self, workload: Mapping[str, Any]) -> list[Action]:
        """Upstream's group ``Stop`` for a Workload being deleted: every member not yet being deleted is
        (ended ones too), and all lose Kueue's finalizer, since no Workload is left to wait for. Without
        it a group whose members are deleted while they run (a deleted LeaderWorkerSet's) keeps them
        Terminating, and the Workload they own with them."""
        actions: list[Action] = []
        for pod in self.pods:
            if not meta_of(pod).get("deletionTimestamp"):
                actions += _terminate(pod, WORKLOAD_DELETED, "Workload is deleted")
        actions += _finalize(self.pods)
        if actions:
            actions.append(Note("pod group stopped", {"group": f"{self._namespace}/{self.name}",
                                                      "reason": WORKLOAD_DELETED}))
        return actions

    def finalize(self) -> list[Action]:
        return _finalize(self.pods)


def _role_counts(members: Iterable[Mapping[str, Any]]) -> list[tuple[str, int]]:
    """Upstream's constructGroupPodSets, as (role, count): the runnable or succeeded members per role,
    by role name."""
    counts: dict[str, int] = {}
    for pod in members:
        if runnable_or_succeeded(pod):
            counts[pod_role(pod)] = counts.get(pod_role(pod), 0) + 1
    return sorted(counts.items())


def roles_match(workload: Mapping[str, Any], roles: Sequence[tuple[str, int]]) -> bool:
    """Upstream's equivalentToWorkload for a group: every role the members have is one of the Workload's
    pod sets, in the same order, none with more members than the pod set counts (a finished Workload
    is held to its roles only)."""
    finished = (objects.condition(workload, "Finished") or {}).get("status") == "True"
    have = [(str(p.get("name")), int(p.get("count", 1))) for p in (workload.get("spec") or {}).get("podSets") or []]
    if not finished and len(have) < len(roles):
        return False
    at = 0
    for role, count in roles:
        while at < len(have) and have[at][0] != role:
            at += 1
        if at == len(have):
            return False
        if not finished and have[at][1] < count:
            return False
        at += 1
    return True


def _owner(pod: Mapping[str, Any]) -> dict[str, Any]:
    """A member's reference as an owner of its group's Workload (upstream's SetOwnerReference)."""
    meta = meta_of(pod)
    return {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta.get("uid")}


def _limit(pod: Mapping[str, Any]) -> int | None:
    """The execution limit a member's labels set (None without one, or with one the webhook refuses)."""
    try:
        value = int(labels_of(pod).get(MAX_EXEC_TIME_SECONDS_LABEL) or "")
    except ValueError:
        return None
    return value if value > 0 else None


def _waiting_for_replacements(workload: Mapping[str, Any], absent: int) -> list[Action]:
    """Upstream's WaitingForReplacementPods condition on a group's Workload: True while a pod set has
    fewer runnable members than its count (with the eviction's reason while evicted), False once none
    is missing; never set on a Workload that never missed one."""
    have = objects.condition(workload, WAITING_FOR_REPLACEMENT_PODS)
    if have is None and not absent:
        return []
    if absent:
        evicted = objects.condition(workload, "Evicted")
        if evicted is not None and evicted.get("status") == "True":
            want = (True, str(evicted.get("reason") or ""), str(evicted.get("message") or ""))
        else:
            want = (True, "PodsFailed", "Some Failed pods need replacement")
    else:
        want = (False, "PodsReady", "No pods need replacement")
    if have is not None and (have.get("status") == "True", have.get("reason"), have.get("message")) == want:
        return []
    meta = workload.get("metadata") or {}
    return [WorkloadConditions(meta["namespace"], meta["name"], ((WAITING_FOR_REPLACEMENT_PODS, *want),),
                               meta.get("uid"), manager=REPLACEMENT_MANAGER)]


def _created(pod: Mapping[str, Any]) -> tuple[str, str]:
    return meta_of(pod).get("creationTimestamp") or "", meta_of(pod).get("name") or ""


def _keep_first(pod: Mapping[str, Any]) -> tuple[bool, bool, tuple[str, str]]:
    """Upstream's sortActivePods: keep those with the finalizer, then the released, then the oldest."""
    return FINALIZER not in (meta_of(pod).get("finalizers") or []), gated(pod), _created(pod)


def _for_workload(pod: Mapping[str, Any]) -> dict[str, Any]:
    """The Pod as its Workload's template reads it: without Kueue's gate, the node it was bound to,
    and what the API server filled in for it at creation. Shallow: the Workload's builder copies the
    spec it keeps, and the Pod is built on every reconcile (its equivalence check), so its status and
    managed fields are never copied."""
    meta = {k: v for k, v in meta_of(pod).items() if k != "managedFields"}
    spec = {k: v for k, v in (pod.get("spec") or {}).items() if k not in ("nodeName", "schedulingGates")}
    gates = [g for g in (pod.get("spec") or {}).get("schedulingGates") or [] if g.get("name") != GATE]
    if gates:
        spec["schedulingGates"] = gates
    return {k: v for k, v in pod.items() if k not in ("status", "metadata", "spec")} | {"metadata": meta, "spec": spec}
