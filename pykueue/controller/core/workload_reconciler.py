"""The Workload reconciler: makes the engine agree with the cached Workloads, and writes what a Workload's
object still needs besides its status.

Shaped as controller-runtime's: ``reconcile(key)`` reads the informer's copy (never the event's) and the
engine, so running it twice does nothing twice and a lost event is repaired by the next resync. An object
is its UID: its memory is one ``WorkloadRecord``, dropped when the object goes, and a different UID under
a known name is the old object's delete and the new one's add. The status Kueue's admission side owns is
written by the status writer alone (``workload_writer``); the writes here are the object's own:
``spec.active=false`` for a workload Kueue deactivated, and the resource-in-use finalizer off a finished
or deleted one once its job has stopped. Each is checked against the cache first and carries the uid (and
resourceVersion where it matters) as a precondition; a failure raises and the work queue retries it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

from pykueue.controller.core import translate, views
from pykueue.controller.core.events import Recorder
from pykueue.controller.core.workload_records import WorkloadRecords
from pykueue.controller.core.workload_writer import WorkloadStatusWriter
from pykueue.engine import events as ev
from pykueue.engine.engine import Engine
from pykueue.engine.model import US
from pykueue.engine.workload import State
from pykueue.jobs.framework.workload import RESOURCE_IN_USE_FINALIZER
from pykueue.kube import resources as r
from pykueue.kube.client import ApiError, Kube
from pykueue.kube.informer import DELETED, Informer, key_of
from pykueue.kube.workqueue import WorkQueue

log = logging.getLogger("pykueue.controller")

INVALID_WORKLOAD = "InvalidSpec"  # a Workload that bypassed validation: its Warning event's reason


class JobSide(Protocol):
    """What the Workload side asks of the job side: whose owner to look at, and whether anything of a
    Workload's job is still there."""

    def enqueue_owner(self, workload: dict[str, Any]) -> None: ...

    def job_present(self, workload: dict[str, Any]) -> bool | None:
        """A job of a managed kind behind the Workload is in the caches (None: not known yet)."""
        ...


