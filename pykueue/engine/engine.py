"""The admission engine's incremental interface: objects in, scheduling cycles on demand, events out.

The simulator, the embedded control plane and the Kubernetes controller all drive this one class: they
apply and delete objects as they change, report workloads that finished, and call ``schedule(now)``.
The engine never reads a clock or does I/O: time is whatever ``now`` the caller passes, an integer
number of microseconds (``model.US``) on the caller's clock, and every time it returns is one too.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from types import MappingProxyType

from pykueue.engine import events as ev
from pykueue.engine import hierarchy, model, slices
from pykueue.engine.cluster import ClusterQueueState, CohortState
from pykueue.engine.events import Event
from pykueue.engine.fair_sharing import drs, weighted_share
from pykueue.engine.host import SchedulingHost
from pykueue.engine.model import seconds_to_us
from pykueue.engine.preemption import ClusterState, Preemptor, add_workload_usage, remove_workload_usage
from pykueue.engine.queue_manager import QueueManager
from pykueue.engine.quota import FR, available, potential_available
from pykueue.engine.scheduler import Scheduler, applicable_checks
from pykueue.engine.selectors import selector_matches
from pykueue.engine.status import (
    ClusterQueueStatus,
    CohortStatus,
    LocalQueueStatus,
    QuotaAvailability,
    WorkloadStatus,
)
from pykueue.engine.timers import Deadline, Timers
from pykueue.engine.workload import (
    DEACTIVATED,
    MISCONFIGURED,
    ON_HOLD,
    PENDING_EVALUATION,
    SUSPENDED,
    Shared,
    State,
    WorkloadInfo,
    new_stamps,
    scheduling_hash,
    usage_of,
)

METADATA_NAME = "kubernetes.io/metadata.name"


# upstream's StatefulSet reconciler's words, putting its Workload on hold and letting it go
ON_HOLD_MESSAGE = "StatefulSet scaled to zero; workload on hold"
NO_LONGER_ON_HOLD = "Workload no longer on hold; waiting for quota reservation"


@dataclass(slots=True)
class Stop:
    """What follows once the job of an evicted (or deleted) workload has stopped: until then the
    workload holds its quota (``State.STOPPING``)."""

    reason: str  # the eviction's reason (the Requeued event's, once requeued)
    message: str
    requeue: bool
    requeue_at: int | None  # the end of its requeuing backoff, if any
    deactivate: bool = False  # it goes Inactive, not Pending
    deleting: bool = False  # the Workload is being deleted: its usage counts until it is gone
    stopped: bool = False  # deleting, and its job has stopped


class Engine(SchedulingHost):
    """All queues, quota and workloads of one Kueue installation."""

    def __init__(self, config: model.Config | None = None, *, jobs_stop_at_once: bool = True) -> None:
        self.config = config or model.Config()
        # The simulator's jobs stop at the decision that evicts them; a live cluster's take time, and
        # their quota stays held (State.STOPPING) until the driver reports them stopped (job_stopped).
        self.jobs_stop_at_once = jobs_stop_at_once
        self.stopping: dict[str, Stop] = {}
        # Preemptors whose victims' jobs are still stopping: they wait for them, admitting nothing and
        # preempting no one else, as upstream's preemptor waits for its evicted targets.
        self.awaiting: dict[str, set[str]] = {}
        self._preempted_by: dict[str, str] = {}
        self.flavors: dict[str, model.ResourceFlavor] = {}
        self.cqs: dict[str, ClusterQueueState] = {}
        self.cohorts: dict[str, CohortState] = {}
        self.local_queues: dict[str, model.LocalQueue] = {}
        self.namespaces: dict[str, model.Namespace] = {}
        self.admission_checks: dict[str, model.AdmissionCheck] = {}
        self.workloads: dict[str, WorkloadInfo] = {}
        # (pending, reserving, admitted) per NAMESPACE/LOCALQUEUE, kept as workloads move: the
        # LocalQueue statuses read it instead of walking every workload
        self._lq_counts: dict[str, list[int]] = {}
        self.state = ClusterState(self.cqs, self.cohorts, self.config)
        self.preemptor = Preemptor(self.state)
        self.scheduler = Scheduler(self)
        self._seq = 0
        self._stamps = new_stamps()  # per engine: two engines in one process never share a counter
        self.shared = Shared()  # equal hashes, keys and admissions stored once (see workload.Shared)
        self._events: list[Event] = []
        # Reservations given back with no event (a queue deleted or held while its checks were
        # pending): a live driver writes their release before any reservation the freed quota allows
        # (``take_quiet_releases``). Live workloads' keys only: a deleted one leaves it.
        self._quiet_releases: set[str] = set()
        self.queues = QueueManager(self.cqs, self.local_queues, self.workloads)
        self.timers = Timers()  # pods-ready and maximum-execution deadlines (backoffs: the queue manager)
        self._terminating: set[str] = set()  # deleted ClusterQueues still held for their workloads
        self._bulk = 0  # inside bulk(): structure and queue refreshes wait until the end
        self.reason_watch: set[WorkloadInfo] | None = None  # see watch_reasons
        self._bulk_dirty = False

    def reset(self) -> None:
        """Forget everything: the driver applies its objects again (a rebuild after a failure inside
        the engine), the same object kept so every holder of it sees the new state."""
        self.__init__(self.config, jobs_stop_at_once=self.jobs_stop_at_once)  # type: ignore[misc]

    @contextmanager
    def bulk(self) -> Iterator[None]:
        """Apply many objects at once (start-up, a resync): rebuild the cohort forest once at the end."""
        self._bulk += 1
        try:
            yield
        finally:
            self._bulk -= 1
            if self._bulk == 0 and self._bulk_dirty:
                self._bulk_dirty = False
                self._structure_changed()

    def watch_reasons(self) -> set[WorkloadInfo]:
        """Start collecting the workloads whose QuotaReserved=False reason may have changed (a driver
        that records reasons over time reads ``condition_of`` for just these, then clears the set)."""
        if self.reason_watch is None:
            self.reason_watch = set(self.workloads.values())
            for info in self.workloads.values():
                info.watch = self.reason_watch
        return self.reason_watch

    # ------------------------------------------------------------------------------------ objects

    def apply_resource_flavor(self, rf: model.ResourceFlavor) -> None:
        self.flavors[rf.name] = rf
        self._structure_changed()

    def delete_resource_flavor(self, name: str) -> None:
        self.flavors.pop(name, None)
        self._structure_changed()

    def apply_namespace(self, ns: model.Namespace) -> None:
        labels = dict(ns.labels)
        labels.setdefault(METADATA_NAME, ns.name)
        self.namespaces[ns.name] = model.Namespace(ns.name, labels)
        self._requeue_everything()

    def delete_namespace(self, name: str) -> None:
        """A deleted namespace matches selectors as an undeclared one: only its name label."""
        self.namespaces.pop(name, None)
        self._requeue_everything()

    def apply_admission_check(self, ac: model.AdmissionCheck) -> None:
        self.admission_checks[ac.name] = ac
        self._structure_changed()

    def delete_admission_check(self, name: str) -> None:
        self.admission_checks.pop(name, None)
        self._structure_changed()

    def apply_cluster_queue(self, spec: model.ClusterQueue, now: int = 0) -> None:
        """A valid ClusterQueue, new or changed (also one re-created while workloads admitted by its
        earlier self still hold quota: they count against it)."""
        cq = self.cqs.get(spec.name)
        if cq is None:
            cq = self.cqs[spec.name] = ClusterQueueState(spec, self._stamps)
        else:
            old_stop = cq.spec.stop_policy
            cq.set_spec(spec)
            cq.held = None
            self._terminating.discard(spec.name)
            if spec.stop_policy != old_stop:
                for info in sorted(cq.admitted.values(), key=lambda i: i.seq):
                    self._apply_stop_policy(info, now)
        self._structure_changed()

    def delete_cluster_queue(self, name: str) -> None:
        """Deleted (or terminating: upstream's resource-in-use finalizer keeps it). With workloads
        holding quota in it, it stays, admitting nothing, their usage counted (in its cohort too),
        until the last one releases; then it is gone (``cluster_queue_in_use`` turns False)."""
        cq = self.cqs.get(name)
        if cq is None:
            return
        if cq.in_use:
            cq.held = (hierarchy.TERMINATING, "clusterQueue is terminating")
            self._terminating.add(name)
            # Upstream's workload controller: a reservation still waiting for its checks is undone.
            for info in sorted(cq.admitted.values(), key=lambda i: i.seq):
                if info.state is State.QUOTA_RESERVED:
                    self._unreserve(info, f"ClusterQueue {name} is terminating or missing")
        if not cq.in_use:
            del self.cqs[name]
            self._terminating.discard(name)
        self._structure_changed()

    def invalidate_cluster_queue(self, name: str, cohort: str | None, message: str) -> None:
        """The object exists but its spec is invalid (it bypassed validation): it admits nothing and has
        no quota of its own; the workloads it admitted before still count against it, in ``cohort``
        (read as far as it can be), so no neighbour can take what they hold."""
        spec = model.ClusterQueue(name=name, cohort=cohort or None)
        cq = self.cqs.get(name)
        if cq is None:
            cq = self.cqs[name] = ClusterQueueState(spec, self._stamps)
        else:
            cq.set_spec(spec)
        cq.held = (hierarchy.INVALID_SPEC, message)
        self._terminating.discard(name)
        self._structure_changed()

    def cluster_queue_in_use(self, name: str) -> bool:
        """Whether a workload holds quota in the named ClusterQueue: its finalizer must stay."""
        cq = self.cqs.get(name)
        return cq is not None and cq.in_use

    def resource_flavor_in_use(self, name: str) -> bool:
        """Whether a ClusterQueue names the flavor: its resource-in-use finalizer must stay."""
        return any(name in cq.flavor_names for cq in self.cqs.values())

    def admission_check_in_use(self, name: str) -> bool:
        """Whether a ClusterQueue names the admission check: its finalizer must stay."""
        return any(rule.name == name for cq in self.cqs.values() for rule in cq.spec.admission_checks)

    def _drop_released_queues(self) -> None:
        """Deleted ClusterQueues whose last workload released its quota go (outside scheduling cycles,
        which must not see the forest change under them)."""
        if not self._terminating:
            return  # the common case costs nothing per instant
        gone = sorted(n for n in self._terminating if not self.cqs[n].in_use)
        for name in gone:
            del self.cqs[name]
            self._terminating.discard(name)
        if gone:
            self._structure_changed()

    def apply_cohort(self, spec: model.Cohort) -> None:
        c = self.cohorts.get(spec.name)
        if c is None:
            c = self.cohorts[spec.name] = CohortState(spec.name)
        c.set_spec(spec)
        self._structure_changed()

    def delete_cohort(self, name: str) -> None:
        c = self.cohorts.get(name)
        if c is not None:
            c.spec = model.Cohort(name=name)
            c.node.quotas = {}
            c.explicit = False
        self._structure_changed()

    def apply_local_queue(self, lq: model.LocalQueue, now: int = 0) -> None:
        old = self.local_queues.get(lq.key)
        self.local_queues[lq.key] = lq
        if lq.stop_policy != model.STOP_NONE and (old is None or old.stop_policy != lq.stop_policy):
            for info in sorted(self.workloads.values(), key=lambda i: i.seq):
                if info.has_quota and f"{info.spec.namespace}/{info.spec.queue_name}" == lq.key:
                    self._apply_stop_policy(info, now)
        self._requeue_everything()

    def _apply_stop_policy(self, info: WorkloadInfo, now: int) -> None:
        """A stopped queue and a workload holding quota in it, as upstream's workload controller treats
        them: HoldAndDrain evicts an Admitted workload; Hold and HoldAndDrain both cancel a reservation
        still waiting for its admission checks (no eviction: it queues again, and reserves again once
        the queue is released). The ClusterQueue's policy is looked at first, as upstream does."""
        cq = self.cqs.get(info.cluster_queue or "")
        lq = self.local_queues.get(f"{info.spec.namespace}/{info.spec.queue_name}")
        for kind, policy, reason in (
            ("ClusterQueue", cq.spec.stop_policy if cq else model.STOP_NONE, ev.EVICTED_CQ_STOPPED),
            ("LocalQueue", lq.stop_policy if lq else model.STOP_NONE, ev.EVICTED_LQ_STOPPED),
        ):
            if policy == model.STOP_NONE:
                continue
            if info.state is State.ADMITTED:
                if policy == model.STOP_HOLD_AND_DRAIN:
                    self._evict(info, reason, now, requeue=True, message=f"The {kind} is stopped")
                    return
                continue
            name = info.cluster_queue if kind == "ClusterQueue" else info.spec.queue_name
            self._release(info)
            self._quiet_releases.add(info.key)
            self._transition(info, State.PENDING, now, reason=SUSPENDED, message=f"{kind} {name} is stopped")
            info.check_states = {}
            self.queues.place(info)
            return

    def delete_local_queue(self, key: str) -> None:
        """Gone: admitted workloads run on (their quota stays counted in their ClusterQueue); a
        reservation still waiting for its checks is undone, as upstream's workload controller does."""
        self.local_queues.pop(key, None)
        for info in sorted(self.workloads.values(), key=lambda i: i.seq):
            if info.state is State.QUOTA_RESERVED and f"{info.spec.namespace}/{info.spec.queue_name}" == key:
                self._unreserve(info, f"LocalQueue {info.spec.queue_name} is terminating or missing")
        self._requeue_everything()

    def _unreserve(self, info: WorkloadInfo, message: str) -> None:
        """A reservation whose queue went away while it waited for its checks goes back to pending."""
        self._release(info)
        self._quiet_releases.add(info.key)
        self._transition(info, State.PENDING, 0,  # no time is kept for a return to pending
                         reason=MISCONFIGURED, message=message)
        info.check_states = {}
        self.queues.place(info)

    # ------------------------------------------------------------------------------- structure

    def _structure_changed(self) -> None:
        """Rebuild the cohort forest and queue activity, then give every workload a fresh look."""
        if self._bulk:
            self._bulk_dirty = True
            return
        hierarchy.rebuild(self.cohorts, self.cqs, self.flavors, self.admission_checks)
        self._requeue_everything()

    def _requeue_everything(self) -> None:
        """After a configuration change: re-place every pending workload and unpark every class."""
        if self._bulk:
            self._bulk_dirty = True
            return
        self.queues.replace_all(self.reason_watch)

    # ----------------------------------------------------------------------------- workloads

    def add_workload(self, spec: model.Workload, now: int = 0) -> WorkloadInfo:
        if spec.key in self.workloads:
            raise ValueError(f"workload {spec.key} already exists")
        self._seq += 1
        info = WorkloadInfo(spec, self._seq, self._stamps, self.shared)
        self.workloads[info.key] = info
        info.known = True
        self._count(info, 1)
        if self.reason_watch is not None:
            info.watch = self.reason_watch
            self.reason_watch.add(info)
        if spec.admission is not None and (spec.active or (spec.evicted is not None and not self.jobs_stop_at_once)):
            self._restore_admission(info, spec.admission, now)
        elif info.state is State.PENDING:
            if info.held:
                info.set_reason(ON_HOLD, ON_HOLD_MESSAGE)
            self.queues.place(info)
        return info

    def _restore_admission(self, info: WorkloadInfo, admission: model.Admission, now: int) -> None:
        """A workload that arrives already admitted (status.admission): its quota is in use now, in the
        ClusterQueue its admission names whatever that queue's state (one that does not exist is held
        for it, admitting nothing, until it is created or its workloads release their quota)."""
        cq = self.cqs.get(admission.cluster_queue)
        if cq is None:
            cq = self.cqs[admission.cluster_queue] = ClusterQueueState(
                model.ClusterQueue(name=admission.cluster_queue), self._stamps)
            cq.held = (hierarchy.TERMINATING, "clusterQueue is missing")
            self._terminating.add(admission.cluster_queue)
            created = True
        else:
            created = False
        info.cluster_queue = admission.cluster_queue
        info.admission = admission
        info.usage = usage_of(info.spec, admission)
        if info.spec.evicted is not None and not self.jobs_stop_at_once:
            # Evicted before a restart and its job not yet seen stopped: it holds its quota until then.
            self.stopping[info.key] = Stop(info.spec.evicted, "", requeue=info.spec.active, requeue_at=None,
                                           deactivate=not info.spec.active)
            self._transition(info, State.STOPPING, now)
            cq.stopping[info.key] = info
            add_workload_usage(cq, info)
            if created:
                self._structure_changed()
            return
        info.pods_ready = info.spec.pods_ready
        to = State.ADMITTED
        if not info.spec.admitted:
            # Quota reserved, admission checks not all Ready (a controller restarted meanwhile).
            checks = applicable_checks(cq.spec, admission)
            info.check_states = {name: info.spec.check_states.get(name, model.CheckState.PENDING) for name in checks}
            if any(state != model.CheckState.READY for state in info.check_states.values()):
                to = State.QUOTA_RESERVED
        self._transition(info, to, now)
        cq.add_admitted(info)
        add_workload_usage(cq, info)
        if to is State.ADMITTED:
            if info.spec.admitted_time is not None:
                info.admitted_us = seconds_to_us(info.spec.admitted_time)
            self._arm_admitted_timers(info, now)
        if created:
            self._structure_changed()  # now that it holds its quota: never re-placed as pending
        self._apply_stop_policy(info, now)

    def cluster_queue_for(self, info: WorkloadInfo) -> str | None:
        return self.queues.cluster_queue_for(info)

    def blocker(self, info: WorkloadInfo) -> tuple[str, str] | None:
        """Why a pending workload cannot even be queued (upstream's queue blockers), or None."""
        if not info.spec.active:
            return DEACTIVATED, "The workload is deactivated"
        lq = self.local_queues.get(f"{info.spec.namespace}/{info.spec.queue_name}")
        if lq is None:
            return MISCONFIGURED, f"LocalQueue {info.spec.queue_name} doesn't exist"
        if lq.invalid is not None:
            return MISCONFIGURED, f"LocalQueue {info.spec.queue_name} is invalid: {lq.invalid}"
        if lq.stop_policy != model.STOP_NONE:
            return SUSPENDED, f"LocalQueue {info.spec.queue_name} is inactive"
        cq = self.cqs.get(lq.cluster_queue)
        if cq is None:
            return MISCONFIGURED, f"ClusterQueue {lq.cluster_queue} doesn't exist"
        if not cq.active:
            return SUSPENDED, f"ClusterQueue {cq.name} is inactive: {hierarchy.inactive_detail(cq, self.flavors, self.admission_checks)}"
        return None

    def finish_workload(self, key: str, now: int, *, reason: str | None = None, message: str | None = None,
                        by: str | None = None) -> None:
        """The workload's job completed (or, ``reason`` WorkloadSliceReplaced, a scale-up slice ``by``
        took its place): it leaves the queue or frees its quota."""
        info = self.workloads[key]
        if info.state is State.FINISHED:
            return
        cq_name = info.cluster_queue
        admission = info.admission if info.holds_usage else None
        if info.holds_usage:
            self._release(info)
        else:
            self.queues.unqueue(info)
        info.admission = admission  # a finished workload keeps the admission it ran under, as upstream
        self._transition(info, State.FINISHED, now)
        self._emit(ev.FINISHED, info, cq_name, reason=reason, message=message, by=by)

    def delete_workload(self, key: str) -> None:
        info = self.workloads.pop(key, None)
        if info is None:
            return
        info.known = False
        self._count(info, -1)
        self._quiet_releases.discard(key)
        if info.holds_usage:
            self._release(info)
        else:
            self.queues.unqueue(info)
        if self.awaiting:
            self.awaiting.pop(key, None)

    def update_workload(self, spec: model.Workload, now: int) -> bool:
        """The Workload's spec changed (upstream's workload controller reads every update): a pending or
        inactive one takes the new queue, priority, pod sets and execution limit and is queued again
        by them; one holding quota takes its new priority and execution limit (its pod sets are
        immutable while it does). Returns whether anything changed."""
        info = self.workloads.get(spec.key)
        if info is None or info.state is State.FINISHED:
            return False
        old = info.spec
        scaled = info.has_quota and old.elastic and slices.scaled_down(slices.counts(old.pod_sets),
                                                                     slices.counts(spec.pod_sets))
        if scaled:
            self._scale_down(info, spec.pod_sets)
            old = info.spec
        if info.holds_usage:
            if (spec.priority, spec.priority_class_name, spec.max_execution_seconds) == (
                    old.priority, old.priority_class_name, old.max_execution_seconds):
                return scaled
            cq = self.cqs.get(info.cluster_queue or "")
            if cq is not None and info.key not in cq.admitted:
                cq = None  # not a candidate (its job is stopping): no place to move
            if cq is not None:
                cq.remove_admitted(info)  # its place among the preemption candidates moves
            info.spec = replace(old, priority=spec.priority, priority_class_name=spec.priority_class_name,
                                priority_class_source=spec.priority_class_source,
                                max_execution_seconds=spec.max_execution_seconds)
            if cq is not None:
                cq.add_admitted(info)
            if info.state is State.ADMITTED and spec.max_execution_seconds != old.max_execution_seconds:
                self.timers.cancel(info.key, Deadline.MAX_EXECUTION)
                self._arm_admitted_timers(info, now)
            return True
        fields = (spec.queue_name, spec.pod_sets, spec.priority, spec.priority_class_name, spec.max_execution_seconds)
        if fields == (old.queue_name, old.pod_sets, old.priority, old.priority_class_name, old.max_execution_seconds):
            return False
        pending = info.state is State.PENDING
        if pending:
            self.queues.unqueue(info)
        self._count(info, -1)
        info.spec = replace(old, queue_name=spec.queue_name, pod_sets=spec.pod_sets, priority=spec.priority,
                            priority_class_name=spec.priority_class_name,
                            priority_class_source=spec.priority_class_source,
                            max_execution_seconds=spec.max_execution_seconds)
        info.lq_key = self.shared(f"{spec.namespace}/{spec.queue_name}")
        info.hash = self.shared(scheduling_hash(info.spec, self.shared))
        self._count(info, 1)
        if pending:
            info.set_reason(PENDING_EVALUATION, "")
            self.queues.place(info)
        return True

    def _scale_down(self, info: WorkloadInfo, pod_sets: tuple[model.PodSet, ...]) -> None:
        """An admitted elastic workload shrunk in place (upstream's scale-down of a workload slice): its
        usage follows the new counts, and the difference is free for others."""
        cq = self.cqs.get(info.cluster_queue or "")
        if cq is not None:
            remove_workload_usage(cq, info)
        info.spec = replace(info.spec, pod_sets=pod_sets)
        if info.admission is not None:  # kept as written (never changed in place): it charges the new counts
            info.usage = usage_of(info.spec, info.admission)
        if cq is not None:
            add_workload_usage(cq, info)
            self.queues.capacity_grew(cq)

    def workload_deleting(self, key: str, now: int) -> None:
        """The Workload is being deleted (a deletionTimestamp, a finalizer still on it): nothing more is
        admitted for it, its job is stopped, and quota it holds counts until the object is gone
        (``delete_workload``). Where jobs stop at once, it is gone now."""
        info = self.workloads.get(key)
        if info is None:
            return
        if self.jobs_stop_at_once or not info.holds_usage:
            self.delete_workload(key)
            return
        stop = self.stopping.get(key)
        if stop is None:
            stop = self.stopping[key] = Stop("Deleted", "The workload is deleted", requeue=False, requeue_at=None)
            self._begin_stop(info, now)
        stop.deleting = True

    def job_stopped(self, key: str, now: int) -> bool:
        """The driver saw the job of a STOPPING workload stopped (nothing of it runs): its quota is
        released and it queues again (or goes Inactive) as its eviction said. A deleted workload's job
        only records it (``deleted_job_stopped``): its quota counts until the object is gone.
        Returns whether anything changed."""
        stop = self.stopping.get(key)
        info = self.workloads.get(key)
        if stop is None or info is None or info.state is not State.STOPPING:
            return False
        if stop.deleting:
            changed, stop.stopped = not stop.stopped, True
            return changed
        del self.stopping[key]
        cq_name = info.cluster_queue
        self._release(info)
        if stop.deactivate:
            self._transition(info, State.INACTIVE, now, reason=DEACTIVATED, message=stop.message)
            return True
        if info.held:
            self._transition(info, State.PENDING, now, reason=ON_HOLD, message=stop.message or ON_HOLD_MESSAGE)
            return True
        self._transition(info, State.PENDING, now, reason=PENDING_EVALUATION, message=stop.message)
        if stop.requeue:
            after = None if stop.requeue_at is None else stop.requeue_at - now
            self._requeue_evicted(info, cq_name, stop.reason, after, now)
        return True

    def deleted_job_stopped(self, key: str) -> bool:
        """Whether a Workload being deleted holds no running job (its finalizer may go)."""
        stop = self.stopping.get(key)
        return stop is None or not stop.deleting or stop.stopped

    def set_active(self, key: str, active: bool, now: int) -> None:
        """``spec.active`` changed: deactivation evicts and never requeues; reactivation requeues with
        a fresh requeue state (the backoff count starts again from zero)."""
        info = self.workloads[key]
        if info.state is State.FINISHED:
            return
        spec = info.spec
        if info.state is State.STOPPING:
            self._set_active_stopping(info, active, now)
            return
        if spec.active == active and (info.state is State.INACTIVE) != active:
            return
        if not active:
            self._deactivate(info, now, cause=None, message="The workload is deactivated")
        else:
            info.spec = _replace_active(spec, True)
            info.deactivated_by = None
            self._transition(info, State.PENDING, now, reason=PENDING_EVALUATION,
                             message="The workload was reactivated")
            info.requeue_count = 0
            info.requeue_us = None
            self._emit(ev.REQUEUED, info, self.cluster_queue_for(info), reason="Reactivated")
            self.queues.place(info)

    def _set_active_stopping(self, info: WorkloadInfo, active: bool, now: int) -> None:
        """``spec.active`` changed while the workload's job is still stopping: it ends Inactive, or
        (reactivated) queues again once the job has stopped."""
        stop = self.stopping.get(info.key)
        if info.spec.active == active or stop is None or stop.deleting:
            return
        if not active:
            self._deactivate(info, now, cause=None, message="The workload is deactivated")
            return
        info.spec = _replace_active(info.spec, True)
        info.deactivated_by = None
        stop.deactivate, stop.requeue, stop.reason, stop.requeue_at = False, True, "Reactivated", None
        stop.message = "The workload was reactivated"
        info.requeue_count = 0
        info.requeue_us = None

    def _deactivate(self, info: WorkloadInfo, now: int, *, cause: str | None, message: str,
                    announced: bool = False) -> None:
        """Every deactivation, by the user or by Kueue (``cause``: the requeuing limit, a rejected
        admission check, the maximum execution time): one eviction with reason Deactivated if it held
        quota, never requeued, and its requeue state cleared (upstream drops status.requeueState).
        ``announced``: the Deactivated event comes before the eviction (a timed deactivation)."""
        info.spec = _replace_active(info.spec, False)
        info.deactivated_by = cause
        if announced:
            self._emit(ev.DEACTIVATED, info, info.cluster_queue, reason=cause, message=message)
        if info.has_quota:
            self._evict(info, ev.EVICTED_DEACTIVATED, now, requeue=False, cause=cause, message=message)
        elif info.state is not State.STOPPING:
            self.queues.unqueue(info)
        stop = self.stopping.get(info.key) if info.state is State.STOPPING else None
        if stop is not None:
            # Inactive once its job has stopped; its quota is held until then.
            stop.deactivate, stop.requeue, stop.message = True, False, message
        else:
            self._transition(info, State.INACTIVE, now, reason=DEACTIVATED, message=message)
        info.requeue_us = None
        info.requeue_count = 0
        if not announced:
            self._emit(ev.DEACTIVATED, info, info.cluster_queue, reason=cause, message=message)

    def hold(self, key: str, held: bool, now: int, message: str = "") -> bool:
        """The workload's job holds it, or lets it go (upstream's OnHold, which a StatefulSet scaled to
        zero puts its Workload on): a held workload gives its quota back (once its job has stopped,
        with the controller's jobs) and stays pending with reason OnHold, in no queue, until let go;
        then it queues again. A finished or deactivated one is left alone. Returns whether anything
        changed; holding twice changes nothing."""
        info = self.workloads.get(key)
        if info is None or info.held == held or info.state in (State.FINISHED, State.INACTIVE):
            return False
        info.held = held
        stop = self.stopping.get(key) if info.state is State.STOPPING else None
        if held:
            message = message or ON_HOLD_MESSAGE
            if stop is not None:
                stop.requeue, stop.message = False, message  # on hold once its job has stopped
            elif info.has_quota:
                if info.state is State.ADMITTED and info.admitted_us is not None:
                    info.accumulated_s += max(0, now - info.admitted_us) // model.US
                info.pods_ready = False
                info.check_states = {}
                if self.jobs_stop_at_once:
                    self._release(info)
                    self._transition(info, State.PENDING, now, reason=ON_HOLD, message=message)
                else:
                    self.stopping[key] = Stop(ON_HOLD, message, requeue=False, requeue_at=None)
                    self._begin_stop(info, now)
            else:
                self.queues.unqueue(info)
                self._transition(info, State.PENDING, now, reason=ON_HOLD, message=message)
            return True
        if stop is not None:
            if not (stop.deleting or stop.deactivate):
                stop.requeue, stop.message = True, ""
            return True
        if info.state is State.PENDING:
            self._transition(info, State.PENDING, now, reason=PENDING_EVALUATION, message=NO_LONGER_ON_HOLD)
            self.queues.place(info)
        return True

    def evict(self, key: str, reason: str, now: int, *, requeue_after_us: int | None = None,
              message: str = "") -> None:
        """Evict an admitted workload (it releases its quota now) and requeue it, maybe after a backoff."""
        info = self.workloads[key]
        if not info.has_quota:
            return
        self._evict(info, reason, now, requeue=True, requeue_after_us=requeue_after_us, message=message)

    def _evict(self, info: WorkloadInfo, reason: str, now: int, *, requeue: bool,
               requeue_after_us: int | None = None, by: str | None = None, cause: str | None = None,
               message: str = "") -> None:
        cq_name = info.cluster_queue
        if info.state is State.ADMITTED and info.admitted_us is not None:
            # Admitted=True -> False: the admission's whole seconds count against the execution limit.
            info.accumulated_s += max(0, now - info.admitted_us) // model.US
        if self.jobs_stop_at_once:
            self._release(info)
            self._transition(info, State.PENDING, now, reason=PENDING_EVALUATION, message=message)
        else:
            backoff = requeue_after_us is not None and requeue_after_us > 0
            self.stopping[info.key] = Stop(reason, message, requeue,
                                           now + requeue_after_us if backoff and requeue_after_us else None)
            self._begin_stop(info, now)
        info.evictions += 1
        info.evicted_us = now
        info.eviction_reason = reason
        info.pods_ready = False
        info.check_states = {}
        self._emit(ev.EVICTED, info, cq_name, reason=reason, by=None, message=message or None, cause=cause)
        if reason == ev.EVICTED_PODS_READY_TIMEOUT and self.config.wait_for_pods_ready.requeuing.timestamp == "Eviction" or reason == ev.EVICTED_ADMISSION_CHECK:
            info.order_us = now
        if not requeue or info.state is State.STOPPING:
            return
        self._requeue_evicted(info, cq_name, reason, requeue_after_us, now)

    def _requeue_evicted(self, info: WorkloadInfo, cq_name: str | None, reason: str, after_us: int | None,
                         now: int) -> None:
        """An evicted workload that released its quota queues again, after its backoff if any."""
        if after_us is not None and after_us > 0:
            self.queues.back_off(info, now + after_us)
            return
        self._emit(ev.REQUEUED, info, cq_name, reason=reason)
        self.queues.place(info)

    def _begin_stop(self, info: WorkloadInfo, now: int) -> None:
        """Evicted or deleted while its job runs: no more timers, no longer a preemption candidate, its
        usage still counted until ``job_stopped`` (or the object's deletion) releases it."""
        self.timers.cancel(info.key)
        cq = self.cqs.get(info.cluster_queue or "")
        if cq is not None and info.key in cq.admitted:
            cq.remove_admitted(info)
            cq.stopping[info.key] = info
        self._transition(info, State.STOPPING, now)

    def _release(self, info: WorkloadInfo) -> None:
        self.timers.cancel(info.key)
        cq = self.cqs.get(info.cluster_queue or "")
        if cq is not None:
            if info.key in cq.admitted:
                cq.remove_admitted(info)
                remove_workload_usage(cq, info)
                self.queues.capacity_grew(cq)
            elif cq.stopping.pop(info.key, None) is not None:
                remove_workload_usage(cq, info)
                self.queues.capacity_grew(cq)
        if self.stopping:
            self.stopping.pop(info.key, None)
        if self._preempted_by:
            self._victim_gone(info.key)
        info.admission = None
        info.usage = model.nothing()

    def _victim_gone(self, key: str) -> None:
        """A victim released its quota: its preemptor waits for one victim less."""
        preemptor = self._preempted_by.pop(key, None)
        if preemptor is None:
            return
        waiting = self.awaiting.get(preemptor)
        if waiting is not None:
            waiting.discard(key)
            if not waiting:
                del self.awaiting[preemptor]
                # Its victims are gone: it goes first in the next cycle, as the simulator's preemptor
                # does in the cycle after its victims left at once.
                self.scheduler.preempting.add(preemptor)

    def await_victims(self, preemptor: WorkloadInfo, victims: list[WorkloadInfo]) -> int:
        """Record that ``preemptor`` waits for these victims' jobs to stop; how many it waits for."""
        waiting = {v.key for v in victims if v.state is State.STOPPING}
        if waiting:
            self.awaiting.setdefault(preemptor.key, set()).update(waiting)
            for key in waiting:
                self._preempted_by[key] = preemptor.key
        return len(self.awaiting.get(preemptor.key, ()))

    # --------------------------------------------------------------------------- state changes

    def _lq_row(self, info: WorkloadInfo) -> list[int]:
        """The pending, reserving and admitted counts of ``info``'s LocalQueue."""
        row = self._lq_counts.get(info.lq_key)
        if row is None:
            row = self._lq_counts[info.lq_key] = [0, 0, 0]
        return row

    def _count(self, info: WorkloadInfo, sign: int) -> None:
        """Add (1) or take back (-1) ``info`` in its LocalQueue's counts, by its current state."""
        row = self._lq_row(info)
        for i in _COLUMNS[info.state]:
            row[i] += sign
        if sign < 0 and not any(row):
            del self._lq_counts[info.lq_key]  # nothing counted there: made again on demand, never kept empty

    def _transition(self, info: WorkloadInfo, to: State, now: int, *, reason: str | None = None,
                    message: str = "") -> None:
        """The one place a workload's state changes: checked against the allowed transitions, with the
        reason and message of its QuotaReserved=False condition (None while it holds quota) and the
        time of the change where the result keeps one."""
        was = info.state
        if to not in _ALLOWED[was]:
            raise AssertionError(f"workload {info.key}: no transition from {was.value} to {to.value}")
        before, after = _COLUMNS[was], _COLUMNS[to]
        if before != after and info.known:
            row = self._lq_row(info)  # moved between columns at once
            for i in before:
                row[i] -= 1
            for i in after:
                row[i] += 1
        info.state = to
        info.set_reason(reason, message)
        if to in _HOLDS and was not in _HOLDS:
            info.reserved_us = now
        if to is State.ADMITTED:
            info.admitted_us = now  # the last admission: a later reservation alone keeps it
        elif to is State.FINISHED:
            info.finished_us = now

    def reserve(self, cq: ClusterQueueState, info: WorkloadInfo, admission: model.Admission,
                usage: dict, now: int) -> None:
        """Reserve quota for a pending workload (the scheduler decided), and admit it at once when no
        admission check applies to the admission."""
        info.admission = admission
        info.usage = dict(usage)
        info.cluster_queue = cq.name
        self._transition(info, State.QUOTA_RESERVED, now)  # first: the victim order reads reserved_us
        cq.add_admitted(info)
        add_workload_usage(cq, info)
        info.pods_ready = not self.config.wait_for_pods_ready.enable
        self._emit(ev.QUOTA_RESERVED, info, cq.name)
        checks = applicable_checks(cq.spec, admission)
        info.check_states = {name: model.CheckState.PENDING for name in checks} if checks else model.nothing()
        if not checks:
            self._transition(info, State.ADMITTED, now)
            self._emit(ev.ADMITTED, info, cq.name)
            self._arm_admitted_timers(info, now)

    def preempt(self, victim: WorkloadInfo, reason: str, by: WorkloadInfo, now: int) -> None:
        """Evict ``victim`` for ``by`` (a preemption ``reason``), requeued as upstream requeues it."""
        self._emit(ev.PREEMPTED, victim, victim.cluster_queue, reason=reason, by=by.key)
        self._evict(victim, ev.EVICTED_PREEMPTED, now, requeue=True, by=by.key, message=(
            f"Preempted to accommodate a workload ({by.key}) due to "
            f"{ev.PREEMPTION_REASON_TEXT.get(reason, reason)}"))

    # ------------------------------------------------------------------------------- lifecycle

    def mark_pods_ready(self, key: str, now: int) -> None:
        """All pods of an admitted workload are ready (waitForPodsReady)."""
        info = self.workloads.get(key)
        if info is None or not info.has_quota:
            return
        info.pods_ready = True
        self.timers.cancel(key, Deadline.PODS_READY)

    def mark_pods_not_ready(self, key: str, now: int) -> None:
        """A pod of a running workload failed: it has waitForPodsReady.recoveryTimeout to be ready
        again, or it is evicted as by the pods-ready timeout (no recoveryTimeout: it may stay so)."""
        info = self.workloads.get(key)
        if info is None or not info.has_quota or not info.pods_ready:
            return
        info.pods_ready = False
        wfpr = self.config.wait_for_pods_ready
        if wfpr.enable and wfpr.recovery_timeout_seconds:
            self.timers.arm(key, Deadline.PODS_READY, now + seconds_to_us(wfpr.recovery_timeout_seconds))

    def pods_ready_timeout(self, key: str, now: int) -> None:
        """The waitForPodsReady timeout passed: evict if not ready, requeue with exponential backoff, or
        deactivate once the backoff limit is exceeded (upstream's RequeuingLimitExceeded)."""
        info = self.workloads.get(key)
        if info is None or not info.has_quota or info.pods_ready:
            return
        strategy = self.config.wait_for_pods_ready.requeuing
        limit = strategy.backoff_limit_count
        # Upstream checks the limit before counting (requeueState.count stops at the limit), and at the
        # limit it deactivates instead of evicting: one eviction, reason Deactivated.
        if limit is not None and info.requeue_count >= limit:
            self._deactivate(info, now, cause=ev.CAUSE_REQUEUING_LIMIT, message=(
                "The workload is deactivated due to exceeding the maximum number of re-queuing retries"))
            return
        info.requeue_count += 1
        delay = seconds_to_us(strategy.backoff_base_seconds) * (2 ** (info.requeue_count - 1))
        delay = min(delay, seconds_to_us(strategy.backoff_max_seconds))
        self._evict(info, ev.EVICTED_PODS_READY_TIMEOUT, now, requeue=True, requeue_after_us=delay,
                    message=f"Exceeded the PodsReady timeout {info.key}")

    def check_state(self, key: str, check: str) -> str | None:
        """The state an admission check holds on a workload, None when it has no such check."""
        info = self.workloads.get(key)
        return None if info is None else info.check_states.get(check)

    def set_check_state(self, key: str, check: str, state: str, now: int) -> None:
        """An admission check reported on a workload holding quota: Ready (admitted once all are),
        Retry (evicted and requeued), Rejected (evicted and deactivated), Pending."""
        info = self.workloads.get(key)
        if info is None or not info.has_quota or check not in info.check_states:
            return
        info.check_states[check] = state
        if state == model.CheckState.READY:
            if info.state is State.QUOTA_RESERVED and all(v == model.CheckState.READY for v in info.check_states.values()):
                self._transition(info, State.ADMITTED, now)
                self._emit(ev.ADMITTED, info, info.cluster_queue)
                self._arm_admitted_timers(info, now)
        elif state == model.CheckState.RETRY:
            self._evict(info, ev.EVICTED_ADMISSION_CHECK, now, requeue=True,
                        message="At least one admission check is false")
        elif state == model.CheckState.REJECTED:
            self._deactivate(info, now, cause=ev.CAUSE_ADMISSION_CHECK, message=(
                f"The workload is deactivated due to Admission check(s): {check}, were rejected"))

    def set_reclaimable_pods(self, key: str, reclaimable: dict[str, int], now: int) -> None:
        """Dynamic reclaim: pods that finished give their quota back while the workload runs on."""
        info = self.workloads.get(key)
        if info is None or info.spec.reclaimable_pods == reclaimable:
            return
        if info.has_quota and info.admission is not None:
            cq = self.cqs.get(info.cluster_queue or "")
            if cq is not None:
                remove_workload_usage(cq, info)
            info.spec = replace(info.spec, reclaimable_pods=dict(reclaimable))
            info.usage = usage_of(info.spec, info.admission)
            if cq is not None:
                add_workload_usage(cq, info)
                self.queues.capacity_grew(cq)
        else:
            self.queues.unqueue(info)
            info.spec = replace(info.spec, reclaimable_pods=dict(reclaimable))
            info.hash = scheduling_hash(info.spec)
            if info.state is State.PENDING:
                self.queues.place(info)

    def next_wakeup(self) -> int | None:
        """The earliest time at which a backoff expires or a timed policy falls due (pods-ready
        timeout or recovery, maximum execution time): the driver should call ``schedule`` then."""
        backoff, deadline = self.queues.next_wakeup(), self.timers.next_due()
        if backoff is None or deadline is None:
            return deadline if backoff is None else backoff
        return min(backoff, deadline)

    def has_deadline(self, key: str) -> bool:
        """Whether a timed policy may still act on ``key`` by itself (a pods-ready or execution limit)."""
        return self.timers.has(key)

    def _arm_admitted_timers(self, info: WorkloadInfo, now: int) -> None:
        """An admission starts its clocks: waitForPodsReady's timeout while its pods are not ready, and
        the execution limit less the time accumulated by earlier admissions."""
        wfpr = self.config.wait_for_pods_ready
        start = info.admitted_us if info.admitted_us is not None else now
        if wfpr.enable and not info.pods_ready:
            self.timers.arm(info.key, Deadline.PODS_READY, start + seconds_to_us(wfpr.timeout_seconds))
        limit = info.spec.max_execution_seconds
        if limit is not None:
            self.timers.arm(info.key, Deadline.MAX_EXECUTION, start + (limit - info.accumulated_s) * model.US)

    def _fire_deadlines(self, now: int) -> None:
        for key, kind in self.timers.pop_due(now):
            info = self.workloads.get(key)
            if info is None or not info.has_quota:
                continue
            if kind is Deadline.PODS_READY:
                self.pods_ready_timeout(key, now)
            elif info.state is State.ADMITTED:
                self._exceed_max_execution(info, now)

    def _exceed_max_execution(self, info: WorkloadInfo, now: int) -> None:
        """Upstream marks it a deactivation target (its accumulated time dropped), then deactivates
        it; the eviction that follows counts this admission's time again, as upstream's does."""
        info.accumulated_s = 0
        self._deactivate(info, now, cause=ev.CAUSE_MAX_EXECUTION_TIME, announced=True,
                         message="The workload is deactivated due to exceeding the maximum execution time")

    def _expire_backoffs(self, now: int) -> None:
        for info in self.queues.expired_backoffs(now):
            self._emit(ev.REQUEUED, info, self.cluster_queue_for(info), reason="BackoffFinished")
            self.queues.place(info)

    # ----------------------------------------------------------------------------- scheduling

    def schedule(self, now: int) -> list[Event]:
        """Run scheduling cycles until one changes nothing; return the events of this instant.

        ``now`` must be an int (microseconds): a float here is the rounding bug this unit prevents."""
        if type(now) is not int:
            raise TypeError(f"time must be an int number of microseconds (a wall clock: time.time_ns() // 1000), "
                            f"got {now!r}")
        self._fire_deadlines(now)
        self._expire_backoffs(now)
        self._drop_released_queues()
        self.scheduler.run(now)
        self._drop_released_queues()
        out, self._events = self._events, []
        return out

    def take_events(self) -> list[Event]:
        out, self._events = self._events, []
        return out

    def take_quiet_releases(self) -> list[str]:
        """The workloads whose reservation was given back since the last call without an event (none
        of the fixed event types says "reservation cancelled": simulate's output has no such event, and
        upstream writes only the condition). The controller marks their status due before the next
        scheduling pass, so their release goes out before the reservations that reuse the quota."""
        out = sorted(self._quiet_releases)
        self._quiet_releases.clear()
        return out

    def _emit(self, type_: str, info: WorkloadInfo, cq: str | None, *, reason: str | None = None,
              by: str | None = None, message: str | None = None, cause: str | None = None) -> None:
        admission = info.admission if type_ in (ev.QUOTA_RESERVED, ev.ADMITTED) else None
        self._events.append(Event(type_, info.key, cq, reason, by, message, admission, cause))

    # ------------------------------------------------------------------------------- queries

    def state_of(self, key: str) -> State | None:
        """A workload's state alone (cheap, for a driver's hot paths), None for an unknown workload."""
        info = self.workloads.get(key)
        return None if info is None else info.state

    def check_names(self, key: str) -> list[str]:
        """The admission checks that apply to a workload's current quota reservation, by name."""
        info = self.workloads.get(key)
        return [] if info is None else sorted(info.check_states)

    def workload_status(self, key: str) -> WorkloadStatus | None:
        """A frozen snapshot of one workload (the read model; see ``status``)."""
        info = self.workloads.get(key)
        return None if info is None else self._workload_status(info)

    def pending_condition(self, key: str) -> tuple[str | None, str | None] | None:
        """(reason, message) of a workload's QuotaReserved=False condition, as ``workload_status``
        gives them, without building the snapshot: a cheap check of whether it changed."""
        info = self.workloads.get(key)
        if info is None:
            return None
        reason, message = self.condition_of(info)
        return reason, message or None

    def has_own_answer(self, key: str) -> bool:
        """Whether a pending workload's QuotaReserved=False answer is its own: what the scheduler said
        when it tried this workload, or why its queue cannot take it (missing or inactive queue,
        namespace, deactivation). False while it only shares its class's answer or has not been tried
        yet: upstream writes nothing to the API then (equivalent workloads are bulk-moved aside without
        a status write, and a new workload has no condition until the scheduler tries it)."""
        info = self.workloads.get(key)
        if info is None or info.state is not State.PENDING:
            return True
        if self.blocker(info) is not None:
            return True
        cq = self.cqs.get(info.cluster_queue or "")
        if cq is None:
            return True
        if info.key in cq.pending and cq.pending.shares_class_answer(info):
            return False
        return info.reason != PENDING_EVALUATION

    def _workload_status(self, info: WorkloadInfo) -> WorkloadStatus:
        reason, message = self.condition_of(info)
        return WorkloadStatus(
            key=info.key, spec=info.spec, state=info.state,
            cluster_queue=(info.admission.cluster_queue if info.holds_usage and info.admission
                           else self.cluster_queue_for(info)),
            # usage is only ever replaced whole, never changed in place: a view of it is a snapshot
            admission=info.admission, usage=MappingProxyType(info.usage), reason=reason,
            message=message or None, order_us=info.order_us, reserved_us=info.reserved_us,
            admitted_us=info.admitted_us, finished_us=info.finished_us, evictions=info.evictions,
            eviction_reason=info.eviction_reason, requeue_count=info.requeue_count, requeue_us=info.requeue_us,
            pods_ready=info.pods_ready, accumulated_s=info.accumulated_s, deactivated_by=info.deactivated_by,
            check_states=MappingProxyType(dict(info.check_states)) if info.check_states else _NO_CHECKS, seq=info.seq,
        )

    def workload_statuses(self) -> list[WorkloadStatus]:
        """Every workload, by namespace then name."""
        return list(self.iter_workload_statuses())

    def iter_workload_statuses(self) -> Iterator[WorkloadStatus]:
        """``workload_statuses`` made one at a time (a result streamed entry by entry holds one)."""
        for info in self.workloads_in_order():
            yield self._workload_status(info)

    def cluster_queue_names(self) -> list[str]:
        """In the order the ClusterQueues were first applied."""
        return list(self.cqs)

    def cluster_queue_status(self, name: str) -> ClusterQueueStatus | None:
        """A frozen snapshot of one ClusterQueue (the read model)."""
        cq = self.cqs.get(name)
        if cq is None:
            return None
        admitted = 0
        in_use: dict[FR, int] = {}
        for w in cq.admitted.values():
            if w.state is State.ADMITTED:
                admitted += 1
                for fr, v in w.usage.items():
                    in_use[fr] = in_use.get(fr, 0) + v
        inactive = cq.inactive_reason
        spec_flavors = dict.fromkeys([fq.name for g in cq.spec.resource_groups for fq in g.flavors])
        return ClusterQueueStatus(
            name=name, spec=cq.spec, cohort=cq.spec.cohort, pending=len(cq.pending),
            reserving=len(cq.admitted) + len(cq.stopping),
            admitted=admitted, usage=MappingProxyType({fr: v for fr, v in cq.node.usage.items() if v}),
            quotas=MappingProxyType(dict(cq.node.quotas)), inactive_reason=inactive,
            inactive_message=None if inactive is None else hierarchy.inactive_detail(cq, self.flavors,
                                                                                      self.admission_checks),
            weighted_share=self.weighted_share(name),
            pending_inadmissible=cq.pending.parked_count(),
            in_use=MappingProxyType(in_use),
            missing_flavors=tuple(f for f in spec_flavors if f not in self.flavors),
            missing_checks=tuple(sorted(r.name for r in cq.spec.admission_checks if r.name not in self.admission_checks)),
            pending_requests=MappingProxyType({r: v for r, v in cq.pending.requests.items() if v}),
        )

    def local_queue_names(self) -> list[str]:
        """NAMESPACE/NAME of every LocalQueue, in the order they were first applied."""
        return list(self.local_queues)

    def local_queue_statuses(self) -> dict[str, LocalQueueStatus]:
        """Every LocalQueue with its pending, reserving and admitted counts (kept as workloads move)."""
        counts = self._lq_counts
        out = {}
        for key, lq in self.local_queues.items():
            cq = self.cqs.get(lq.cluster_queue)
            pending, reserving, admitted = counts.get(key) or (0, 0, 0)
            out[key] = LocalQueueStatus(key=key, spec=lq, pending=pending, reserving=reserving, admitted=admitted,
                                        cluster_queue_exists=cq is not None,
                                        cluster_queue_active=cq is not None and cq.active)
        return out

    def local_queue_inadmissible(self) -> dict[str, int]:
        """Per NAMESPACE/LOCALQUEUE: its pending workloads set aside until capacity changes. Walks only
        the set-aside classes (what upstream's per-LocalQueue count of inadmissible workloads walks)."""
        out: dict[str, int] = {}
        for cq in self.cqs.values():
            for info in cq.pending.parked_members():
                out[info.lq_key] = out.get(info.lq_key, 0) + 1
        return out

    def local_queue_usage(self) -> dict[str, tuple[dict[FR, int], dict[FR, int]]]:
        """Per NAMESPACE/LOCALQUEUE: (quota reserved by its workloads holding quota, quota used by its
        admitted ones), as a LocalQueue's flavorsReservation and flavorsUsage count them. Walks the
        workloads holding quota, never the pending ones."""
        out: dict[str, tuple[dict[FR, int], dict[FR, int]]] = {}
        for cq in self.cqs.values():
            for holders in (cq.admitted, cq.stopping):
                for w in holders.values():
                    reserved, in_use = out.setdefault(w.lq_key, ({}, {}))
                    for fr, v in w.usage.items():
                        reserved[fr] = reserved.get(fr, 0) + v
                        if w.state is State.ADMITTED:
                            in_use[fr] = in_use.get(fr, 0) + v
        return out

    def workload_keys(self, state: State | None = None) -> list[str]:
        """Keys of every workload, or of those in ``state``."""
        return [k for k, i in self.workloads.items() if state is None or i.state is state]

    def has_workload(self, key: str) -> bool:
        return key in self.workloads

    def has_candidates(self) -> bool:
        """Some ClusterQueue has a workload the next scheduling pass will try."""
        return any(cq.pending.has_candidates() for cq in self.cqs.values())

    def cohort_names(self) -> list[str]:
        """In the order the Cohorts were first applied or named."""
        return list(self.cohorts)

    def cohort_status(self, name: str) -> CohortStatus | None:
        c = self.cohorts.get(name)
        if c is None:
            return None
        parent = c.node.parent.name if c.node.parent is not None else None
        share = weighted_share(c.node, self.state) if self.config.fair_sharing.enable else 0
        return CohortStatus(name=name, spec=c.spec, parent=parent,
                            usage=MappingProxyType({fr: v for fr, v in c.node.usage.items() if v}),
                            subtree_quota=MappingProxyType(dict(c.node.subtree_quota)), weighted_share=share)

    def pending_in_order(self, cq_name: str) -> list[WorkloadStatus]:
        """The pending workloads of a ClusterQueue in queue order (priority, queue-order time,
        submission order), as upstream's visibility API lists them."""
        cq = self.cqs.get(cq_name)
        if cq is None:
            return []
        members = sorted(cq.pending.members(), key=lambda w: (-w.priority, w.order_us, w.seq))
        return [self._workload_status(w) for w in members]

    def quota_availability(self, cq_name: str, fr: FR) -> QuotaAvailability | None:
        """How much of one flavor and resource a ClusterQueue has, uses and could use."""
        cq = self.cqs.get(cq_name)
        if cq is None or fr not in cq.node.quotas:
            return None
        node = cq.node
        return QuotaAvailability(nominal=node.quotas[fr].nominal, used=node.usage.get(fr, 0),
                                 available=available(node, fr), at_most=potential_available(node, fr))


    def namespace_labels(self, name: str) -> dict[str, str]:
        ns = self.namespaces.get(name)
        if ns is None:
            return {METADATA_NAME: name}
        return ns.labels

    def namespace_allowed(self, cq: ClusterQueueState, namespace: str) -> bool:
        return selector_matches(cq.spec.namespace_selector, self.namespace_labels(namespace))

    def reason_of(self, info: WorkloadInfo) -> str | None:
        """The reason of the workload's QuotaReserved=False condition, None when it holds quota."""
        return self.condition_of(info)[0]

    def message_of(self, info: WorkloadInfo) -> str | None:
        """The message of the workload's QuotaReserved=False condition (or why it is inactive), with
        the quantities; None when it holds quota or finished."""
        return self.condition_of(info)[1] or None

    def condition_of(self, info: WorkloadInfo) -> tuple[str | None, str]:
        """(reason, message) of the QuotaReserved=False condition, as upstream words them."""
        if info.state is State.QUOTA_RESERVED:
            waiting = sorted(name for name, state in info.check_states.items() if state != model.CheckState.READY)
            return None, f"The workload has not all admission checks ready: waiting for {', '.join(waiting)}"
        if info.holds_usage or info.state is State.FINISHED:
            return None, ""
        if info.state is State.INACTIVE:
            return DEACTIVATED, info.message or "The workload is deactivated"
        if info.held:
            return ON_HOLD, info.message or ON_HOLD_MESSAGE
        blocked = self.blocker(info)
        if blocked is not None:
            return blocked
        cq = self.cqs.get(info.cluster_queue or "")
        if cq is None:
            return info.reason, info.message
        reason, message = cq.pending.condition_for(info)
        if reason == PENDING_EVALUATION and info.key in cq.pending:
            head = cq.pending.peek()
            if cq.spec.queueing_strategy == model.STRICT_FIFO and head is not None and head is not info:
                head_message = self.message_of(head) or "not evaluated yet"
                message = f"Waiting behind {head.key}, the head of StrictFIFO ClusterQueue {cq.name}: {head_message}"
            elif not message:
                message = f"Waiting for its turn in ClusterQueue {cq.name}"
        return reason, message

    def weighted_share(self, cq_name: str) -> int:
        """status.fairSharing.weightedShare: 0 unless fair sharing is enabled."""
        if not self.config.fair_sharing.enable:
            return 0
        return weighted_share(self.cqs[cq_name].node, self.state)

    def preemption_skips(self) -> dict[str, int]:
        """Per ClusterQueue, heads of the last scheduling cycle skipped for overlapping preemption targets."""
        return dict(self.scheduler.preemption_skips)

    def precise_weighted_share(self, cq_name: str) -> float:
        """The weighted share before rounding, as upstream's metric reports it: NaN for a queue of
        weight 0 that borrows (an infinite share); 0 unless fair sharing is enabled."""
        if not self.config.fair_sharing.enable:
            return 0.0
        zero_weight_borrows, value = drs(self.cqs[cq_name].node, self.state)
        return math.nan if zero_weight_borrows else value

    def pending_count(self, cq_name: str) -> int:
        cq = self.cqs[cq_name]
        return len(cq.pending)

    def usage_of(self, cq_name: str) -> dict[FR, int]:
        """The non-zero usage of one ClusterQueue (``cluster_queue_status(...).usage``, without the rest
        of the snapshot: a driver samples it after every instant)."""
        return {fr: v for fr, v in self.cqs[cq_name].node.usage.items() if v}

    def workloads_in_order(self) -> Iterable[WorkloadInfo]:
        return sorted(self.workloads.values(), key=lambda i: (i.spec.namespace, i.spec.name))


_HOLDS = (State.QUOTA_RESERVED, State.ADMITTED)
_RELEASED = (State.PENDING, State.INACTIVE, State.FINISHED)
_NO_CHECKS: MappingProxyType[str, str] = MappingProxyType({})
# The LocalQueue count columns (pending, reserving, admitted) a workload in each state is counted in.
_COLUMNS: dict[State, tuple[int, ...]] = {
    State.PENDING: (0,), State.QUOTA_RESERVED: (1,), State.ADMITTED: (1, 2), State.INACTIVE: (), State.FINISHED: (),
    State.STOPPING: (1,),  # QuotaReserved still True while its job stops
}
_ALLOWED: dict[State, frozenset[State]] = {
    # PENDING and INACTIVE -> STOPPING: an evicted workload restored as its status left it
    State.PENDING: frozenset((*_HOLDS, State.PENDING, State.INACTIVE, State.FINISHED, State.STOPPING)),
    State.QUOTA_RESERVED: frozenset((State.ADMITTED, State.PENDING, State.INACTIVE, State.FINISHED, State.STOPPING)),
    State.ADMITTED: frozenset((State.PENDING, State.INACTIVE, State.FINISHED, State.STOPPING)),
    State.STOPPING: frozenset(_RELEASED),
    State.INACTIVE: frozenset((State.PENDING, State.INACTIVE, State.FINISHED, State.STOPPING)),
    State.FINISHED: frozenset(),
}


def _replace_active(spec: model.Workload, active: bool) -> model.Workload:
    return replace(spec, active=active)
