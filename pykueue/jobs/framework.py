"""The job framework: one interface every integration implements, and one reconcile rule that drives them.

Upstream keeps each integration behind ``jobframework.GenericJob`` and one ``JobReconciler``; here the
same split is pure. An integration wraps the API objects it manages (a Job, a Pod, the Pods of a group)
in a ``GenericJob``; ``reconcile`` reads it and the Workload's cached copy and returns the writes that
bring the two together, in upstream's order (finalize, finish, create, reclaimable pods, pods-ready,
stop, start). The controller carries the writes out (``pykueue.controller.jobs``); this module does no
I/O, so the rule is tested without a cluster and shared by every kind.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from pykueue.jobs import managed
from pykueue.jobs.batch import (
    ELASTIC_JOB_ANNOTATION,
    Manifest,
    PodSetInfoError,
    is_dns1123_label,
    merge_pod_set_info,
    pod_set_info_from_flavors,
    pod_set_info_from_pod_set,
)
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


# ---- the writes ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CreateWorkload:
    """Create this Workload (its priority is resolved by the caller, who knows the classes)."""

    manifest: Manifest
    owner: str  # "Kind ns/name", for the log line


@dataclass(frozen=True, slots=True)
class WorkloadConditions:
    """Set these conditions (type, status, reason, message) on the Workload's status."""

    namespace: str
    name: str
    conditions: tuple[tuple[str, bool, str, str], ...]
    uid: str | None = None  # the Workload's, named in the write
    # a field manager of their own (server-side apply): another condition's write never drops these
    manager: str | None = None


@dataclass(frozen=True, slots=True)
class ReclaimablePods:
    namespace: str
    name: str
    pods: Mapping[str, int]
    uid: str | None = None  # the Workload's, named in the write


@dataclass(frozen=True, slots=True)
class Patch:
    """A JSON merge patch (``json=False``) or RFC 6902 patch (``json=True``) of one object."""

    kind: str
    namespace: str
    name: str
    body: Any
    subresource: str | None = None
    json: bool = False
    missing_ok: bool = False  # a 404 means the write is moot (the object is gone)


@dataclass(frozen=True, slots=True)
class Replace:
    """Replace the object: with ``obj`` (built from the cached copy, whose resourceVersion guards the
    write), or with what ``change`` makes of a fresh copy read just before writing."""

    kind: str
    namespace: str
    name: str
    obj: dict[str, Any] | None = None
    change: Callable[[dict[str, Any]], dict[str, Any]] | None = None


@dataclass(frozen=True, slots=True)
class Delete:
    kind: str
    namespace: str
    name: str


@dataclass(frozen=True, slots=True)
class SetPriority:
    """Give the Workload the priority class its job names now (``ref``, unresolved: None for the
    default); the caller resolves the value, as for ``CreateWorkload``."""

    namespace: str
    name: str
    uid: str | None
    ref: Mapping[str, str] | None


@dataclass(frozen=True, slots=True)
class JobStopped:
    """Nothing of the job runs any more while its Workload still holds an evicted (or deleted)
    reservation: the quota can be released (upstream clears the admission at this point).
    ``lingering``: label selectors of the job's Pods that its status does not count (a Ray cluster's,
    which KubeRay has asked to be deleted when it reports the cluster suspended): the controller lists
    them first, and releases only once none of them may still run. Beyond upstream, which releases at
    the suspended state while those Pods may be terminating."""

    namespace: str
    name: str
    lingering: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Event:
    """A Kubernetes Event on an object the integration manages (upstream's recorder, e.g. ``Stopped``)."""

    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str | None
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class Note:
    """A log line (and nothing else): what the integration did or why it did nothing."""

    message: str
    fields: Mapping[str, str] = field(default_factory=dict)
    warning: bool = False


@dataclass(frozen=True)
class Warn:
    """A Warning event on the submitted object: what its owner must fix before Kueue can queue it
    (upstream's ``ErrWorkloadCompose``), shown by ``kubectl describe`` and not only in the log."""

    obj: Mapping[str, Any]
    reason: str
    message: str


ERR_WORKLOAD_COMPOSE = "ErrWorkloadCompose"  # jobframework.ReasonErrWorkloadCompose

Action = (CreateWorkload | WorkloadConditions | ReclaimablePods | Patch | Replace | Delete | SetPriority | JobStopped
          | Event | Note | Warn)


# ---- the interface ---------------------------------------------------------------------------------


