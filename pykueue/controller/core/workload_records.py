"""What the controller remembers about one Workload object, in one place.

Everything the Workload side keeps beyond the informer's cache and the engine (what it last wrote, what
validation said, the eviction its conditions describe, ...) lives in one ``WorkloadRecord`` per object.
A record belongs to an object, not to a name: the first sight of a different UID under a known key
starts a fresh record, so a Workload deleted and re-created under the same name never inherits its
predecessor's memory, and forgetting an object is one removal instead of a sweep over many tables.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pykueue.controller.core.workload_status import Eviction
from pykueue.engine import events as ev


@dataclass(slots=True)
class WorkloadRecord:
    """One Workload object's memory (its key is the engine's ``namespace/name``)."""

    uid: str | None = None
    # metadata.generation of the spec the engine last took: a status-only update keeps it
    generation: int | None = None
    # metadata.resourceVersion of the copy the engine last took (every reconcile), and of the one it
    # was holding when it reserved quota: the reservation is written conditional on that copy
    seen_version: str | None = None
    decided_on: str | None = None
    # the QuotaReserved and Admitted decisions whose write has not landed yet, with their reasons:
    # announced (Event, metrics) once the API has them, as upstream records them after its apply
    held: list[tuple[ev.Event, str | None]] = field(default_factory=list)
    invalid: str | None = None  # what validation says, while the object fails it
    deactivation_seen: bool = False  # Kueue deactivated it and the API has shown spec.active=false
    # the status writer: the last eviction its conditions describe, the preemptor (engine key), the
    # owned status it last wrote (timestamps stripped), the pending answer the API shows, failures in a row
    eviction: Eviction | None = None
    preemptor: str | None = None
    replaced: str | None = None  # finished WorkloadSliceReplaced by the engine: the Finished message to write
    written: dict[str, Any] | None = None
    # the resourceVersion the API server gave that write, and whether the informer has shown it since:
    # from then on the cache is at or past the write, so a copy that no longer shows it was changed by
    # another writer (and is written again), while before it the cache may just lag the write
    written_version: str | None = None
    written_seen: bool = False
    written_pending: tuple[str | None, str | None] | None = None
    failures: int = 0
    # metrics: the last eviction or requeue (wall seconds), evictions counted once per (reason, cause),
    # the admission whose PodsReady was observed
    queued_since: float | None = None
    evictions_seen: set[tuple[str, str]] = field(default_factory=set)
    ready_after: float | None = None


class WorkloadRecords:
    """The records by key, each bound to the UID it was made for."""

    def __init__(self) -> None:
        self._by_key: dict[str, WorkloadRecord] = {}

    def get(self, key: str) -> WorkloadRecord | None:
        return self._by_key.get(key)

    def at(self, key: str) -> WorkloadRecord:
        """The key's record, made on first use (its UID is learnt when the object is observed)."""
        rec = self._by_key.get(key)
        if rec is None:
            rec = self._by_key[key] = WorkloadRecord()
        return rec

    def observe(self, key: str, uid: str | None) -> tuple[WorkloadRecord, bool]:
        """The record of the object ``uid`` under ``key``, and whether it replaced another object's:
        a different UID under a known key is a successor, which starts with nothing remembered."""
        rec = self._by_key.get(key)
        if rec is not None and (rec.uid is None or uid is None or rec.uid == uid):
            if rec.uid is None:
                rec.uid = uid
            return rec, False
        replaced = rec is not None
        rec = self._by_key[key] = WorkloadRecord(uid=uid)
        return rec, replaced

    def forget(self, key: str) -> None:
        self._by_key.pop(key, None)

    def clear(self) -> None:
        self._by_key.clear()

    def items(self) -> Iterator[tuple[str, WorkloadRecord]]:
        return iter(list(self._by_key.items()))
