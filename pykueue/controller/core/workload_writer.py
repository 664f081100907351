"""The Workload status Kueue's admission side owns, written from the engine's decisions.

Releases before reservations: a reservation is written only once every release the engine made before
it is in the API, so a watcher never sees more admitted than the quota, not even while the API server is
unreachable. Pending messages, which no quota depends on, wait in an ordered backlog and go out a few
per pass; a pending workload is told only its own answer (``Engine.has_own_answer``), as upstream's
bulk move writes nothing for equivalents set aside; failed writes come back with backoff.

No work is lost: a key leaves the dirty set only once its write landed or was found moot (the object
is gone, nothing changed), and only if it was not marked again meanwhile; a pass that raises leaves
its keys dirty for the next one.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import itertools
import logging
from collections.abc import Callable
from typing import Any

from pykueue.controller.core import translate, views
from pykueue.controller.core.events import Recorder
from pykueue.controller.core.workload_records import WorkloadRecord, WorkloadRecords
from pykueue.controller.core.workload_status import (
    MANAGER,
    Eviction,
    WorkloadView,
    api_reason,
    apply_body,
    comparable,
    desired_status,
    invalid_status,
    preempted_message,
    released_status,
    reserves,
    rfc3339,
    shows,
)
from pykueue.controller.runtime.parallel import WRITE_CONCURRENCY, in_parallel
from pykueue.controller.runtime.supervise import retry_delay
from pykueue.engine import events as ev
from pykueue.engine import slices
from pykueue.engine.engine import Engine
from pykueue.engine.workload import PENDING_EVALUATION, State
from pykueue.kube import resources as r
from pykueue.kube.client import ApiError, Kube
from pykueue.kube.informer import Informer

log = logging.getLogger("pykueue.controller")

MESSAGES_PER_PASS = 2 * WRITE_CONCURRENCY  # pending messages written per pass of the status writer
PENDING_SWEEP_SECONDS = 5.0


class WorkloadStatusWriter:
    def __init__(self, engine: Engine, kube: Kube, informers: dict[str, Informer], recorder: Recorder,
                 clock: Callable[[], float], kick: Callable[[], None], records: WorkloadRecords | None = None) -> None:
        self.engine = engine
        self.granular = engine.config.granular_reasons  # the pending reasons as the API shows them: api_reason
        self.records = records if records is not None else WorkloadRecords()
        self.kube = kube
        self.informers = informers
        self.recorder = recorder
        self.clock = clock
        self.kick = kick  # a scheduling pass is due (a write the server refused undid a decision)
        # a reservation the API server refused (409: the copy it was decided on has changed) is taken
        # back: the Workload reconciler's ``undo`` (set by it) queues it again from the cached copy
        self.undo: Callable[[str], None] = lambda key: None
        # a reservation's or admission's Event and metrics, told once its write has landed (set by the
        # manager): a decision the API server refused is never announced, as upstream announces only
        # after its apply succeeded
        self.announce: Callable[[ev.Event, str | None], None] = lambda event, reason: None
        # The work this writer has, by key (each object's own memory is its WorkloadRecord):
        self.unreleased: set[str] = set()  # releases the API has not taken yet: reservations wait for them
        self.dirty: dict[str, int] = {}  # key -> its latest mark: a key marked again during its write stays
        self._marks = itertools.count()
        self.messages: dict[str, None] = {}  # pending messages waiting their turn, oldest first
        self.wake = asyncio.Event()

    def note(self, event: ev.Event, reason: str | None) -> None:
        """What an eviction's conditions will say (upstream names a preemptor by its UID; the engine,
        which knows no UIDs, by its key); then the workload's status is due."""
        key = event.workload
        if event.type == ev.PREEMPTED:
            rec = self.records.at(key)
            rec.preemptor = event.by or ""
            rec.eviction = Eviction(ev.EVICTED_PREEMPTED, "", preemption_reason=event.reason)
        elif event.type == ev.EVICTED:
            rec = self.records.at(key)
            rec.held.clear()  # taken back before its write landed: never announced
            previous = rec.eviction
            preemption = previous.preemption_reason if previous and event.reason == ev.EVICTED_PREEMPTED else None
            if event.reason == ev.EVICTED_PREEMPTED:
                message = preempted_message(self.uids(rec.preemptor or ""), preemption)
            else:
                message = event.message or reason or "Evicted"  # the engine's wording, built once
            rec.eviction = Eviction(reason or "", message, preemption)
        elif event.type == ev.FINISHED and event.reason == slices.WORKLOAD_SLICE_REPLACED:
            self.records.at(key).replaced = event.message or "replaced"
        elif event.type == ev.QUOTA_RESERVED:
            rec = self.records.at(key)
            rec.decided_on = rec.seen_version  # the copy this decision was made on
            rec.held = [(event, reason)]
        elif event.type == ev.ADMITTED:
            self.records.at(key).held.append((event, reason))
        self.mark(key)

    def wrote_or_owes(self, key: str, obj: dict[str, Any]) -> bool:
        """The admission ``obj`` shows is this writer's: its last landed write carried that placement,
        or a write of ``key`` is still due (dirty, or a release held back behind a failure), so the API
        may show a reservation the engine has since taken back. Otherwise someone else wrote it."""
        if key in self.dirty or key in self.unreleased:
            return True
        rec = self.records.get(key)
        written = (rec.written or {}).get("admission") if rec is not None else None
        shown = (obj.get("status") or {}).get("admission")
        return isinstance(written, dict) and isinstance(shown, dict) and _placement(written) == _placement(shown)

    def forget(self, key: str) -> None:
        """The writer's pending work for ``key`` (its memory goes with its record)."""
        self.unreleased.discard(key)
        self.dirty.pop(key, None)
        self.messages.pop(key, None)

    def mark(self, key: str) -> None:
        self.dirty[key] = next(self._marks)
        self.wake.set()

    def _settled(self, key: str, mark: int) -> None:
        """`key`'s write as of `mark` is done (landed, moot, or its retry scheduled): it leaves the
        dirty set, unless it was marked again while the write was in flight."""
        if self.dirty.get(key) == mark:
            del self.dirty[key]

    async def run(self) -> None:
        """Write what the engine decided, releases first: a reservation is written only once every
        release the engine made before it is in the API, so a watcher never sees more admitted than
        the quota, not even while the API server is unreachable."""
        if self.dirty or self.messages:
            self.wake.set()  # started again after a pass that raised: its keys are still here
        while True:
            await self.wake.wait()
            self.wake.clear()
            marks = dict(self.dirty)
            releases: list[tuple[str, int]] = []  # (key, the mark this pass writes)
            reservations: list[tuple[str, int]] = []
            for k, mark in marks.items():
                if views.holds_quota(self.engine, k):
                    reservations.append((k, mark))
                elif self._may_show_quota(k):
                    releases.append((k, mark))
                else:  # a pending message of a workload the API shows without quota: waits its turn
                    self.messages[k] = None
                    self._settled(k, mark)
            await in_parallel(releases, self._write_settled)
            self.unreleased = {k for k in self.unreleased if self._release_pending(k)}
            if self.unreleased:
                continue  # the reservations stay dirty; written once the releases' retries get through
            # Admissions before messages: under load a pass has hundreds of pending messages to
            # refresh, and each admission written late holds its quota longer. The messages wait in
            # `messages`, classified once, and go out a few per pass of this loop.
            await in_parallel(reservations, self._write_settled)
            batch = list(itertools.islice(self.messages, MESSAGES_PER_PASS))
            await in_parallel(batch, self._write_message)
            if self.messages:
                self.wake.set()

    async def _write_settled(self, item: tuple[str, int]) -> None:
        key, mark = item
        await self._attempt(key)
        self._settled(key, mark)

    async def _attempt(self, key: str) -> None:
        """One key's write; an error outside the request (a bug in building the status) is that key's
        failure, retried with backoff, never the end of the pass and its other keys."""
        try:
            await self.write(key)
        except Exception as exc:  # noqa: BLE001 - logged and retried; the request's own errors are write's
            if not (rec := self.records.get(key)) or not rec.failures:  # the traceback once per key and streak; _retry_status logs each try
                log.error("status not built", exc_info=True, extra={"fields": {"workload": key}})
            self._retry_status(key, exc, transient=False)

    async def _write_message(self, key: str) -> None:
        """A pending message from the backlog; a workload reserved since it was queued there is
        written in the next pass, as a reservation, behind the releases made before it."""
        if views.holds_quota(self.engine, key):
            self.mark(key)
        else:
            await self._attempt(key)
        self.messages.pop(key, None)  # written, moot, or its retry scheduled

    def _may_show_quota(self, key: str) -> bool:
        """The API may show `key` with quota: its last copy does, a reservation of ours was written,
        or a write of ours failed (it may have landed): its status is a release, written first."""
        obj = self.informers["workloads"].get(key)
        if obj is not None and translate.is_true(obj, "QuotaReserved"):
            return True
        rec = self.records.get(key)
        if rec is None:
            return False
        reserved = _written_condition(rec.written, "QuotaReserved")
        if reserved is not None and reserved.get("status") == "True":
            return True
        return rec.failures > 0

    def _release_pending(self, key: str) -> bool:
        """The API still shows quota for `key` that the engine has given back."""
        obj = self.informers["workloads"].get(key)
        return (obj is not None and self.engine.has_workload(key) and not views.holds_quota(self.engine, key)
                and translate.is_true(obj, "QuotaReserved") and not translate.is_true(obj, "Finished"))

    async def write(self, key: str) -> None:
        """Compute ``key``'s status from the cached object and the engine, and apply it only when it
        differs from what the API shows or what this writer last wrote. The one path for the status
        Kueue's admission side owns: a decision's conditions and admission, and an invalid
        Workload's Misconfigured condition alike."""
        obj = self.informers["workloads"].get(key)
        rec = self.records.get(key)
        if obj is None or (rec is not None and rec.uid is not None and obj["metadata"].get("uid") != rec.uid):
            self.unreleased.discard(key)
            return  # gone, or a successor its informer handler has not taken yet
        state = self.engine.state_of(key)
        if state is None or state is State.FINISHED:
            self.unreleased.discard(key)
            done = obj["metadata"].get("deletionTimestamp") or translate.is_true(obj, "Finished")
            if state is None and rec is not None and rec.invalid is not None and not done:
                await self._apply(key, obj, invalid_status(obj, rec.invalid, self.clock(), granular=self.granular), None)
            elif state is State.FINISHED and rec is not None and rec.replaced is not None and not done:
                await self._finish_replaced(key, obj, rec.replaced)
            return
        shown = None
        if state is State.PENDING and not views.has_own_answer(self.engine, key):
            # Not tried yet, or set aside with its class: upstream writes no condition for it then, and
            # the API keeps the pending answer it last showed (none, for a new workload). A release is
            # always written, in the engine's words: the API must stop showing the quota.
            shown = _written_condition(rec.written if rec else None, "QuotaReserved")
            if shown is None and not self._may_show_quota(key):
                return
            if shown is not None and shown.get("status") != "False":
                shown = None
        view = views.workload(self.engine, key)
        assert view is not None
        eviction, preemptor = (rec.eviction, rec.preemptor) if rec else (None, None)
        uids = self.uids(preemptor) if preemptor is not None else None
        if view.spec.kind == translate.HELD_INVALID:
            # an invalid Workload's stand-in: its recorded admission stays as the API has it, but an
            # eviction (a preemption victim, say) is written as for any other, so that its job is stopped
            # and the quota it holds can go (upstream writes Evicted for every victim)
            recorded = (obj.get("status") or {}).get("admission")
            if view.state is not State.STOPPING or eviction is None or not isinstance(recorded, dict):
                return
            status = desired_status(view, obj, eviction, uids, self.clock(), granular=self.granular)
            status["admission"] = copy.deepcopy(recorded)
            status.pop("admissionChecks", None)
            await self._apply(key, obj, status, view)
            return
        if shown is not None:
            view = dataclasses.replace(view, reason=shown.get("reason"), message=shown.get("message", ""))
        status = desired_status(view, obj, eviction, uids, self.clock(), granular=self.granular)
        if await self._apply(key, obj, status, view) and view.state is State.PENDING and shown is None \
                and view.reason and view.reason != PENDING_EVALUATION:
            # Upstream's scheduler records each pending answer it writes as a Warning event.
            self.recorder.emit(obj, api_reason(view.reason, self.granular) or view.reason, (view.message or "")[:1024],
                               "Warning")

    async def _finish_replaced(self, key: str, obj: dict[str, Any], message: str) -> None:
        """An old workload slice a scale-up replaced (upstream's replaceWorkloadSlice): Finished, reason
        WorkloadSliceReplaced, with the admission it ran under; its quota is the new slice's now."""
        view = views.workload(self.engine, key)
        if view is None:
            return
        status = desired_status(view, obj, None, None, self.clock(), granular=self.granular)
        status["conditions"].append({"type": "Finished", "status": "True", "reason": slices.WORKLOAD_SLICE_REPLACED,
                                     "message": message, "lastTransitionTime": rfc3339(self.clock())})
        await self._apply(key, obj, status, view)

    async def _apply(self, key: str, obj: dict[str, Any], status: dict[str, Any], view: WorkloadView | None) -> bool:
        """Apply ``status`` unless the API has it already: whether a write landed. What the API has is
        the cached object once the informer has shown this writer's last write (or before its first
        write: a restart); until then the cache may lag that write, and only what was written is
        trusted. So a status another writer changed after ours (a stalled deposed leader, a user's
        patch) is written again, as upstream's workload controller compares with the object it reads.
        A refused write is retried with backoff (a 404 undoes the decision)."""
        rec = self.records.at(key)
        wanted = comparable(status)
        current = rec.written is None or rec.written_seen  # the cache is at or past our last write
        if shows(obj, wanted) if current else rec.written == wanted:
            rec.written = wanted
            self._landed(key, rec, view)
            return False
        strict = reserves(obj, status)
        try:
            if _moved(obj, status):
                # Released and reserved again elsewhere before the release was written: an admission is
                # never changed in place (the CRD and the webhook refuse it), so the release goes first.
                await self.kube.apply(r.WORKLOAD, apply_body(obj, released_status(obj, self.clock())), manager=MANAGER, subresource="status")
            answer = await self.kube.apply(r.WORKLOAD, apply_body(obj, status, rec.decided_on if strict else None),
                                           manager=MANAGER, subresource="status")
        except ApiError as exc:
            if exc.status == 404:
                if self.engine.has_workload(key):
                    self.engine.delete_workload(key)  # the write the server refused is undone in the engine
                    self.kick()
                self.unreleased.discard(key)
                return False
            if exc.status == 409 and strict:
                # decided on a copy that has changed since: never sent again as it was; the decision is
                # undone in the engine and the Workload queued again as the API now has it (upstream's
                # scheduler forgets the assumed workload and requeues it)
                log.debug("reservation refused: its copy changed; queued again", extra={"fields": {
                    "workload": key, "decidedOn": rec.decided_on}})
                rec.decided_on = None
                rec.held.clear()
                self.undo(key)
                self.kick()
                return False
            # The server refused the content (4xx): retrying will not help the releases behind it.
            self._retry_status(key, exc, transient=exc.status >= 500 or exc.status in (408, 429))
            return False
        except Exception as exc:  # noqa: BLE001 - transport errors: retry, never stop the loop
            self._retry_status(key, exc, transient=True)
            return False
        rec.written = wanted
        version = ((answer or {}).get("metadata") or {}).get("resourceVersion") if isinstance(answer, dict) else None
        rec.written_version, rec.written_seen = version, False
        self._landed(key, rec, view)
        return True

    def observed(self, key: str, obj: dict[str, Any]) -> None:
        """Each copy of ``key`` the informer shows (the Workload reconciler's call): the copy of this
        writer's last write marks the cache as caught up with it; a later copy whose owned status no
        longer shows that write was changed by someone else, and the status is due again."""
        rec = self.records.get(key)
        if rec is None or rec.written is None:
            return
        version = obj["metadata"].get("resourceVersion")
        if version is not None and version == rec.written_version:
            rec.written_seen = True
        elif rec.written_seen and not shows(obj, rec.written) and key not in self.dirty:
            log.info("workload status changed by another writer; written again", extra={"fields": {
                "workload": key, "resourceVersion": version}})
            self.mark(key)

    def _landed(self, key: str, rec: WorkloadRecord, view: WorkloadView | None) -> None:
        rec.written_pending = (view.reason, view.message or None) if view and view.state is State.PENDING else None
        rec.failures = 0
        self.unreleased.discard(key)
        while rec.held:
            event, reason = rec.held[0]
            kind = "QuotaReserved" if event.type == ev.QUOTA_RESERVED else "Admitted"
            shown = _written_condition(rec.written, kind)
            if shown is None or shown.get("status") != "True":
                break  # an earlier write landed; the one carrying this decision is still to come
            rec.held.pop(0)
            self.announce(event, reason)

    def _retry_status(self, key: str, exc: Exception, *, transient: bool) -> None:
        """Write `key` again after a growing delay. A release that failed holds the reservations back
        until it gets through, whatever the failure: one the server refused for its content (a 4xx that
        a retry may not cure) holds them too, since until then the API shows that quota in use and a
        watcher would see more admitted than the quota (safety before progress; the error is logged)."""
        rec = self.records.at(key)
        failures = rec.failures
        rec.failures = failures + 1
        delay = retry_delay(failures)
        releasing = self._release_pending(key)
        if releasing:
            self.unreleased.add(key)
        # One warning per key and outage (then every tenth try), not one per retry of every workload; a
        # conflict (a strict write decided on a copy the API server has since replaced) is routine; a
        # refused release stops every reservation behind it, so each of its tries is an error.
        conflict = isinstance(exc, ApiError) and exc.status == 409
        level = logging.WARNING if failures % 10 == 0 and not conflict else logging.DEBUG
        if releasing and not transient:
            level = logging.ERROR
        log.log(level, "status not written; retrying", extra={"fields": {
            "workload": key, "error": str(exc), "failures": failures + 1, "retryIn": f"{delay:g}s"}})
        asyncio.get_running_loop().call_later(delay, self.mark, key)

    async def sweep(self) -> None:
        """Pending workloads' QuotaReserved=False messages change as the queue moves; refresh them
        every few seconds rather than on every cycle."""
        while True:
            await asyncio.sleep(PENDING_SWEEP_SECONDS)
            engine, records = self.engine, self.records
            for key in views.pending_keys(engine):
                rec = records.get(key)
                shown = rec.written_pending if rec is not None else None
                if views.pending_condition(engine, key) != shown and views.has_own_answer(engine, key):
                    self.mark(key)

    def uids(self, key: str) -> tuple[str, str]:
        workloads = self.informers.get("workloads")
        obj = workloads.get(key) if workloads and key else None
        if obj is None:
            return "UNKNOWN", "UNKNOWN"
        labels = obj["metadata"].get("labels") or {}
        return obj["metadata"].get("uid", "UNKNOWN"), labels.get("kueue.x-k8s.io/job-uid", "UNKNOWN")


def _placement(admission: dict[str, Any]) -> tuple[Any, ...]:
    return (admission.get("clusterQueue"), sorted(
        (str(a.get("name")), sorted((a.get("flavors") or {}).items()), a.get("count"))
        for a in admission.get("podSetAssignments") or []))


def _moved(obj: dict[str, Any], status: dict[str, Any]) -> bool:
    """The API shows one admission and this status carries another."""
    shown, wanted = (obj.get("status") or {}).get("admission"), status.get("admission")
    return bool(shown and wanted) and _placement(shown) != _placement(wanted)


def _written_condition(written: dict[str, Any] | None, kind: str) -> dict[str, Any] | None:
    """The condition of type ``kind`` in a status we wrote (as ``_comparable`` keeps it)."""
    return next((c for c in (written or {}).get("conditions") or () if c.get("type") == kind), None)
