"""The job framework's one reconcile rule (upstream's ``JobReconciler.ReconcileGenericJob``,
``pkg/controller/jobframework/reconciler.go``), and the reads of a Workload it is made of.

``reconcile`` reads a ``GenericJob`` and the Workload's cached copy and returns the writes that bring the
two together, in upstream's order (finalize, finish, create, reclaimable pods, pods-ready, stop, start):
``mismatch`` (upstream's EquivalentToWorkload), ``new_queue`` and ``priority_changed`` for a Workload
that no longer follows its job, ``infos_for`` for what an admission injects, ``admitted``,
``releasing``, ``finished_workload`` and ``pods_ready_condition`` for what the Workload says. It does no
I/O, so the rule is tested without a cluster and shared by every kind.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pykueue.jobs import managed
from pykueue.jobs.framework.actions import (
    ERR_WORKLOAD_COMPOSE,
    Action,
    CreateWorkload,
    Delete,
    Event,
    JobStopped,
    Note,
    Patch,
    ReclaimablePods,
    SetPriority,
    Warn,
    WorkloadConditions,
)
from pykueue.jobs.framework.interface import GenericJob, OneObject
from pykueue.jobs.framework.podset import PodSetInfoError, merge_pod_set_info, pod_set_info_from_flavors
from pykueue.jobs.framework.validation import is_dns1123_label
from pykueue.jobs.framework.workload import ELASTIC_JOB_ANNOTATION, Manifest
from pykueue.kube import objects

LOCAL_QUEUE_LABEL = "kueue.x-k8s.io/local-queue-name"  # on an admitted job's pods
CLUSTER_QUEUE_LABEL = "kueue.x-k8s.io/cluster-queue-name"
FINISHED_SUCCEEDED = "Succeeded"
FINISHED_FAILED = "Failed"
FAILED_TO_START = "FailedToStart"  # upstream's FailedToStartFinishedReason
# The PodsReady condition's reasons and messages (upstream's generatePodsReadyCondition)
STARTED, RECOVERED, WAIT_FOR_START, WAIT_FOR_RECOVERY = "Started", "Recovered", "WaitForStart", "WaitForRecovery"
READY_MESSAGE = "All pods reached readiness and the workload is running"
NOT_READY_MESSAGE = "Not all pods are ready or succeeded"
RECOVERY_MESSAGE = "At least one pod has failed, waiting for recovery"


def _event_target(job: GenericJob) -> Mapping[str, Any] | None:
    """The object an event about ``job`` is recorded on: the object itself, or a pod group's first Pod
    (a group is no API object; upstream records on the Pod it reconciles)."""
    obj = getattr(job, "obj", None)
    if obj is None:
        obj = next(iter(getattr(job, "pods", None) or []), None)
    return obj if isinstance(obj, Mapping) else None


# upstream's jobframework event reasons, recorded on the job (Normal)
STARTED_EVENT, STOPPED_EVENT, UPDATED_WORKLOAD, FINISHED_WORKLOAD = "Started", "Stopped", "UpdatedWorkload", "FinishedWorkload"


def job_event(job: GenericJob, reason: str, message: str) -> list[Action]:
    """A Normal Event on the job (upstream's JobReconciler records these on the object it reconciles:
    Started, Stopped, UpdatedWorkload, FinishedWorkload); none when the job has no object to name."""
    target = _event_target(job)
    if target is None:
        return []
    meta = target.get("metadata") or {}
    return [Event(str(target.get("apiVersion") or ""), str(target.get("kind") or ""), str(meta.get("namespace") or ""),
                  str(meta.get("name") or ""), meta.get("uid"), reason, message)]


def _stopped(job: GenericJob, actions: list[Action], message: str) -> list[Action]:
    """``job.stop``'s writes and upstream's Stopped event after them, unless the kind records its own."""
    if any(isinstance(a, Event) and a.reason == STOPPED_EVENT for a in actions) or not actions:
        return actions
    return [*actions, *job_event(job, STOPPED_EVENT, message)]


def _condition_message(workload: Mapping[str, Any], kind: str) -> str | None:
    for cond in (workload.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind and cond.get("status") == "True":
            return str(cond.get("message") or "") or None
    return None


def _is_true(workload: Mapping[str, Any], kind: str) -> bool:
    for cond in (workload.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            return cond.get("status") == "True"
    return False


def pods_ready_condition(job: GenericJob, workload: Mapping[str, Any]) -> tuple[bool, str, str]:
    """Upstream's ``generatePodsReadyCondition``: (status, reason, message) of the PodsReady condition
    the job's state calls for. Not admitted (yet, or any more): WaitForStart. Ready: Started, or
    Recovered after a WaitForRecovery. Not ready: WaitForStart until it has once been ready, then
    WaitForRecovery."""
    if not admitted(workload):
        return False, WAIT_FOR_START, NOT_READY_MESSAGE
    current = objects.condition(workload, "PodsReady")
    reason = (current or {}).get("reason")
    if job.pods_ready():
        return True, RECOVERED if reason in (WAIT_FOR_RECOVERY, RECOVERED) else STARTED, READY_MESSAGE
    if current is not None and (current.get("status") == "True" or reason == WAIT_FOR_RECOVERY):
        return False, WAIT_FOR_RECOVERY, RECOVERY_MESSAGE
    return False, WAIT_FOR_START, NOT_READY_MESSAGE


def _pods_ready_update(job: GenericJob, workload: Mapping[str, Any]) -> list[Action]:
    """The PodsReady condition, written when its status or reason differs from the Workload's."""
    ready, reason, message = pods_ready_condition(job, workload)
    current = objects.condition(workload, "PodsReady") or {}
    if current.get("status") == ("True" if ready else "False") and current.get("reason") == reason:
        return []
    meta = workload["metadata"]
    return [WorkloadConditions(meta["namespace"], meta["name"], (("PodsReady", ready, reason, message),), meta.get("uid"))]


