"""Where pending workloads wait: which ClusterQueue's queue holds each one, which queues may have a
candidate for the next scheduling cycle, the requeuing backoffs, and waking parked workloads when
capacity grows in their cohort tree. The engine decides; this keeps the books."""

from __future__ import annotations

import heapq
import itertools

from pykueue.engine import model
from pykueue.engine.cluster import ClusterQueueState
from pykueue.engine.workload import State, WorkloadInfo


class QueueManager:
    """The queues of one engine (its dicts of ClusterQueues, LocalQueues and workloads are shared)."""

    def __init__(self, cqs: dict[str, ClusterQueueState], local_queues: dict[str, model.LocalQueue],
                 workloads: dict[str, WorkloadInfo]) -> None:
        self.cqs = cqs
        self.local_queues = local_queues
        self.workloads = workloads
        self._nonempty: set[str] = set()  # cluster queues that may have candidates
        self._backoff: list[tuple[int, int, str]] = []  # (requeue_us, order, key)
        self._backoff_order = itertools.count(1)
        self._dirty_roots: set[str] = set()  # trees whose capacity grew: parked classes get another look

    # -- placement ----------------------------------------------------------------------------------

    def cluster_queue_for(self, info: WorkloadInfo) -> str | None:
        lq = self.local_queues.get(f"{info.spec.namespace}/{info.spec.queue_name}")
        return lq.cluster_queue if lq is not None else None

    def place(self, info: WorkloadInfo) -> None:
        """Put a pending workload in the queue it belongs to now (or in none, if it is blocked)."""
        old = info.cluster_queue
        new = self.cluster_queue_for(info)
        if old is not None and old in self.cqs and (old != new):
            self.cqs[old].pending.remove(info.key)
        info.cluster_queue = new
        if info.held:
            if new in self.cqs:
                self.cqs[new].pending.remove(info.key)
            return  # its job holds it (Engine.hold): in no queue until let go
        if info.requeue_us is not None:
            return  # waiting for its backoff to expire
        if new is None or new not in self.cqs:
            return
        lq = self.local_queues.get(f"{info.spec.namespace}/{info.spec.queue_name}")
        cq = self.cqs[new]
        if lq is not None and (lq.stop_policy != model.STOP_NONE or lq.invalid is not None):
            cq.pending.remove(info.key)
            return
        cq.pending.push(info)
        self._nonempty.add(new)

    def unqueue(self, info: WorkloadInfo) -> None:
        if info.cluster_queue in self.cqs:
            self.cqs[info.cluster_queue].pending.remove(info.key)

    def replace_all(self, watch: set[WorkloadInfo] | None) -> None:
        """After a configuration change: re-place every pending workload and unpark every class."""
        for info in sorted(self.workloads.values(), key=lambda i: i.seq):
            if info.state is State.PENDING:
                self.place(info)
                if watch is not None:  # queue blockers may have changed
                    watch.add(info)
        for cq in self.cqs.values():
            if cq.pending.requeue_inadmissible() or cq.pending.has_candidates():
                self._nonempty.add(cq.name)

    # -- candidates for a cycle --------------------------------------------------------------------

    def may_have_candidates(self, cq_name: str) -> None:
        self._nonempty.add(cq_name)

    def has_no_candidates(self, cq_name: str) -> None:
        self._nonempty.discard(cq_name)

    def queues_with_candidates(self) -> list[str]:
        """The queues a cycle takes heads from, in name order."""
        return sorted(self._nonempty)

    # -- backoff ------------------------------------------------------------------------------------

    def back_off(self, info: WorkloadInfo, until_us: int) -> None:
        """Keep ``info`` out of its queue until ``until_us`` (a requeuing backoff)."""
        info.requeue_us = until_us
        heapq.heappush(self._backoff, (until_us, next(self._backoff_order), info.key))
        self.unqueue(info)

    def next_wakeup(self) -> int | None:
        """The earliest time at which a backoff expires."""
        while self._backoff:
            at, _, key = self._backoff[0]
            info = self.workloads.get(key)
            if info is None or info.requeue_us != at:
                heapq.heappop(self._backoff)
                continue
            return at
        return None

    def expired_backoffs(self, now: int) -> list[WorkloadInfo]:
        """Pending workloads whose backoff has expired by ``now`` (their backoff is cleared; the caller
        places them), in expiry order."""
        out = []
        while self._backoff and self._backoff[0][0] <= now:
            at, _, key = heapq.heappop(self._backoff)
            info = self.workloads.get(key)
            if info is None or info.requeue_us != at or info.state is not State.PENDING:
                continue
            info.requeue_us = None
            out.append(info)
        return out

    # -- waking parked workloads -------------------------------------------------------------------

    def capacity_grew(self, cq: ClusterQueueState) -> None:
        self._dirty_roots.add(cq.node.root().name)

    def wake_dirty_trees(self) -> None:
        """Capacity grew somewhere: parked workloads in those cohort trees are candidates again."""
        if not self._dirty_roots:
            return
        roots, self._dirty_roots = self._dirty_roots, set()
        for cq in self.cqs.values():
            if cq.node.root().name in roots and cq.pending.requeue_inadmissible():
                self._nonempty.add(cq.name)
