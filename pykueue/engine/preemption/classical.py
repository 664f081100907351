"""Classical preemption (no fair sharing): which admitted workloads to evict so that a pending one fits.

Candidates come from the preemptor's own ClusterQueue (``withinClusterQueue``) and from queues in its
cohort tree that use more than their nominal quota (``reclaimWithinCohort``). They are ordered (other
queues first, lower priority first, most recently admitted first) and taken greedily until the
preemptor fits; a reverse pass then gives back every victim that is not needed. Attempts are made
with and without letting the preemptor borrow, as upstream's heuristics prescribe. The search loop and
the quota what-ifs that always restore the tree are in ``common``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pykueue.engine import model
from pykueue.engine.merging import merge_sorted
from pykueue.engine.preemption.common import (
    IN_CLUSTER_QUEUE,
    IN_COHORT_RECLAIM_WHILE_BORROWING,
    IN_COHORT_RECLAMATION,
    Target,
    minimal_targets,
)
from pykueue.engine.quota import FR, QuotaNode
from pykueue.engine.workload import WorkloadInfo

if TYPE_CHECKING:
    from pykueue.engine.cluster import ClusterQueueState

# How a candidate may be preempted.
_WITHIN_CQ, _HIERARCHICAL, _WITHOUT_BORROWING, _WHILE_BORROWING = 1, 2, 3, 4
_REASON = {
    _WITHIN_CQ: IN_CLUSTER_QUEUE,
    _HIERARCHICAL: IN_COHORT_RECLAMATION,
    _WITHOUT_BORROWING: IN_COHORT_RECLAMATION,
    _WHILE_BORROWING: IN_COHORT_RECLAIM_WHILE_BORROWING,
}


@dataclass(slots=True)
class _Candidate:
    info: WorkloadInfo
    lca: QuotaNode | None
    variant: int


class ClassicalPolicy:
    """Finds preemption targets with the classical (non fair-sharing) policy."""

    def __init__(self, cqs: dict[str, ClusterQueueState]) -> None:
        self.cqs = cqs
        # While the scheduler nominates a cycle's heads usage does not change (every search restores
        # it): per (subtree, excluded subtree, resources), the candidates of every preemptor, merged in
        # victim order once and remembered as far as any search has read them. A cycle's heads in one
        # cohort (tens, with hundreds of queues) walk the same merge, each judging it for itself.
        # None outside the nominations.
        self.merged_cache: dict[tuple, _Lazy] | None = None
        self._walking = 0  # > 0 while a search has victims' usage removed: the caches do not apply

    # -- candidates ---------------------------------------------------------------------------------

    def _from_cq(self, cq: ClusterQueueState, source: ClusterQueueState, wl: WorkloadInfo, frs: set[FR],
                 lca: QuotaNode | None, advantage: bool) -> Iterator[tuple[tuple, int, _Candidate]]:
        """Candidates of one queue, lazily, in candidate order (keyed for merging across queues)."""
        return self._judged(cq, _using(source, frs), wl, lca, advantage, skip_own=False)

    def _judged(self, cq: ClusterQueueState, items: Iterator[tuple[tuple, int, WorkloadInfo]], wl: WorkloadInfo,
                lca: QuotaNode | None, advantage: bool, *, skip_own: bool) -> Iterator[tuple[tuple, int, _Candidate]]:
        """``items`` (admitted workloads using the resources, in victim order) as candidates of the
        preemptor ``wl`` in ``cq``, each with how it may be preempted: not at all when its priority is
        too high for the queue's rule; within the queue; else by hierarchical reclaim (``advantage``),
        or without or while borrowing. ``skip_own``: leave out ``cq``'s own workloads (a merge shared
        by the heads of several queues). What does not depend on the candidate is worked out once: this
        runs for every admitted workload of every over-quota queue a preemptor looks at."""
        policy = cq.spec.preemption
        name = cq.spec.name
        wl_priority, wl_order = wl.spec.priority, wl.order_us
        own_rule, other_rule = policy.within_cluster_queue, policy.reclaim_within_cohort
        if advantage:
            elsewhere = _HIERARCHICAL
        elif policy.borrow_within_cohort == model.NEVER:
            elsewhere = _WITHOUT_BORROWING
        else:
            elsewhere = 0  # decided per candidate: while borrowing or without
        threshold = policy.max_priority_threshold
        for order, seq, cand in items:
            same = cand.cluster_queue == name
            if same and skip_own:
                continue
            rule = own_rule if same else other_rule
            cand_priority = cand.spec.priority
            if rule == model.LOWER_PRIORITY:
                if not wl_priority > cand_priority:
                    continue
            elif rule == model.LOWER_OR_NEWER_EQUAL_PRIORITY:
                if not (wl_priority > cand_priority or (wl_priority == cand_priority and wl_order < cand.order_us)):
                    continue
            elif rule != model.ANY:
                continue
            if same:
                variant = _WITHIN_CQ
            elif elsewhere:
                variant = elsewhere
            elif cand_priority >= wl_priority or (threshold is not None and cand_priority > threshold):
                variant = _WITHOUT_BORROWING
            else:
                variant = _WHILE_BORROWING
            yield order, seq, _Candidate(cand, lca, variant)

    def _sources(self, exclude: QuotaNode | None, frs: set[FR], current: QuotaNode, skip: QuotaNode | None,
                 out: list[ClusterQueueState]) -> None:
        """Queues under ``current`` (outside ``skip``, other than ``exclude``) that use more than their
        quota in ``frs``."""
        for child in current.children:
            if child is skip:
                continue
            if child.is_cohort:
                if not child.within_nominal(frs):
                    self._sources(exclude, frs, child, skip, out)
            elif child is not exclude and not child.within_nominal(frs):
                out.append(self.cqs[child.name])

    def _sources_of(self, cq: ClusterQueueState, frs: set[FR], root: QuotaNode,
                    skip: QuotaNode | None) -> list[ClusterQueueState]:
        """``_sources`` for a preemptor in ``cq``."""
        out: list[ClusterQueueState] = []
        self._sources(cq.node, frs, root, skip, out)
        return out

    def _merged_of(self, frs: set[FR], root: QuotaNode, skip: QuotaNode | None) -> _Lazy | None:
        """The cycle's shared merge of the over-quota queues under ``root`` (outside ``skip``), the
        preemptor's own among them; None outside a cycle's nominations or inside a search. The merge's
        order is that of the queues' own streams merged (victim order, unique per workload), whoever
        reads it, and reading it further never depends on usage: only which queues are in it does,
        chosen here from the usage every nomination sees."""
        cache = self.merged_cache
        if cache is None or self._walking:
            return None
        key = (root, skip, frozenset(frs))
        found = cache.get(key)
        if found is None:
            sources: list[ClusterQueueState] = []
            self._sources(None, frs, root, skip, sources)
            found = cache[key] = _Lazy(merge_sorted([_using(src, frs) for src in sources]))
        return found

    def candidates(self, cq: ClusterQueueState, wl: WorkloadInfo, frs: set[FR],
                   requests: dict[FR, int]) -> tuple[_Group, _Group, _Lazy]:
        """Candidates in upstream's order, as three lazy groups: hierarchical reclaim, the rest of the
        cohort, the preemptor's own queue. Nothing is walked until a group is first looked at."""
        levels: list[tuple[QuotaNode, QuotaNode | None, bool]] = []
        if cq.node.parent is not None and cq.spec.preemption.reclaim_within_cohort != model.NEVER:
            advantage, remaining = _quantities_fit(cq.node, requests)
            previous: QuotaNode | None = None
            for root in cq.node.path_to_root():
                levels.append((root, previous, advantage))
                ok, remaining = _quantities_fit(root, remaining)
                advantage = advantage or ok
                previous = root

        def group(with_advantage: bool) -> list[Iterator[tuple[tuple, int, _Candidate]]]:
            streams = []
            for root, skip, advantage in levels:
                if advantage != with_advantage:
                    continue
                shared = self._merged_of(frs, root, skip)
                if shared is not None:
                    streams.append(self._judged(cq, iter(shared), wl, root, advantage, skip_own=True))
                    continue
                for src in self._sources_of(cq, frs, root, skip):
                    streams.append(self._from_cq(cq, src, wl, frs, root, advantage))
            return streams

        def same() -> Iterator[_Candidate]:
            if cq.spec.preemption.within_cluster_queue != model.NEVER:
                for _, _, cand in self._from_cq(cq, cq, wl, frs, None, False):
                    yield cand

        return _Group(lambda: group(True)), _Group(lambda: group(False)), _Lazy(same())

    def _valid(self, cq: ClusterQueueState, cand: _Candidate, borrow: bool, frs: set[FR]) -> bool:
        if cand.info.cluster_queue == cq.name:
            return True
        if borrow and cand.variant == _WITHOUT_BORROWING:
            return False
        owner = cand.info.cluster_queue
        assert owner is not None  # a candidate is admitted, so it has a queue
        node = self.cqs[owner].node
        if node.within_nominal(frs):
            return False
        lca = cand.lca
        ancestor = node.parent  # the ancestors below the lowest common one, walked without a generator
        while ancestor is not None and ancestor is not lca:
            if ancestor.within_nominal(frs):
                return False
            ancestor = ancestor.parent
        return True

    # -- targets ------------------------------------------------------------------------------------

    def targets(self, cq: ClusterQueueState, wl: WorkloadInfo, requests: dict[FR, int], frs: set[FR]) -> list[Target]:
        from_hierarchy, from_others, same = self.candidates(cq, wl, frs, requests)
        borrow_forbidden = cq.spec.preemption.borrow_within_cohort == model.NEVER
        under_nominal = all(cq.node.usage.get(fr, 0) < cq.node.quota(fr).nominal for fr in frs)
        none_hierarchical = not from_hierarchy.any()
        if borrow_forbidden and not under_nominal:
            # Decided without looking at the other queues' non-hierarchical candidates: the only
            # attempt borrows, and with borrowWithinCohort off none of them is valid in it.
            attempts: tuple[bool, ...] = (True,)
            if none_hierarchical and not same.any():
                return []
        else:
            none_from_others = none_hierarchical and not from_others.any()
            if none_from_others and not same.any():
                return []
            if none_from_others:
                attempts = (True,)
            elif borrow_forbidden and none_hierarchical:
                attempts = (False,)
            else:
                attempts = (True, False)
        self._walking += 1
        try:
            return self._greedy(cq, requests, frs, attempts, borrow_forbidden, from_hierarchy, from_others, same)
        finally:
            self._walking -= 1

    def _greedy(self, cq: ClusterQueueState, requests: dict[FR, int], frs: set[FR], attempts: tuple[bool, ...],
                borrow_forbidden: bool, from_hierarchy: _Group, from_others: _Group, same: _Lazy) -> list[Target]:
        """Upstream's minimal preemptions: per attempt, take candidates in order until the preemptor
        fits, then give back those it does not need."""
        for allow_borrowing in attempts:
            if not allow_borrowing and not _may_fit_without_borrowing(cq, requests, same):
                continue  # the walk below could only fail and restore: skip it (same outcome)
            # With borrowWithinCohort off, every non-hierarchical candidate of another queue may only
            # be taken without borrowing: in a borrowing attempt that group has nothing valid.
            groups = (from_hierarchy, same) if allow_borrowing and borrow_forbidden else (from_hierarchy, from_others, same)
            valid = self._valid_targets(cq, itertools.chain(*groups), allow_borrowing, frs)
            chosen = minimal_targets(self.cqs, cq, requests, allow_borrowing, valid, removed=False)
            if chosen is not None:
                return chosen
        return []

    def _valid_targets(self, cq: ClusterQueueState, candidates: Iterator[_Candidate], allow_borrowing: bool,
                       frs: set[FR]) -> Iterator[Target]:
        """The valid candidates as targets, each judged only when the search asks for it: validity
        reads the quota tree, from which the search removes each victim taken before asking for the
        next. (A generator function, not a generator expression: mypyc builds those as lists.)"""
        for cand in candidates:
            if self._valid(cq, cand, allow_borrowing, frs):
                yield Target(cand.info, _REASON[cand.variant])