def finished_workload(workload: Mapping[str, Any]) -> bool:
    return _is_true(workload, "Finished")


def admitted(workload: Mapping[str, Any]) -> bool:
    return _is_true(workload, "Admitted") and bool((workload.get("status") or {}).get("admission"))


def releasing(workload: Mapping[str, Any]) -> bool:
    """A reservation being given up: evicted, or the Workload being deleted, with quota still reserved."""
    if not (workload.get("status") or {}).get("admission") or not _is_true(workload, "QuotaReserved"):
        return False
    return _is_true(workload, "Evicted") or bool((workload.get("metadata") or {}).get("deletionTimestamp"))


def infos_for(workload: Mapping[str, Any], flavors: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """What the admission injects into each pod set (upstream's getPodSetsInfoFromStatus): its flavors'
    node labels and tolerations, (upstream's AssignQueueLabelsForPods, on by default) the LocalQueue's
    name and the ClusterQueue's, the latter only when it is a valid label value (a DNS-1123 label), then
    each admission check's ``podSetUpdates`` for it. An update that contradicts what is already there
    raises ``PodSetInfoError`` naming the check: a permanent error."""
    infos = []
    admission = workload["status"]["admission"]
    checks = (workload.get("status") or {}).get("admissionChecks") or []
    queues = {LOCAL_QUEUE_LABEL: str((workload.get("spec") or {}).get("queueName") or "")}
    cluster_queue = str(admission.get("clusterQueue") or "")
    if is_dns1123_label(cluster_queue):
        queues[CLUSTER_QUEUE_LABEL] = cluster_queue
    for assignment in admission.get("podSetAssignments") or []:
        names = list(dict.fromkeys((assignment.get("flavors") or {}).values()))
        found = [flavors[n] for n in names if n in flavors]
        info = pod_set_info_from_flavors(found, name=assignment.get("name", "main"), count=assignment.get("count"))
        info["labels"].update(queues)
        for check in checks:
            update = next((u for u in check.get("podSetUpdates") or [] if u.get("name") == info["name"]), None)
            if update is None:
                continue
            try:
                info = merge_pod_set_info(info, update)
            except PodSetInfoError as exc:
                raise PodSetInfoError(f'in admission check "{check.get("name")}": {exc}') from exc
        infos.append(info)
    return infos




def _requests(pod_set: Mapping[str, Any]) -> list[tuple[Any, Any]]:
    spec = (pod_set.get("template") or {}).get("spec") or {}
    return [(c.get("name"), (c.get("resources") or {}).get("requests") or {})
            for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]]