class GenericJob(Protocol):
    """What an integration tells the reconciler about the objects it manages (upstream's GenericJob)."""

    kind: str  # the submitted object's kind, for log lines
    # its Workload is checked against it on every reconcile (upstream's EquivalentToWorkload): every
    # one-object kind (a single Pod's spec is immutable but for what Kueue itself changes, so what
    # differs is its labels); a pod group is matched by its own rule (``sync_workload``, upstream's
    # FindMatchingWorkloads for a group) and read only for its queue and priority class (``labelled``)
    compared_whole: bool

    @property
    def namespace(self) -> str: ...

    def describe(self) -> str:
        """``Kind ns/name`` for log lines."""

    def workload_name(self) -> str:
        """The name of the Workload that stands for it."""

    def deleting(self) -> bool:
        """Gone or going: only its finalizers are left to remove."""

    def is_suspended(self) -> bool:
        """No pod of it may run (a suspended Job, gated or terminated Pods)."""

    def finished(self) -> tuple[bool, bool, str]:
        """(finished, succeeded, message)."""

    def is_active(self) -> bool:
        """Some pod of it may still run (upstream's IsActive): quota it holds after an eviction is
        released only once this is False."""

    def pods_ready(self) -> bool: ...

    def reclaimable_pods(self) -> dict[str, int]: ...

    def build_workload(self) -> Manifest | None:
        """The Workload to create, or None while it cannot be built yet (a pod group still arriving).
        Raises ValueError (with the reason) for an object that can never be queued."""

    def suspend(self) -> list[Action]:
        """Stop a running object that has no Workload yet."""

    def run(self, infos: Sequence[Mapping[str, Any]], workload: Mapping[str, Any]) -> list[Action]:
        """Start it with the admitted pod sets' node selectors and tolerations."""

    def stop(self, workload: Mapping[str, Any], evicted: bool) -> list[Action]:
        """Stop it because its Workload is not (or no longer) admitted; restore what ``run`` injected."""

    def workload_deleted(self, workload: Mapping[str, Any]) -> list[Action]:
        """Stop it because its Workload is being deleted (upstream's stop with reason WorkloadDeleted)."""
        ...

    def finalize(self) -> list[Action]:
        """Remove the finalizers that kept its objects until the Workload was updated."""

    def cleanup(self) -> list[Action]:
        """Writes due whatever the Workload says (a group's replaced Pods losing their finalizer)."""

    def sync_workload(self, workload: Mapping[str, Any]) -> list[Action]:
        """Writes that keep an existing Workload and the objects behind it matched (upstream's
        ComposableJob FindMatchingWorkloads: a pod group's excess Pods go, its members own it)."""

    def labelled(self) -> Manifest | None:
        """For a job not ``compared_whole``: a Workload built only to read the queue and the
        priority class the job names now (a pod group's: one member's), or None."""

    def lingering_pods(self) -> tuple[str, ...]:
        """Label selectors of its Pods that may outlive what its status says (``JobStopped.lingering``);
        none for kinds whose status counts terminating Pods (a Job's ``status.terminating``) or whose
        Pods Kueue watches itself."""


class OneObject:
    """The part of a GenericJob that stands for one API object (a Job, a Pod, a RayCluster ...): its
    namespace, how log lines name it, and whether it is being deleted. ``api_version``: what an owner
    reference to it says when the object came without one (a list's items); ``sliced``: an elastic one's
    Workloads are slices (ElasticJobsViaWorkloadSlices), which the controller keeps."""

    kind: str
    api_version: str
    compared_whole = True
    sliced = False

    def __init__(self, obj: dict[str, Any]) -> None:
        self.obj = obj
        self.meta = obj["metadata"]
        # the names of objects it controlled that are gone (a RayJob's deleted RayClusters), whose Pods
        # may still be terminating: set by the controller's index of its children
        self.ended_children: tuple[str, ...] = ()

    def lingering_pods(self) -> tuple[str, ...]:
        return ()

    @property
    def namespace(self) -> str:
        return self.meta["namespace"]

    def describe(self) -> str:
        return f"{self.kind} {self.namespace}/{self.meta['name']}"

    def deleting(self) -> bool:
        return bool(self.meta.get("deletionTimestamp"))

    def sync_workload(self, workload: Mapping[str, Any]) -> list[Action]:
        return []  # one object, one owner: nothing to keep matched beyond the equivalence check

    def labelled(self) -> Manifest | None:
        return None  # compared_whole: the whole Workload is built and compared

    def gated_pods_selector(self) -> str | None:
        """The label selector of its pods that may wait at the elastic-job gate (``sliced`` kinds)."""
        return None

    def slice_pod_set(self, pod: Mapping[str, Any], names: list[str]) -> str | None:
        """Which of its Workload's pod sets (``names``) a pod of it counts in (``sliced`` kinds)."""
        return None

    def slicing_annotations(self) -> dict[str, str]:
        """What an elastic job sized by something live records of it on itself before its slices are
        decided (a RayJob's live cluster); nothing for most kinds. May raise ValueError."""
        return {}

    def stop(self, workload: Mapping[str, Any], evicted: bool) -> list[Action]:
        raise NotImplementedError

    def workload_deleted(self, workload: Mapping[str, Any]) -> list[Action]:
        return self.stop(workload, False)  # one object: stopped as for a Workload not admitted


