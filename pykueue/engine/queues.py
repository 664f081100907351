"""Pending workloads of one ClusterQueue, grouped into equivalence classes.

Queue order is upstream's: the sticky preemptor first, then higher priority, then the queue-order
timestamp (creation, or eviction for some evictions), then document order. Workloads that would get the
same answer from the scheduler (same queue, priority and pod sets: the scheduling hash) form a class,
and the ClusterQueue's heap holds one entry per class, for the class's first member.

Under ``BestEffortFIFO`` a head that cannot be admitted is parked together with its whole class until
capacity changes in its cohort (upstream's inadmissible list plus its equivalence-hash bulk move), and
parking or unparking costs O(1) per class, never O(pending workloads). Under ``StrictFIFO`` the head goes
straight back and keeps blocking the queue.
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from collections.abc import Iterator

from pykueue.engine.model import BEST_EFFORT_FIFO
from pykueue.engine.workload import Stamps, WorkloadInfo


class _Class:
    __slots__ = ("hash", "priority", "heap", "run", "live", "parked", "bulk_reason", "bulk_message", "bulk_stamp", "bulk_key",
                 "entry")

    def __init__(self, h: tuple, priority: int) -> None:
        self.hash = h
        self.priority = priority
        # Member entries: ``run`` holds those pushed in increasing order (arrivals, the usual case) and
        # takes them from its front in O(1); ``heap`` the others. The head is the lesser of the two fronts,
        # so the order is the one heap's: a class of 100,000 pending members sifts no heap per admission.
        self.heap: list[tuple] = []
        self.run: deque[tuple] = deque()
        self.live: dict[str, tuple] = {}
        self.parked = False
        self.bulk_reason: str | None = None
        self.bulk_message = ""
        self.bulk_stamp = 0
        self.bulk_key: str | None = None  # the member whose evaluation gave the class its answer
        self.entry: tuple | None = None  # this class's live entry in the queue heap

    def head(self) -> WorkloadInfo | None:
        heap, run, live = self.heap, self.run, self.live
        while True:
            if run and not (heap and heap[0] < run[0]):
                e = run[0]
                if live.get(e[3]) is e:
                    return e[4]
                run.popleft()
            elif heap:
                e = heap[0]
                if live.get(e[3]) is e:
                    return e[4]
                heapq.heappop(heap)
            else:
                return None

    def add(self, entry: tuple) -> None:
        run = self.run
        if not run or run[-1] < entry:
            run.append(entry)
        else:
            heapq.heappush(self.heap, entry)


def _requested(info: WorkloadInfo) -> tuple[tuple[str, int], ...]:
    """A workload's requests in all (each pod set's per-pod requests times its count), per resource."""
    out: dict[str, int] = {}
    for ps in info.spec.pod_sets:
        for resource, amount in ps.requests.items():
            out[resource] = out.get(resource, 0) + amount * ps.count
    return tuple(out.items())


class PendingQueue:
    __slots__ = ("strategy", "_classes", "_heap", "_where", "_count", "sticky", "stamps", "_tiebreak", "requests",
                 "_requested")

    def __init__(self, strategy: str, stamps: Stamps) -> None:
        self.strategy = strategy
        self.stamps = stamps  # the engine's: a class's reason and its members' compare by stamp
        self._tiebreak = itertools.count()  # stale and live entries of one class never compare the class
        self._classes: dict[tuple, _Class] = {}
        self._heap: list[tuple] = []
        self._where: dict[str, _Class] = {}
        self._count = 0
        self.sticky: str | None = None
        # what the pending workloads request in all, per resource (upstream's pendingResourcesTotal, for the
        # cluster_queue_resource_pending gauge), kept as they come and go; each one's part is remembered,
        # so what leaves is what came, whatever its spec says meanwhile
        self.requests: dict[str, int] = {}
        self._requested: dict[str, tuple[tuple[str, int], ...]] = {}

    def __len__(self) -> int:
        return self._count

    def __contains__(self, key: str) -> bool:
        return key in self._where

    def _member_entry(self, info: WorkloadInfo) -> tuple:
        return (0 if info.key == self.sticky else 1, info.order_us, info.seq, info.key, info)

    def _refresh(self, cls: _Class) -> None:
        """Point the queue heap at the class's current first member (if the class is not parked)."""
        head = None if cls.parked else cls.head()
        if head is None:
            cls.entry = None
            if not cls.live:
                del self._classes[cls.hash]
            return
        entry: tuple = (0 if head.key == self.sticky else 1, -cls.priority, head.order_us, head.seq, next(self._tiebreak), cls)
        if cls.entry is not None and cls.entry[:4] == entry[:4]:
            return
        cls.entry = entry
        heapq.heappush(self._heap, entry)

    def push(self, info: WorkloadInfo) -> None:
        if info.key in self._where:
            return
        cls = self._classes.get(info.hash)
        if cls is None:
            cls = self._classes[info.hash] = _Class(info.hash, info.priority)
        entry = self._member_entry(info)
        cls.live[info.key] = entry
        cls.add(entry)
        self._where[info.key] = cls
        self._count += 1
        part = _requested(info)
        if part:
            self._requested[info.key] = part
            requests = self.requests
            for resource, amount in part:
                requests[resource] = requests.get(resource, 0) + amount
        self._refresh(cls)

    def remove(self, key: str) -> None:
        cls = self._where.pop(key, None)
        if cls is None:
            return
        del cls.live[key]
        self._count -= 1
        part = self._requested.pop(key, None)
        if part is not None:
            requests = self.requests
            for resource, amount in part:
                requests[resource] -= amount
        if self.sticky == key:
            self.sticky = None
        self._refresh(cls)

    def pop(self) -> WorkloadInfo | None:
        """Take the queue's head out (the scheduler puts it back if it is not admitted)."""
        heap = self._heap
        while heap:
            entry = heapq.heappop(heap)
            cls = entry[5]
            if cls.entry is not entry:
                continue
            cls.entry = None
            head = cls.head()
            if head is None:
                self._refresh(cls)
                continue
            self.remove(head.key)
            return head
        return None

    def peek(self) -> WorkloadInfo | None:
        """The workload the next ``pop`` would take, without taking it."""
        return self._heap[0][5].head() if self.has_candidates() else None

    def has_candidates(self) -> bool:
        heap = self._heap
        while heap:
            if heap[0][5].entry is heap[0]:
                return True
            heapq.heappop(heap)
        return False

    def park_class_of(self, info: WorkloadInfo, reason: str, message: str = "", *, always: bool = False) -> None:
        """Set ``info``'s class aside until capacity changes: under BestEffortFIFO, or ``always`` (a
        namespace that does not match parks the class under either strategy, as upstream does)."""
        cls = self._where.get(info.key)
        if cls is None or (self.strategy != BEST_EFFORT_FIFO and not always):
            return
        cls.parked = True
        cls.bulk_reason = reason
        cls.bulk_message = message
        if info.watch is not None:  # every member now shows the class's reason
            info.watch.update(e[4] for e in cls.live.values())
        cls.bulk_stamp = next(self.stamps)
        cls.bulk_key = info.key
        cls.entry = None

    def requeue_inadmissible(self) -> bool:
        """Capacity changed: every parked class becomes a candidate again."""
        woke = False
        for cls in list(self._classes.values()):
            if cls.parked:
                cls.parked = False
                woke = True
                self._refresh(cls)
        return woke

    def reason_for(self, info: WorkloadInfo) -> str | None:
        """The reason a pending member shows: its own, unless its class was set aside after that."""
        return self.condition_for(info)[0]

    def condition_for(self, info: WorkloadInfo) -> tuple[str | None, str]:
        """(reason, message) of a pending member: its own, unless its class was set aside after that
        (the class shares one answer, so the last member evaluated speaks for all)."""
        if self.shares_class_answer(info):
            cls = self._where[info.key]
            return cls.bulk_reason, cls.bulk_message
        return info.reason, info.message

    def shares_class_answer(self, info: WorkloadInfo) -> bool:
        """The member shows its class's answer, given after its own (it was set aside with its class
        unevaluated: upstream's bulk move of equivalent workloads)."""
        cls = self._where.get(info.key)
        return (cls is not None and cls.bulk_reason is not None and cls.bulk_stamp > info.reason_stamp
                and cls.bulk_key != info.key)

    def is_parked(self, key: str) -> bool:
        cls = self._where.get(key)
        return cls is not None and cls.parked

    def parked_count(self) -> int:
        """Members whose class is set aside (inadmissible): counted by class, not by member."""
        return sum(len(cls.live) for cls in self._classes.values() if cls.parked)

    def parked_members(self) -> Iterator[WorkloadInfo]:
        """The members whose class is set aside (inadmissible)."""
        for cls in self._classes.values():
            if cls.parked:
                for e in cls.live.values():
                    yield e[4]

    def members(self) -> list[WorkloadInfo]:
        return [e[4] for cls in self._classes.values() for e in cls.live.values()]