def _built(job: GenericJob, problems: list[str] | None = None) -> Manifest | None:
    """The Workload the job stands for now, or None when it cannot be turned into one (why is added
    to ``problems``)."""
    try:
        return job.build_workload()
    except ValueError as exc:
        if problems is not None:
            problems.append(str(exc))
        return None


def _wanted(job: GenericJob, problems: list[str]) -> Manifest | None:
    """What the job asks of its Workload now: the whole Workload for a kind compared in full, else
    one that names its queue and priority class (a pod group's)."""
    return _built(job, problems) if job.compared_whole else job.labelled()


def mismatch(job: GenericJob, built: Manifest, workload: Mapping[str, Any]) -> str | None:
    """How the job (``built``: its Workload as it would be made now) no longer matches its Workload
    (pod sets, counts, minCount, requests, execution limit), or None. A running job is compared with
    what its admission runs (a partial admission runs fewer pods than the Workload asks for), as
    upstream's expectedRunningPodSets."""
    want, have = built["spec"]["podSets"], (workload.get("spec") or {}).get("podSets") or []
    if not have:
        return None  # no pod sets to compare with (a Workload always has some)
    if [p.get("name") for p in want] != [p.get("name") for p in have]:
        return "its pod sets changed"
    running: dict[str, Any] = {}
    elastic = ((workload.get("metadata") or {}).get("annotations") or {}).get(ELASTIC_JOB_ANNOTATION) == "true"
    if admitted(workload) and not job.is_suspended():
        running = {a.get("name"): a.get("count") for a in workload["status"]["admission"].get("podSetAssignments") or []}
    for w, h in zip(want, have, strict=True):
        count = running.get(h.get("name")) or h.get("count", 1)
        if w.get("count", 1) != count and not elastic:  # an elastic job's slices follow its size (``slicing``)
            return f"pod set {w.get('name')}: count {w.get('count', 1)}, the Workload's {count}"
        if w.get("minCount") != h.get("minCount"):
            return f"pod set {w.get('name')}: minCount changed"
        if _requests(w) != _requests(h):
            return f"pod set {w.get('name')}: resource requests changed"
    if built["spec"].get("maximumExecutionTimeSeconds") != (workload.get("spec") or {}).get("maximumExecutionTimeSeconds"):
        return "maximumExecutionTimeSeconds changed"
    return None


def new_queue(job: GenericJob, built: Manifest, workload: Mapping[str, Any]) -> str | None:
    """The queue a suspended job's label names now, when its Workload (holding no quota) names another."""
    if not job.is_suspended() or (workload.get("status") or {}).get("admission"):
        return None
    queue = built["spec"].get("queueName")
    return queue if queue and queue != (workload.get("spec") or {}).get("queueName") else None


_WORKLOAD_CLASS = "WorkloadPriorityClass"


def _workload_class(ref: Mapping[str, Any] | None) -> str:
    return str(ref.get("name") or "") if ref and ref.get("kind") == _WORKLOAD_CLASS else ""


