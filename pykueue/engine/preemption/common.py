"""What every preemption policy shares: targets, their reasons, the quota what-ifs that always
restore, and the one search loop (take targets in order until the preemptor fits, then give back the
ones it does not need), as upstream's ``preemption/common`` holds for its classical and fair-sharing
policies."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from pykueue.engine.cluster import ClusterQueueState, ClusterState  # noqa: F401 - ClusterState: the package's name for it
from pykueue.engine.quota import FR, QuotaNode, add_usage, available, remove_usage
from pykueue.engine.workload import WorkloadInfo

IN_CLUSTER_QUEUE = "InClusterQueue"
IN_COHORT_RECLAMATION = "InCohortReclamation"
IN_COHORT_RECLAIM_WHILE_BORROWING = "InCohortReclaimWhileBorrowing"
IN_COHORT_FAIR_SHARING = "InCohortFairSharing"


@dataclass(slots=True, frozen=True)
class Target:
    workload: WorkloadInfo
    reason: str


def remove_workload_usage(cq: ClusterQueueState, info: WorkloadInfo) -> None:
    for fr, v in info.usage.items():
        remove_usage(cq.node, fr, v)


def add_workload_usage(cq: ClusterQueueState, info: WorkloadInfo) -> None:
    for fr, v in info.usage.items():
        add_usage(cq.node, fr, v)


def uses_resources(info: WorkloadInfo, frs: set[FR]) -> bool:
    return any(fr in frs for fr in info.usage)


def fits(requests: dict[FR, int], node: QuotaNode, allow_borrowing: bool) -> bool:
    for fr, v in requests.items():
        if not allow_borrowing and node.borrowing_with(fr, v):
            return False
        if v > available(node, fr):
            return False
    return True


def candidate_order_key(info: WorkloadInfo, preemptor_cq: str) -> tuple:
    """Other queues first, then lower priority, then the most recently admitted, then the newest."""
    return (
        info.cluster_queue == preemptor_cq,
        info.priority,
        -(info.reserved_us or 0),
        -info.order_us,
        -info.seq,
    )


# --------------------------------------------------------------------------------- quota what-ifs


@contextmanager
def without(cqs: dict[str, ClusterQueueState], workloads: Iterable[WorkloadInfo]) -> Iterator[None]:
    """The quota tree as if ``workloads`` were evicted, for the body of the ``with``; always restored."""
    removed: list[WorkloadInfo] = []
    try:
        for info in workloads:
            remove_workload_usage(cqs[info.cluster_queue or ""], info)
            removed.append(info)
        yield
    finally:
        for info in removed:
            add_workload_usage(cqs[info.cluster_queue or ""], info)


@contextmanager
def restoring(cqs: dict[str, ClusterQueueState], chosen: list[Target]) -> Iterator[list[Target]]:
    """A search that removes its victims' usage one by one: whatever ``chosen`` holds when the body
    ends (however it ends) gets its usage back."""
    try:
        yield chosen
    finally:
        for t in chosen:
            add_workload_usage(cqs[t.workload.cluster_queue or ""], t.workload)


@contextmanager
def with_usage(node: QuotaNode, usage: dict[FR, int]) -> Iterator[None]:
    """The quota tree as if ``usage`` were charged to ``node``, for the body of the ``with``."""
    for fr, v in usage.items():
        add_usage(node, fr, v)
    try:
        yield
    finally:
        for fr, v in usage.items():
            remove_usage(node, fr, v)


# ------------------------------------------------------------------------------------ the search


def fill_back(cqs: dict[str, ClusterQueueState], cq: ClusterQueueState, chosen: list[Target],
              requests: dict[FR, int], allow_borrowing: bool) -> list[Target]:
    """The reverse pass: victims are already removed from usage; give back, most recently chosen
    first (except the last, which made the preemptor fit), every one the preemptor does not need.
    ``chosen`` keeps the victims kept (their usage stays removed). The preemptor fits when it starts
    and after every step; a victim that ``_Slack`` shows it can take back is given back unasked."""
    slack = _Slack(cq, requests, allow_borrowing)
    for i in range(len(chosen) - 2, -1, -1):
        t = chosen[i]
        src = cqs[t.workload.cluster_queue or ""]
        add_workload_usage(src, t.workload)
        if slack.absorbs(t.workload, src is cq):
            given_back = True
        else:
            given_back = fits(requests, cq.node, allow_borrowing)
            if given_back:
                slack.measure()
        if given_back:
            chosen[i] = chosen[-1]
            chosen.pop()
        else:
            remove_workload_usage(src, t.workload)
    return chosen


def give_back_in_turn(cqs: dict[str, ClusterQueueState], cq: ClusterQueueState, requests: dict[FR, int],
                      victims: list[WorkloadInfo], out: dict[str, dict[FR, int]]) -> list[bool]:
    """``fill_back``'s pass over victims of other queues, ``out`` holding the usage removed from each
    queue (victims' among it, in any order: the tree's state does not depend on it), kept current.
    Most recently taken first: whether each is given back, as ``fill_back`` decides (the preemptor,
    not borrowing, fits when it starts). A victim the slack absorbs is given back in the tree only
    when the tree is next read, in one charge per queue: adding usage in parts or at once leaves the
    same tree."""
    slack = _Slack(cq, requests, False)
    pending: dict[str, dict[FR, int]] = {}
    given = [False] * len(victims)
    for i in range(len(victims) - 1, -1, -1):
        info = victims[i]
        name = info.cluster_queue or ""
        if slack.absorbs(info, False):
            given[i] = True
            _accumulate(pending.setdefault(name, {}), info.usage, 1)
            continue
        _charge(cqs, pending, out)
        src = cqs[name]
        add_workload_usage(src, info)
        if fits(requests, cq.node, False):
            given[i] = True
            _accumulate(out[name], info.usage, -1)
            slack.measure()
        else:
            remove_workload_usage(src, info)
    _charge(cqs, pending, out)
    return given


def release(cqs: dict[str, ClusterQueueState], amounts: dict[str, dict[FR, int]]) -> None:
    """Remove ``amounts`` of usage from each named queue (one removal per queue and resource)."""
    for name, usage in amounts.items():
        node = cqs[name].node
        for fr, v in usage.items():
            if v:
                remove_usage(node, fr, v)


def charge(cqs: dict[str, ClusterQueueState], amounts: dict[str, dict[FR, int]]) -> None:
    """Add ``amounts`` of usage back to each named queue: ``release`` undone."""
    for name, usage in amounts.items():
        node = cqs[name].node
        for fr, v in usage.items():
            if v:
                add_usage(node, fr, v)


def _charge(cqs: dict[str, ClusterQueueState], pending: dict[str, dict[FR, int]],
            out: dict[str, dict[FR, int]]) -> None:
    """Give ``pending`` back to the tree and take it off what is out."""
    charge(cqs, pending)
    for name, usage in pending.items():
        _accumulate(out[name], usage, -1)
    pending.clear()


def _accumulate(into: dict[FR, int], usage: dict[FR, int], sign: int) -> None:
    for fr, v in usage.items():
        into[fr] = into.get(fr, 0) + sign * v


class _Slack:
    """How much a preemptor that fits can take back and still fit, as lower bounds: for each requested
    resource, what it has available beyond its request and, without borrowing, its quota beyond its
    own usage plus the request. Giving back ``u`` of a resource anywhere lowers the first by at most
    ``u``; only a victim of the preemptor's own queue raises that queue's usage, by exactly ``u``."""

    __slots__ = ("cq", "requests", "allow_borrowing", "available", "own")

    def __init__(self, cq: ClusterQueueState, requests: dict[FR, int], allow_borrowing: bool) -> None:
        self.cq, self.requests, self.allow_borrowing = cq, requests, allow_borrowing
        self.available: dict[FR, int] = {}
        self.own: dict[FR, int] = {}
        self.measure()

    def measure(self) -> None:
        """The bounds, exact, for a preemptor that fits now."""
        node = self.cq.node
        self.available = {fr: available(node, fr) - v for fr, v in self.requests.items()}
        if not self.allow_borrowing:
            self.own = {fr: node.subtree_quota.get(fr, 0) - node.usage.get(fr, 0) - v
                        for fr, v in self.requests.items()}

    def absorbs(self, victim: WorkloadInfo, own: bool) -> bool:
        """Whether the preemptor certainly still fits with ``victim``'s usage back (then the bounds
        are worn down by it)."""
        usage = victim.usage
        check_own = own and not self.allow_borrowing
        for fr, room in self.available.items():
            u = usage.get(fr, 0)
            if u > room or (check_own and u > self.own[fr]):
                return False
        for fr in self.available:
            u = usage.get(fr, 0)
            if u:
                self.available[fr] -= u
                if check_own:
                    self.own[fr] -= u
        return True


class _Shortfall:
    """What a preemptor lacks before its first victim, as lower bounds that victims wear down.

    ``fits`` needs, for each requested resource, the request within what the preemptor's queue has
    available, and without borrowing also its own usage plus the request within its quota. Removing
    ``u`` of a resource anywhere in the tree raises what is available by at most ``u``; only a
    victim of the preemptor's own queue lowers that queue's usage (a ClusterQueue is a leaf), and by
    exactly ``u``. So while some bound is still positive, ``fits`` is false and is not asked: with
    reclaim across hundreds of queues, a search without borrowing went through every victim of the
    other queues (which never lower the preemptor's own usage) asking ``fits`` after each."""

    __slots__ = ("cq", "requests", "allow_borrowing", "available", "own")

    def __init__(self, cq: ClusterQueueState, requests: dict[FR, int], allow_borrowing: bool) -> None:
        self.cq, self.requests, self.allow_borrowing = cq, requests, allow_borrowing
        node = cq.node
        self.available: dict[FR, int] = {}
        self.own: dict[FR, int] = {}
        for fr, v in requests.items():
            lacking = v - available(node, fr)
            if lacking > 0:
                self.available[fr] = lacking
            if not allow_borrowing:
                over = node.usage.get(fr, 0) + v - node.subtree_quota.get(fr, 0)
                if over > 0:
                    self.own[fr] = over

    def remains(self, victim: WorkloadInfo, preemptor_cq: str) -> bool:
        """Wear the bounds down by ``victim``'s usage, just removed; whether some bound is left."""
        for bounds, applies in ((self.available, True), (self.own, victim.cluster_queue == preemptor_cq)):
            if not bounds or not applies:
                continue
            for fr, u in victim.usage.items():
                lacking = bounds.get(fr)
                if lacking is not None:
                    if lacking <= u:
                        del bounds[fr]
                    else:
                        bounds[fr] = lacking - u
        return bool(self.available or self.own)


def minimal_targets(cqs: dict[str, ClusterQueueState], cq: ClusterQueueState, requests: dict[FR, int],
                    allow_borrowing: bool, targets: Iterator[Target], *, removed: bool) -> list[Target] | None:
    """Upstream's minimal preemptions: take ``targets`` in order (their usage removed as they come,
    by the producer when ``removed``) until the preemptor fits, then give back those it does not
    need. None when even all of them are not enough. The quota tree is left as it was.

    ``fits`` is not asked while it cannot be true (``_Shortfall``)."""
    shortfall = None if removed else _Shortfall(cq, requests, allow_borrowing)
    try:
        with restoring(cqs, []) as chosen:
            for t in targets:
                if not removed:
                    remove_workload_usage(cqs[t.workload.cluster_queue or ""], t.workload)
                chosen.append(t)
                if shortfall is not None and shortfall.remains(t.workload, cq.name):
                    continue
                if fits(requests, cq.node, allow_borrowing):
                    return list(fill_back(cqs, cq, chosen, requests, allow_borrowing))
            return None
    finally:
        close = getattr(targets, "close", None)
        if close is not None:  # a generator producing targets restores what it simulated
            close()