class _Group:
    """A group of candidates: one stream per source queue, merged in candidate order. The sources are
    chosen when the group is first looked at (as before); ``any`` then looks at streams only until
    one has a candidate, instead of starting every stream as a merge does."""

    __slots__ = ("_open", "_streams", "_merged")

    def __init__(self, open_streams: Callable[[], list[Iterator[tuple[tuple, int, _Candidate]]]]) -> None:
        self._open = open_streams
        self._streams: list[_Lazy] | None = None
        self._merged: _Lazy | None = None

    def _sources(self) -> list[_Lazy]:
        if self._streams is None:
            self._streams = [_Lazy(s) for s in self._open()]
        return self._streams

    def any(self) -> bool:
        if self._merged is not None:
            return self._merged.any()
        return any(stream.any() for stream in self._sources())

    def __iter__(self) -> Iterator[_Candidate]:
        sources = self._sources()
        if len(sources) == 1:  # nothing to merge (a cycle's shared merge is one stream): it replays itself
            return _third(iter(sources[0]))
        if self._merged is None:
            self._merged = _Lazy(_third(merge_sorted(sources)))
        return iter(self._merged)


class _Lazy:
    """An iterator that remembers what it produced, so it can be replayed (two attempts) and asked
    whether it is empty without being consumed."""

    __slots__ = ("_source", "_seen", "_done")

    def __init__(self, source: Iterable) -> None:
        self._source = iter(source)
        self._seen: list = []
        self._done = False

    def _pull(self) -> bool:
        if self._done:
            return False
        try:
            self._seen.append(next(self._source))
            return True
        except StopIteration:
            self._done = True
            return False

    def any(self) -> bool:
        return bool(self._seen) or self._pull()

    def __iter__(self) -> Iterator:
        i = 0
        while True:
            if i < len(self._seen):
                yield self._seen[i]
                i += 1
            elif not self._pull():
                return