def priority_changed(built: Manifest, workload: Mapping[str, Any]) -> bool:
    """Upstream's UpdateWorkloadPriority: the job's ``kueue.x-k8s.io/priority-class`` label names another
    WorkloadPriorityClass than its Workload, whose priority came from such a class or from nothing.
    Running or not: a new priority moves a pending workload in its queue and changes whom a holder may
    preempt or be preempted by."""
    have = (workload.get("spec") or {}).get("priorityClassRef")
    if have and have.get("kind") != _WORKLOAD_CLASS:
        return False  # from a pod PriorityClass: the label never overrides it after creation
    return _workload_class(built["spec"].get("priorityClassRef")) != _workload_class(have)


def source_objects(job: GenericJob) -> list[Mapping[str, Any]]:
    """The API objects behind ``job``: its own, or a pod group's Pods."""
    if isinstance(job, OneObject):
        return [job.obj]
    return list(getattr(job, "pods", ()))


def with_labels(built: Manifest, job: GenericJob, label_keys: Sequence[str]) -> Manifest:
    """The Workload with the job's ``integrations.labelKeysToCopy`` labels (ValueError: they disagree)."""
    copied = managed.copied_labels(source_objects(job), label_keys)
    if copied:
        built["metadata"]["labels"] = {**copied, **(built["metadata"].get("labels") or {})}
    return built


def reconcile(job: GenericJob, workload: Mapping[str, Any] | None,
              flavors: Mapping[str, Mapping[str, Any]], label_keys: Sequence[str] = (), *,
              wait_for_pods_ready: bool = False) -> list[Action]:
    """The writes that make ``job`` follow ``workload`` (None when there is none yet), in upstream's order;
    ``label_keys`` is ``integrations.labelKeysToCopy``. The PodsReady condition is Kueue's to write only
    under ``waitForPodsReady``, as upstream's.

    A job whose Workload exists but which can no longer be turned into one (changed while the
    validating webhook was away) keeps its Workload as it is, and a Warning event on the job and on
    its Workload says why."""
    problems: list[str] = []
    actions = _reconcile(job, workload, flavors, problems, wait_for_pods_ready, label_keys)
    if workload is None or not problems:
        return actions
    target = _event_target(job)
    warnings = [Warn(obj, ERR_WORKLOAD_COMPOSE, problems[0]) for obj in (target, workload) if obj is not None]
    return [*warnings, *actions]