class WorkloadReconciler:
    def __init__(self, engine: Engine, kube: Kube, informers: dict[str, Informer], records: WorkloadRecords,
                 status_writer: WorkloadStatusWriter, recorder: Recorder, clock: Callable[[], float], *,
                 priority_objects: Callable[[], list[dict[str, Any]]], queues_changed: Callable[[], None],
                 pods_ready: Callable[[str], None], jobs: JobSide) -> None:
        self.engine = engine
        self.kube = kube
        self.informers = informers
        self.records = records
        self.status_writer = status_writer
        self.recorder = recorder
        self.clock = clock
        self.priority_objects = priority_objects
        self.queues_changed = queues_changed
        self.pods_ready = pods_ready
        self.jobs = jobs
        status_writer.undo = self.undo
        self.converted: dict[bytes, Any] = {}  # translate.workload's cache, by shape
        self.unevaluated: dict[str, None] = {}  # new pending workloads: their status waits for a pass
        # The object writes that must land (see the module's docstring), level-triggered from the cache.
        self.writes = WorkQueue()

    def now_us(self) -> int:
        return round(self.clock() * US)

    def _cached(self, key: str) -> dict[str, Any] | None:
        inf = self.informers.get("workloads")
        return inf.get(key) if inf is not None else None

    # ---- the informer's handler ------------------------------------------------------------------

    def handle(self, kind: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        """A change seen: the owner's job is looked at again, a deleted object leaves, and the key is
        reconciled from the cache (which already holds the change, or the successor of a deleted one)."""
        obj = new or old
        assert obj is not None
        key = key_of(obj)
        self.jobs.enqueue_owner(obj)
        if kind == DELETED:
            self._gone(key, obj["metadata"].get("uid"))
        self.reconcile(key)

    def _gone(self, key: str, uid: str | None) -> None:
        """The object ``uid`` no longer exists: whatever it held is released and its record goes (a
        successor under the same name is a new object)."""
        rec = self.records.get(key)
        if rec is not None and rec.uid is not None and uid is not None and rec.uid != uid:
            return  # an older object's delete, heard after its successor's add
        if self.engine.has_workload(key):
            self.engine.delete_workload(key)
            self.queues_changed()
        self.forget(key)

    # ---- reconcile: cache and engine -> engine ---------------------------------------------------

    def reconcile(self, key: str) -> None:
        """Make the engine agree with the cached Workload under ``key`` (the copy alone decides)."""
        obj = self._cached(key)
        if obj is None:
            self._gone(key, None)
            return
        engine, now = self.engine, self.now_us()
        rec, replaced = self.records.observe(key, obj["metadata"].get("uid"))
        if replaced and engine.has_workload(key):
            # another object under a known name: the predecessor is gone, whatever it held with it
            engine.delete_workload(key)
            self.status_writer.forget(key)
            self.unevaluated.pop(key, None)
            self.queues_changed()
        meta = obj["metadata"]
        finished = translate.is_true(obj, "Finished")
        if meta.get("deletionTimestamp"):
            self._deleting(key, obj, now)
        elif not engine.has_workload(key):
            self._add(key, obj, now, finished)
        else:
            self._sync(key, obj, now, finished)
        self.records.at(key).seen_version = meta.get("resourceVersion")  # the copy the engine now holds

    def undo(self, key: str) -> None:
        """The API server refused a reservation because the copy it was decided on has changed: the
        engine's decision is taken back and the Workload queued again as the cache has it now (upstream's
        scheduler forgets its assumed workload and requeues it on a failed apply)."""
        obj = self._cached(key)
        if obj is None or (obj.get("status") or {}).get("admission") or not views.holds_quota(self.engine, key):
            return  # gone, reserved in the API after all, or the engine moved on
        self._take_again(key)

    def _take_again(self, key: str) -> None:
        """The engine's copy of ``key`` dropped and the Workload taken again from the cache, as a restart
        takes it (pending, or holding what its recorded admission says)."""
        self.engine.delete_workload(key)
        self.unevaluated.pop(key, None)
        self.reconcile(key)
        self.queues_changed()

    def _deleting(self, key: str, obj: dict[str, Any], now: int) -> None:
        """Being deleted: its job is stopped first, and its quota counts until it is gone."""
        engine = self.engine
        if not engine.has_workload(key) and (held := translate.held_invalid(obj)) is not None:
            # first seen being deleted (a restart) while it holds quota: counted until it is gone
            converted, _ = translate.workload(obj, self.priority_objects(), self.converted)
            engine.add_workload(converted if converted is not None else held, now)
        if engine.has_workload(key):
            engine.workload_deleting(key, now)
            self.release_if_nothing_runs(key, obj)
            self.queues_changed()
        uid = obj["metadata"].get("uid")
        self.forget(key)
        self.records.observe(key, uid)  # still this object's name until it is gone
        if RESOURCE_IN_USE_FINALIZER in (obj["metadata"].get("finalizers") or []):
            self.writes.add(key)

    def _add(self, key: str, obj: dict[str, Any], now: int, finished: bool) -> None:
        """A Workload the engine does not know yet (new, or seen again after a restart)."""
        engine, rec = self.engine, self.records.at(key)
        if finished:
            if RESOURCE_IN_USE_FINALIZER in (obj["metadata"].get("finalizers") or []):
                self.writes.add(key)
            return
        converted, problems = translate.workload(obj, self.priority_objects(), self.converted)
        if converted is None:
            self._report_invalid(key, obj, "; ".join(problems))
            held = translate.held_invalid(obj)
            if held is not None:  # invalid, but its quota is in use: it stays counted while it runs
                engine.add_workload(held, now)
                rec.generation = obj["metadata"].get("generation") or 0
                self.queues_changed()
            return
        rec.invalid = None
        engine.add_workload(converted, now)
        rec.generation = obj["metadata"].get("generation") or 0
        if engine.state_of(key) is State.STOPPING:
            self.release_if_nothing_runs(key, obj)  # restored evicted: its job may be gone already
        if engine.state_of(key) is not State.ADMITTED:
            # Written after the next pass has tried it, with the scheduler's message, as upstream
            # does; a workload that pass admits gets one write, its admission.
            self.unevaluated[key] = None
        self.queues_changed()  # the queues count it pending even if no decision follows

    def _sync(self, key: str, obj: dict[str, Any], now: int, finished: bool) -> None:
        """A Workload the engine knows: every field the engine follows is compared with the copy."""
        engine, rec = self.engine, self.records.at(key)
        state = views.admitted_state(engine, key)
        if state is State.PENDING and not finished and self._adopt(key, obj, now):
            return
        # after the adoption: a reservation someone else wrote on a pending Workload is counted, not
        # taken for a changed status to write back over (which would also make it look owed by us)
        self.status_writer.observed(key, obj)
        changed = False
        if finished and state is not State.FINISHED:
            if state in (State.QUOTA_RESERVED, State.ADMITTED):
                engine.finish_workload(key, now)
            else:
                engine.delete_workload(key)
            if RESOURCE_IN_USE_FINALIZER in (obj["metadata"].get("finalizers") or []):
                self.writes.add(key)
            changed = True
        if (obj["metadata"].get("generation") or 0) != rec.generation and state is not State.FINISHED:
            changed |= self._spec_changed(key, obj, now)
            state = views.admitted_state(engine, key)
        w = views.snapshot(engine, key)  # one snapshot for the rest: each step below moves its own field
        if w is not None:
            # spec.active, level-triggered: the engine follows the API, except while Kueue's own
            # deactivation (the engine says so) has not been seen in the API yet: a copy older than
            # Kueue's spec.active=false must not undo it.
            active = _active(obj)
            ours = _deactivated_by_kueue(w)
            if ours and not active:
                rec.deactivation_seen = True
            if ours and not rec.deactivation_seen:
                pass  # our spec.active=false is on its way (writes)
            elif active != w.spec.active and w.state is not State.FINISHED:
                rec.deactivation_seen = False
                engine.set_active(key, active, now)
                changed = True
            # PodsReady, level-triggered: ready takes the pods-ready deadline away; no longer ready
            # starts recoveryTimeout. The engine keeps both deadlines; the scheduling loop wakes for them.
            ready = translate.is_true(obj, "PodsReady")
            if state is State.ADMITTED and ready != w.pods_ready:
                if ready:
                    engine.mark_pods_ready(key, now)
                    self.pods_ready(key)
                else:
                    engine.mark_pods_not_ready(key, now)
                changed = True
            reclaimable = translate.reclaimable_pods(obj)
            if reclaimable != dict(w.spec.reclaimable_pods) and w.state is not State.FINISHED:
                engine.set_reclaimable_pods(key, reclaimable, now)  # succeeded pods give their quota back
                changed = True
            states = w.check_states
            for check in (obj.get("status") or {}).get("admissionChecks") or []:
                name, value = check.get("name"), check.get("state")
                if name in states and value and states[name] != value:
                    engine.set_check_state(key, name, value, now)
                    changed = True
        if engine.state_of(key) is State.STOPPING:
            changed |= self.release_if_nothing_runs(key, obj)
        if changed:
            self.status_writer.mark(key)
            self.queues_changed()  # usage and counts moved even when no scheduling decision follows

    def _adopt(self, key: str, obj: dict[str, Any], now: int) -> bool:
        """A reservation on a Workload the engine keeps pending, written by someone else (a deposed
        leader that stalled, another Kueue, a user's status patch): its job may start on it, so it is
        counted as a restart would count it, in the ClusterQueue it names, and the queues' further
        admissions follow from that (upstream's workload controller adds any newly reserved Workload to
        its cache). A reservation this controller wrote and has since taken back is not one."""
        if translate.held_invalid(obj) is None or self.status_writer.wrote_or_owes(key, obj):
            return False  # no reservation that counts, or ours on its way out
        log.warning("reservation not made by this controller adopted", extra={"fields": {
            "workload": key, "clusterQueue": (obj["status"].get("admission") or {}).get("clusterQueue")}})
        self._take_again(key)
        self.status_writer.mark(key)
        return True

    def _spec_changed(self, key: str, obj: dict[str, Any], now: int) -> bool:
        """A new generation of the Workload's spec: the engine takes the new queue, priority, pod sets
        and execution limit (``Engine.update_workload``). One that fails validation now is reported on
        itself; while it holds quota it stays counted as it was, otherwise it leaves the queues."""
        rec = self.records.at(key)
        rec.generation = obj["metadata"].get("generation") or 0
        converted, problems = translate.workload(obj, self.priority_objects(), self.converted)
        if converted is None:
            self._report_invalid(key, obj, "; ".join(problems))
            if not views.holds_quota(self.engine, key) and self.engine.state_of(key) is not State.STOPPING:
                self.engine.delete_workload(key)
                return True
            return False
        rec.invalid = None
        w = views.snapshot(self.engine, key)
        if w is not None and w.spec.kind == translate.HELD_INVALID and not views.holds_usage(self.engine, key):
            self.engine.delete_workload(key)  # the stand-in goes: the valid Workload queues as itself
            self.engine.add_workload(converted, now)
            return True
        return self.engine.update_workload(converted, now)

    def _report_invalid(self, key: str, obj: dict[str, Any], message: str) -> None:
        """A Workload that bypassed validation is told on itself (QuotaReserved=False naming the field,
        written by the status writer; a Warning event), not only in a log line; it queues once valid."""
        rec = self.records.at(key)
        if rec.invalid != message:
            log.warning("invalid workload not queued", extra={"fields": {"workload": key, "problems": message}})
            self.recorder.emit(obj, INVALID_WORKLOAD, message[:1024], "Warning")
        rec.invalid = message
        self.status_writer.mark(key)

    # ---- the job side's reports ------------------------------------------------------------------

    def job_stopped(self, key: str) -> bool:
        """The job side saw the job of an evicted (or deleted) Workload stopped: its quota is released
        (a deleted one's only once the object is gone; its finalizer may go now). Whether it changed."""
        if not self.engine.job_stopped(key, self.now_us()):
            return False
        self.drop_held_invalid(key)
        if not self.engine.has_workload(key) or self.engine.state_of(key) is State.STOPPING:
            self.writes.add(key)  # being deleted: the resource-in-use finalizer may go
            return True
        log.info("job stopped; quota released", extra={"fields": {"workload": key}})
        self.status_writer.mark(key)
        self.queues_changed()
        return True

    def hold(self, key: str, held: bool, message: str = "") -> bool:
        """A Workload's job holds it or lets it go (a StatefulSet scaled to zero and back: upstream's
        OnHold). Held, it gives its quota back once its job has stopped and is written QuotaReserved=False
        OnHold; let go, it queues again. Whether it changed."""
        if not self.engine.has_workload(key) or not self.engine.hold(key, held, self.now_us(), message):
            return False
        log.info("workload on hold" if held else "workload no longer on hold", extra={"fields": {"workload": key}})
        self.status_writer.mark(key)
        self.queues_changed()
        return True

    def drop_held_invalid(self, key: str) -> None:
        """An invalid Workload's stand-in that no longer holds quota leaves the engine: it must never be
        admitted as the stand-in (it queues again once its spec is valid)."""
        w = views.snapshot(self.engine, key)
        if w is not None and w.spec.kind == translate.HELD_INVALID and not views.holds_usage(self.engine, key):
            self.engine.delete_workload(key)

    def release_if_nothing_runs(self, key: str, obj: dict[str, Any]) -> bool:
        """A STOPPING Workload with no job of a managed kind behind it in the caches (a bare Workload,
        or its owners gone): nothing of it runs, so its quota goes now. Otherwise the job side reports
        the stop once it sees it (``job_stopped``)."""
        if self.jobs.job_present(obj) is not False:
            return False
        return self.job_stopped(key)

    # ---- the engine's decisions ------------------------------------------------------------------

    def on_event(self, event: ev.Event) -> None:
        """What one engine decision asks of the Workload side besides its status."""
        key = event.workload
        if event.type == ev.DEACTIVATED:
            self.writes.add(key)
        rec = self.records.get(key)
        if rec is not None and rec.invalid is not None:
            self.drop_held_invalid(key)
        if event.type == ev.EVICTED and self.engine.state_of(key) is State.STOPPING:
            obj = self._cached(key)
            if obj is not None:
                self.release_if_nothing_runs(key, obj)

    def flush_unevaluated(self) -> None:
        """After a pass: the new pending workloads it tried get their status written."""
        for key in self.unevaluated:
            self.status_writer.mark(key)
        self.unevaluated.clear()

    # ---- the object's own writes -----------------------------------------------------------------

    async def write(self, key: str) -> None:
        """The writes a Workload's cached copy may still need; each is checked against the cache first,
        so running it twice writes nothing twice. A failure raises: the work queue retries the key."""
        obj = self._cached(key)
        if obj is None:
            return
        meta = obj["metadata"]
        namespace, name = key.split("/", 1)
        w = views.snapshot(self.engine, key)
        rec = self.records.get(key)
        if w is not None and _deactivated_by_kueue(w) and _active(obj) and not (rec and rec.deactivation_seen):
            # Kueue deactivated it (requeuing limit, a check Rejected, the execution limit).
            await self.kube.merge_patch(r.WORKLOAD, name, {"metadata": {"uid": meta.get("uid")}, "spec": {"active": False}},
                                        namespace)  # the uid: a precondition (never a successor's)
        finalizers = meta.get("finalizers") or []
        done = meta.get("deletionTimestamp") or translate.is_true(obj, "Finished")
        if (RESOURCE_IN_USE_FINALIZER in finalizers and done and not views.holds_quota(self.engine, key)
                and self.engine.deleted_job_stopped(key)):
            kept = [f for f in finalizers if f != RESOURCE_IN_USE_FINALIZER]
            patch = {"metadata": {"finalizers": kept, "resourceVersion": meta["resourceVersion"], "uid": meta.get("uid")}}
            try:
                await self.kube.merge_patch(r.WORKLOAD, name, patch, namespace)
            except ApiError as exc:
                if exc.status != 404:
                    raise

    def write_error(self, key: str, exc: Exception) -> None:
        level = logging.DEBUG if isinstance(exc, ApiError) and exc.status == 409 else logging.WARNING
        log.log(level, "workload not updated; retrying", extra={"fields": {"workload": key, "error": str(exc)}})

    # ---- level-triggered repair ------------------------------------------------------------------

    def resync(self) -> None:
        """Every cached Workload compared with the engine again: one the engine lacks is added, one the
        API no longer has is removed, a stop the job side has not reported is looked for again."""
        workloads = self.informers["workloads"]
        for key, obj in list(workloads.store.items()):
            known = self.engine.has_workload(key)
            rec = self.records.get(key)
            if not known and not translate.is_true(obj, "Finished") and not obj["metadata"].get("deletionTimestamp"):
                self.reconcile(key)
            elif rec is not None and rec.invalid is not None:
                self.status_writer.mark(key)
            elif (self.engine.state_of(key) in (State.INACTIVE, State.STOPPING)
                  and not (rec is not None and rec.deactivation_seen)):
                self.writes.add(key)
        for key in self.engine.workload_keys(State.STOPPING):  # a stop the job side has not reported yet
            if (obj := workloads.get(key)) is not None:
                self.jobs.enqueue_owner(obj)
                self.release_if_nothing_runs(key, obj)
        for key in [k for k in self.engine.workload_keys() if k not in workloads.store]:
            self._gone(key, None)

    def reload(self) -> None:
        """Every cached Workload into a reset engine, as a restart does (their records start afresh)."""
        self.records.clear()
        self.unevaluated.clear()
        workloads = self.informers.get("workloads")
        for key in list(workloads.store) if workloads is not None else []:
            self.reconcile(key)

    def forget(self, key: str) -> None:
        self.records.forget(key)
        self.status_writer.forget(key)
        self.unevaluated.pop(key, None)


def _deactivated_by_kueue(w: Any) -> bool:
    """Kueue itself deactivated it (not the user): Inactive, or its job still stopping on the way there."""
    return w.deactivated_by is not None and not w.spec.active and w.state in (State.INACTIVE, State.STOPPING)


def _active(obj: dict[str, Any]) -> bool:
    return (obj.get("spec") or {}).get("active", True) is not False