def _using(source: ClusterQueueState, frs: set[FR]) -> Iterator[tuple[tuple, int, WorkloadInfo]]:
    """The admitted workloads of ``source`` that use some of ``frs``, in victim order, keyed for merging."""
    disjoint = frs.isdisjoint
    for order, cand in source.by_victim_order:
        if not disjoint(cand.usage):
            yield order, cand.seq, cand


def _third(merged: Iterator[tuple[tuple, int, _Candidate]]) -> Iterator[_Candidate]:
    """The candidates of a merge of keyed streams, as lazily as the merge (a generator expression
    would do, but mypyc builds those as lists, walking every stream to its end)."""
    for _, _, cand in merged:
        yield cand


def _may_fit_without_borrowing(cq: ClusterQueueState, requests: dict[FR, int], same: _Lazy) -> bool:
    """Whether an attempt without borrowing can succeed at all. It needs the preemptor's own usage
    plus its request within the queue's quota, and only victims of its own queue lower that usage:
    victims elsewhere never do. When even evicting every own candidate leaves the queue above its
    quota, the greedy walk would take every candidate of the cohort (thousands under
    ``reclaimWithinCohort: Any``) only to give them all back."""
    node = cq.node
    need: dict[FR, int] = {}
    for fr, v in requests.items():
        excess = node.usage.get(fr, 0) + v - node.subtree_quota.get(fr, 0)
        if excess > 0:
            need[fr] = excess
    for cand in same:
        if not need:
            break
        for fr, v in cand.info.usage.items():
            if fr in need:
                need[fr] -= v
                if need[fr] <= 0:
                    del need[fr]
    return not need


def _quantities_fit(node: QuotaNode, requests: dict[FR, int]) -> tuple[bool, dict[FR, int]]:
    ok = True
    remaining = {}
    for fr, v in requests.items():
        if node.usage.get(fr, 0) + v > node.subtree_quota.get(fr, 0):
            ok = False
        remaining[fr] = max(0, v - node.local_available(fr))
    return ok, remaining