def _reconcile(job: GenericJob, workload: Mapping[str, Any] | None, flavors: Mapping[str, Mapping[str, Any]],
               problems: list[str], wait_for_pods_ready: bool, label_keys: Sequence[str]) -> list[Action]:
    if workload is not None and releasing(workload) and not _is_true(workload, "Finished"):
        # Upstream's steps 1.1 and 6: stop the job first; its quota goes once nothing of it runs.
        meta = workload["metadata"]
        if job.deleting():
            actions = job.finalize()
        elif meta.get("deletionTimestamp"):  # upstream's step 1.1 comes before eviction's
            actions = job.workload_deleted(workload)
        else:
            actions = job.stop(workload, _is_true(workload, "Evicted"))
            if not job.is_suspended():
                actions = _stopped(job, actions, _condition_message(workload, "Evicted") or "Workload is evicted")
        if (job.is_suspended() or job.deleting()) and not job.is_active():
            # Seen stopped in the cache (suspended, so nothing will start it again), nothing active.
            actions.append(JobStopped(meta["namespace"], meta["name"], job.lingering_pods()))
        return actions
    if job.deleting():
        return job.finalize()
    if workload is not None and _is_true(workload, "Finished"):
        return job.finalize()
    if workload is not None and (workload.get("metadata") or {}).get("deletionTimestamp"):
        return job.workload_deleted(workload)  # going: a new one is made once it is gone
    if workload is not None and (synced := job.sync_workload(workload)):
        return synced
    if workload is not None and (built := _wanted(job, problems)) is not None:
        meta = workload["metadata"]
        if job.compared_whole and (why := mismatch(job, built, workload)) is not None:
            # Upstream's ensureOneWorkload: a running job is stopped, the Workload deleted (its quota counts
            # until the job has stopped and it is gone) and a new one made for the job as it is now.
            stop = [] if job.is_suspended() else job.stop(workload, False)
            return [*stop, Delete("Workload", meta["namespace"], meta["name"]),
                    Note("workload no longer matches its job; replaced", {"object": job.describe(), "why": why})]
        if (queue := new_queue(job, built, workload)) is not None:
            # Upstream updates a suspended job's Workload in place: it keeps its place (creation time).
            return [Patch("Workload", meta["namespace"], meta["name"], {"spec": {"queueName": queue}}),
                    Note("job changed queues; workload updated", {"object": job.describe(), "queue": queue}),
                    *job_event(job, UPDATED_WORKLOAD, "Updated not matching Workload for suspended job: "
                               f"{meta['namespace']}/{meta['name']}")]
        if priority_changed(built, workload):
            ref = built["spec"].get("priorityClassRef")
            return [SetPriority(meta["namespace"], meta["name"], meta.get("uid"), ref),
                    Note("job changed priority class; workload updated",
                         {"object": job.describe(), "class": _workload_class(ref) or "(default)"}),
                    *job_event(job, UPDATED_WORKLOAD, f"Updated workload priority class: {meta['namespace']}/{meta['name']}")]
    cleanup = job.cleanup()
    if cleanup:
        return cleanup
    finished, succeeded, message = job.finished()
    if workload is None:
        if finished:
            return job.finalize()
        try:
            built = job.build_workload()
            if built is not None and label_keys:
                built = with_labels(built, job, label_keys)
        except ValueError as exc:
            note = Note("cannot be queued", {"object": job.describe(), "error": str(exc)}, warning=True)
            target = _event_target(job)
            return [note] if target is None else [note, Warn(target, ERR_WORKLOAD_COMPOSE, str(exc))]
        if built is None:
            return []
        return ([] if job.is_suspended() else job.suspend()) + [CreateWorkload(built, job.describe())]
    meta = workload["metadata"]
    namespace, name, uid = meta["namespace"], meta["name"], meta.get("uid")
    if finished:
        reason = FINISHED_SUCCEEDED if succeeded else FINISHED_FAILED
        return [WorkloadConditions(namespace, name, (("Finished", True, reason, message),), uid),
                *job_event(job, FINISHED_WORKLOAD, f"Workload '{namespace}/{name}' is declared finished"),
                *job.finalize()]
    reclaimable = job.reclaimable_pods()
    recorded = {p.get("name"): p.get("count") for p in (workload.get("status") or {}).get("reclaimablePods") or []}
    if reclaimable != recorded:
        return [ReclaimablePods(namespace, name, reclaimable, uid)]
    suspended = job.is_suspended()
    ready = _pods_ready_update(job, workload) if wait_for_pods_ready else []
    if admitted(workload):
        if suspended:
            try:
                started = job.run(infos_for(workload, flavors), workload)
                cq = ((workload.get("status") or {}).get("admission") or {}).get("clusterQueue")
                return ready + started + (job_event(job, STARTED_EVENT, f"Admitted by clusterQueue {cq}") if started else [])
            except PodSetInfoError as exc:
                # upstream's podset.IsPermanent: no retry can start it, so the Workload finishes (its quota goes)
                return [WorkloadConditions(namespace, name, (("Finished", True, FAILED_TO_START, str(exc)),), uid),
                        Note("cannot start: the admission conflicts with its template",
                             {"object": job.describe(), "error": str(exc)}, warning=True)]
        return ready
    evicted = _is_true(workload, "Evicted")
    if not suspended or evicted:
        stop = job.stop(workload, evicted)
        return ready + (_stopped(job, stop, _condition_message(workload, "Evicted") or "Not admitted by cluster queue")
                        if not suspended else stop)
    return ready
