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
    add_workload_usage,
    charge,
    give_back_in_turn,
    minimal_targets,
    release,
    remove_workload_usage,
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


@dataclass(slots=True, init=False)
class _Candidate:
    """``__init__`` written out: a dataclass's generated one stays interpreted in a compiled build."""

    info: WorkloadInfo
    lca: QuotaNode | None
    variant: int

    def __init__(self, info: WorkloadInfo, lca: QuotaNode | None, variant: int) -> None:
        self.info, self.lca, self.variant = info, lca, variant


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
        self.prefix_cache: dict[tuple, _Prefixes] | None = None  # the same, for ``_others_first``
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
            if not _may_preempt(own_rule if same else other_rule, wl_priority, wl_order, cand):
                continue
            cand_priority = cand.spec.priority
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
        cohort, the preemptor's own queue. Nothing is walked until a group is first looked at. Each
        yields candidates keyed as merged, ``(order, seq, candidate)``: unwrapping them in a layer of
        its own cost a generator step per candidate per search."""
        levels = _levels(cq, requests)

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

        own = (self._from_cq(cq, cq, wl, frs, None, False)
               if cq.spec.preemption.within_cluster_queue != model.NEVER else iter(()))
        return _Group(lambda: group(True)), _Group(lambda: group(False)), _Lazy(own)

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
            return self._greedy(cq, wl, requests, frs, attempts, borrow_forbidden, from_hierarchy, from_others, same)
        finally:
            self._walking -= 1

    def _greedy(self, cq: ClusterQueueState, wl: WorkloadInfo, requests: dict[FR, int], frs: set[FR],
                attempts: tuple[bool, ...], borrow_forbidden: bool, from_hierarchy: _Group, from_others: _Group,
                same: _Lazy) -> list[Target]:
        """Upstream's minimal preemptions: per attempt, take candidates in order until the preemptor
        fits, then give back those it does not need."""
        for allow_borrowing in attempts:
            if not allow_borrowing:
                if not _may_fit_without_borrowing(cq, requests, same):
                    continue  # the walk below could only fail and restore: skip it (same outcome)
                if _lacks_own_quota(cq, requests):
                    found = self._others_first(cq, wl, requests, frs, same)
                    if found is not None:
                        if found:
                            return found
                        continue
            # With borrowWithinCohort off, every non-hierarchical candidate of another queue may only
            # be taken without borrowing: in a borrowing attempt that group has nothing valid.
            groups = (from_hierarchy, same) if allow_borrowing and borrow_forbidden else (from_hierarchy, from_others, same)
            valid = self._valid_targets(cq, itertools.chain(*groups), allow_borrowing, frs)
            chosen = minimal_targets(self.cqs, cq, requests, allow_borrowing, valid, removed=False)
            if chosen is not None:
                return chosen
        return []

    def _others_first(self, cq: ClusterQueueState, wl: WorkloadInfo, requests: dict[FR, int], frs: set[FR],
                      same: _Lazy) -> list[Target] | None:
        """The walk without borrowing of a preemptor that must evict some of its own workloads (its
        usage plus its request exceeds its quota), with the same answer as the walk one victim at a
        time. Only its own victims lower its own usage, and they come after every other queue's: so
        the walk first takes every valid victim of the other queues, then its own until it fits,
        and the reverse pass goes through its own, then the others. A victim of another queue is
        valid while its queue is above its quota in ``frs`` (its cohorts up to the common ancestor
        too: none when the queue's parent is that ancestor, the condition here), and only that
        queue's own victims lower its usage: each queue's valid victims are the first of its
        candidates until it is within its quota (``_Prefixes``), removed at once (the tree ends the
        same). The reverse pass charges back at once what the slack absorbs (``give_back_in_turn``).
        None when some queue is deeper (the walk decides); else the walk's answer, empty when it
        fails."""
        rule = cq.spec.preemption.reclaim_within_cohort
        groups: list[list[tuple[tuple, int, WorkloadInfo]]] = [[], []]  # hierarchical reclaim first
        merged = [0, 0]  # levels in each group
        level_of: dict[str, tuple[QuotaNode, bool]] = {}
        out: dict[str, dict[FR, int]] = {}
        for root, skip, advantage in _levels(cq, requests):
            prefixes = self._prefixes(root, skip, frs, rule, wl)
            if prefixes is None:
                return None
            groups[0 if advantage else 1].extend(prefixes.entries)
            merged[0 if advantage else 1] += 1
            for name, usage in prefixes.usage.items():
                if name != cq.name:
                    out[name] = dict(usage)
                    level_of[name] = (root, advantage)
        others: list[tuple[tuple, int, WorkloadInfo]] = []
        for group, levels in zip(groups, merged, strict=True):
            if levels > 1:
                group.sort()  # (order, seq) is unique: the merge's order
            for entry in group:
                if entry[2].cluster_queue != cq.name:
                    others.append(entry)
        victims = [info for _, _, info in others]
        release(self.cqs, out)
        try:
            own = minimal_targets(self.cqs, cq, requests, False, self._valid_targets(cq, iter(same), False, frs),
                                  removed=False)
            if own is None:
                return []
            for t in own:
                remove_workload_usage(cq, t.workload)
            try:
                given = give_back_in_turn(self.cqs, cq, requests, victims, out)
            finally:
                for t in own:
                    add_workload_usage(cq, t.workload)
        finally:
            charge(self.cqs, out)
        # The order the single walk's reverse pass leaves: a victim given back at i takes the last one.
        order = list(range(len(others) + len(own)))
        for i in range(len(others) - 1, -1, -1):
            if given[i]:
                order[i] = order[-1]
                order.pop()
        result: list[Target] = []
        for i in order:
            if i >= len(others):
                result.append(own[i - len(others)])
                continue
            entry = others[i]
            root, advantage = level_of[entry[2].cluster_queue or ""]
            for _, _, cand in self._judged(cq, iter((entry,)), wl, root, advantage, skip_own=False):
                result.append(Target(cand.info, _REASON[cand.variant]))
        return result

    def _prefixes(self, root: QuotaNode, skip: QuotaNode | None, frs: set[FR], rule: str,
                  wl: WorkloadInfo) -> _Prefixes | None:
        """``_Prefixes`` of the queues over their quota under ``root`` (outside ``skip``), the
        preemptor's own among them; shared by a cycle's nominations (none changes usage). None when
        a queue is not a child of ``root``."""
        filter_key: tuple = (rule,) if rule == model.ANY else (rule, wl.spec.priority)
        if rule == model.LOWER_OR_NEWER_EQUAL_PRIORITY:
            filter_key += (wl.order_us,)
        key = (root, skip, frozenset(frs), filter_key)
        cache = self.prefix_cache
        if cache is not None:
            found = cache.get(key)
            if found is not None:
                return found
        sources: list[ClusterQueueState] = []
        self._sources(None, frs, root, skip, sources)
        prefixes = _Prefixes()
        for src in sources:
            if src.node.parent is not root:
                return None
            prefixes.add(src, frs, rule, wl)
        prefixes.entries.sort()
        if cache is not None:
            cache[key] = prefixes
        return prefixes

    def _valid_targets(self, cq: ClusterQueueState, candidates: Iterator[tuple[tuple, int, _Candidate]],
                       allow_borrowing: bool, frs: set[FR]) -> Iterator[Target]:
        """The valid candidates as targets, each judged only when the search asks for it: validity
        reads the quota tree, from which the search removes each victim taken before asking for the
        next. (A generator function, not a generator expression: mypyc builds those as lists.)"""
        for _, _, cand in candidates:
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

    def __iter__(self) -> Iterator[tuple[tuple, int, _Candidate]]:
        sources = self._sources()
        if len(sources) == 1:  # nothing to merge (a cycle's shared merge is one stream): it replays itself
            return iter(sources[0])
        if self._merged is None:
            self._merged = _Lazy(merge_sorted(sources))
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
        if self._done:  # all pulled (a cycle's shared merge after the first search that read it all)
            return iter(self._seen)
        return self._replay()

    def _replay(self) -> Iterator:
        i = 0
        while True:
            if i < len(self._seen):
                yield self._seen[i]
                i += 1
            elif not self._pull():
                return


def _may_preempt(rule: str, wl_priority: int, wl_order: int, cand: WorkloadInfo) -> bool:
    """Whether a preemptor of ``wl_priority`` (queued at ``wl_order``) may evict ``cand`` by a
    queue's ``withinClusterQueue`` or ``reclaimWithinCohort`` rule."""
    if rule == model.ANY:
        return True
    cand_priority = cand.spec.priority
    if rule == model.LOWER_PRIORITY:
        return wl_priority > cand_priority
    if rule == model.LOWER_OR_NEWER_EQUAL_PRIORITY:
        return wl_priority > cand_priority or (wl_priority == cand_priority and wl_order < cand.order_us)
    return False


def _using(source: ClusterQueueState, frs: set[FR]) -> Iterator[tuple[tuple, int, WorkloadInfo]]:
    """The admitted workloads of ``source`` that use some of ``frs``, in victim order, keyed for merging."""
    disjoint = frs.isdisjoint
    for order, cand in source.by_victim_order:
        if not disjoint(cand.usage):
            yield order, cand.seq, cand


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
    for _, _, cand in same:
        if not need:
            break
        for fr, v in cand.info.usage.items():
            if fr in need:
                need[fr] -= v
                if need[fr] <= 0:
                    del need[fr]
    return not need


def _levels(cq: ClusterQueueState, requests: dict[FR, int]) -> list[tuple[QuotaNode, QuotaNode | None, bool]]:
    """Where other queues' candidates come from: per ancestor (nearest first), the subtree under it
    outside the previous one, and whether reclaiming there is hierarchical (with advantage)."""
    levels: list[tuple[QuotaNode, QuotaNode | None, bool]] = []
    if cq.node.parent is not None and cq.spec.preemption.reclaim_within_cohort != model.NEVER:
        advantage, remaining = _quantities_fit(cq.node, requests)
        previous: QuotaNode | None = None
        for root in cq.node.path_to_root():
            levels.append((root, previous, advantage))
            ok, remaining = _quantities_fit(root, remaining)
            advantage = advantage or ok
            previous = root
    return levels


def _lacks_own_quota(cq: ClusterQueueState, requests: dict[FR, int]) -> bool:
    """Whether the preemptor's own usage plus its request exceeds its queue's quota somewhere."""
    node = cq.node
    for fr, v in requests.items():  # noqa: SIM110 - a plain loop, compiled as one
        if node.borrowing_with(fr, v):
            return True
    return False


class _Prefixes:
    """Per queue, the candidates a walk takes when it takes every valid one (``_others_first``):
    in victim order, those the rule lets the preemptor evict, while the queue is above its quota
    in the resources (removing each lowers only that queue's usage). ``entries`` merges them in
    victim order, keyed as the walk's merge is; ``usage`` sums each queue's."""

    __slots__ = ("entries", "usage")

    def __init__(self) -> None:
        self.entries: list[tuple[tuple, int, WorkloadInfo]] = []
        self.usage: dict[str, dict[FR, int]] = {}

    def add(self, src: ClusterQueueState, frs: set[FR], rule: str, wl: WorkloadInfo) -> None:
        usage, quota = src.node.usage, src.node.subtree_quota
        excess: dict[FR, int] = {}
        over = 0
        for fr in frs:
            e = usage.get(fr, 0) - quota.get(fr, 0)
            excess[fr] = e
            if e > 0:
                over += 1
        total: dict[FR, int] = {}
        wl_priority, wl_order = wl.spec.priority, wl.order_us
        entries = self.entries
        for order, seq, cand in _using(src, frs):
            if not over:
                break
            if not _may_preempt(rule, wl_priority, wl_order, cand):
                continue
            entries.append((order, seq, cand))
            for fr, u in cand.usage.items():
                total[fr] = total.get(fr, 0) + u
                left = excess.get(fr)
                if left is not None:
                    excess[fr] = left - u
                    if left > 0 >= left - u:
                        over -= 1
        if total:
            self.usage[src.name] = total


def _quantities_fit(node: QuotaNode, requests: dict[FR, int]) -> tuple[bool, dict[FR, int]]:
    ok = True
    remaining = {}
    for fr, v in requests.items():
        if node.usage.get(fr, 0) + v > node.subtree_quota.get(fr, 0):
            ok = False
        remaining[fr] = max(0, v - node.local_available(fr))
    return ok, remaining