class SuspendFlag(OneObject):
    """A kind Kueue stops through its own ``spec.suspend`` (a Job, a RayCluster, a RayJob)."""

    def is_suspended(self) -> bool:
        return bool((self.obj.get("spec") or {}).get("suspend"))


class TemplatesBySuspend(SuspendFlag):
    """A custom resource started by writing each pod set's flavors into its own template and stopped by
    ``spec.suspend`` with the templates restored (a RayCluster, a RayJob, a JobSet): the kind says how
    its templates take the pod sets' infos (``with_pod_sets_info``); no finalizer of Kueue's."""

    def with_pod_sets_info(self, obj: Mapping[str, Any], infos: Sequence[Mapping[str, Any]], *,
                           restore: bool) -> dict[str, Any]:
        raise NotImplementedError

    def suspend(self) -> list[Action]:
        # no webhook suspended it: stop it before its operator makes its Pods
        return [Patch(self.kind, self.namespace, self.meta["name"], {"spec": {"suspend": True}}),
                Note("suspended until its workload is admitted", {"object": self.describe()})]

    def run(self, infos: Sequence[Mapping[str, Any]], workload: Mapping[str, Any]) -> list[Action]:
        started = self.with_pod_sets_info(self.obj, infos, restore=False)
        return [Replace(self.kind, self.namespace, self.meta["name"], obj=started),
                Note("started", {"object": self.describe()})]

    def stop(self, workload: Mapping[str, Any], evicted: bool) -> list[Action]:
        if self.is_suspended():
            return []
        pod_sets = (workload.get("spec") or {}).get("podSets") or []
        infos = [pod_set_info_from_pod_set(p) for p in pod_sets]
        return [Replace(self.kind, self.namespace, self.meta["name"],
                        change=lambda fresh: self.with_pod_sets_info(fresh, infos, restore=True)),
                Note("suspended: its workload is not admitted", {"object": self.describe()})]

    def finalize(self) -> list[Action]:
        return []

    def cleanup(self) -> list[Action]:
        return []


# ---- the rule ----------------------------------------------------------------------------------------


def _event_target(job: GenericJob) -> Mapping[str, Any] | None:
    """The object an event about ``job`` is recorded on: the object itself, or a pod group's first Pod
    (a group is no API object; upstream records on the Pod it reconciles)."""
    obj = getattr(job, "obj", None)
    if obj is None:
        obj = next(iter(getattr(job, "pods", None) or []), None)
    return obj if isinstance(obj, Mapping) else None


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
                    Note("job changed queues; workload updated", {"object": job.describe(), "queue": queue})]
        if priority_changed(built, workload):
            ref = built["spec"].get("priorityClassRef")
            return [SetPriority(meta["namespace"], meta["name"], meta.get("uid"), ref),
                    Note("job changed priority class; workload updated",
                         {"object": job.describe(), "class": _workload_class(ref) or "(default)"})]
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
        return [WorkloadConditions(namespace, name, (("Finished", True, reason, message),), uid)] + job.finalize()
    reclaimable = job.reclaimable_pods()
    recorded = {p.get("name"): p.get("count") for p in (workload.get("status") or {}).get("reclaimablePods") or []}
    if reclaimable != recorded:
        return [ReclaimablePods(namespace, name, reclaimable, uid)]
    suspended = job.is_suspended()
    ready = _pods_ready_update(job, workload) if wait_for_pods_ready else []
    if admitted(workload):
        if suspended:
            try:
                return ready + job.run(infos_for(workload, flavors), workload)
            except PodSetInfoError as exc:
                # upstream's podset.IsPermanent: no retry can start it, so the Workload finishes (its quota goes)
                return [WorkloadConditions(namespace, name, (("Finished", True, FAILED_TO_START, str(exc)),), uid),
                        Note("cannot start: the admission conflicts with its template",
                             {"object": job.describe(), "error": str(exc)}, warning=True)]
        return ready
    evicted = _is_true(workload, "Evicted")
    if not suspended or evicted:
        return ready + job.stop(workload, evicted)
    return ready
