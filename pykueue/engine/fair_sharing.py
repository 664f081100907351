"""Fair sharing: dominant resource shares and the admission tournament.

A node's share is how much it borrows beyond its own (subtree) quota, relative to what its parent could
lend, taking the worst resource, divided by its weight. Admission runs a tournament at every cohort:
the child whose share would be lowest after admitting its candidate wins. Fair preemption, which
compares the same shares, is the ``fairsharing`` policy of ``pykueue.engine.preemption``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import TYPE_CHECKING

from pykueue.engine.quota import FR, QuotaNode, add_usage, potential_available, remove_usage

if TYPE_CHECKING:
    from pykueue.engine.cluster import ClusterState

LESS_THAN_OR_EQUAL_TO_FINAL_SHARE = "LessThanOrEqualToFinalShare"
LESS_THAN_INITIAL_SHARE = "LessThanInitialShare"
MAX_SHARE = 2**63 - 1


def weight(node: QuotaNode, state: ClusterState) -> float:
    if node.is_cohort:
        c = state.cohorts.get(node.name)
        return (c.spec.fair_weight_milli if c else 1000) / 1000
    return state.cqs[node.name].spec.fair_weight_milli / 1000


def lendable(parent: QuotaNode) -> dict[str, int]:
    """Per resource name: what ``parent`` could make available, summed over flavors."""
    out: dict[str, int] = {}
    for fr in parent.root().subtree_quota:
        out[fr[1]] = out.get(fr[1], 0) + potential_available(parent, fr)
    return out


def unweighted_ratio(node: QuotaNode, extra: dict[FR, int] | None = None) -> float:
    """Per mille of what the parent could lend that ``node`` borrows (with ``extra`` usage added),
    taking the worst resource; 0 when it borrows nothing or its parent has nothing to lend."""
    parent = node.parent
    if parent is None:
        return 0.0
    borrowed: dict[str, int] = {}
    for fr, quota in node.subtree_quota.items():
        amount = node.usage.get(fr, 0) + (extra.get(fr, 0) if extra else 0) - quota
        if amount > 0:
            borrowed[fr[1]] = borrowed.get(fr[1], 0) + amount
    if not borrowed:
        return 0.0
    lend = lendable(parent)
    ratio = 0.0
    for res in sorted(borrowed):
        lr = lend.get(res, 0)
        if lr > 0:
            ratio = max(ratio, borrowed[res] * 1000.0 / lr)
    return ratio


DRS = tuple[int, float]
ZERO_DRS: DRS = (0, 0.0)
NEGATIVE_DRS: DRS = (0, -1.0)  # below every share: the starting point of a search for the highest


def drs(node: QuotaNode, state: ClusterState, extra: dict[FR, int] | None = None) -> DRS:
    """The dominant resource share as a sort key that orders as upstream's precise DRS comparison: a
    node of weight 0 that borrows ranks above every finite share, and among such nodes the smaller
    unweighted share ranks first; otherwise the precise (unrounded) weighted shares compare."""
    ratio = unweighted_ratio(node, extra)
    if ratio == 0:
        return ZERO_DRS
    w = weight(node, state)
    if w == 0:
        return (1, ratio)
    return (0, ratio / w)


def rounded_share(node: QuotaNode, state: ClusterState, extra: dict[FR, int] | None = None) -> int:
    """The share rounded up, as upstream reports it; comparisons use ``drs``, never this."""
    zero_weight_borrows, value = drs(node, state, extra)
    if zero_weight_borrows:
        return MAX_SHARE
    return math.ceil(value)


def weighted_share(node: QuotaNode, state: ClusterState) -> int:
    """What upstream publishes as status.fairSharing.weightedShare."""
    return rounded_share(node, state)


# ---------------------------------------------------------------------------------- admission order


def tournament_order(state: ClusterState, entries: list) -> Iterator:
    """Yield scheduling entries in fair order, recomputing shares before each pick (so admissions made
    earlier in the cycle count). Entries must have ``cq``, ``info`` and ``assignment``."""
    by_root: dict[str, list] = {}
    for e in entries:
        by_root.setdefault(e.cq.node.root().name, []).append(e)
    for root_name in sorted(by_root):
        remaining = by_root[root_name]
        while remaining:
            if len(remaining) == 1 or remaining[0].cq.node.parent is None:
                yield remaining.pop(0)
                continue
            winner = _tournament_winner(state, remaining)
            remaining.remove(winner)
            yield winner


def _tournament_winner(state: ClusterState, entries: list):
    values: dict[tuple[str, str], DRS] = {}
    for e in entries:
        node = e.cq.node
        usage = e.assignment.usage
        for fr, v in usage.items():
            add_usage(node, fr, v)
        share = drs(node, state)
        for ancestor in node.path_to_root():
            values[(ancestor.name, e.info.key)] = share
            share = drs(ancestor, state)
        for fr, v in usage.items():
            remove_usage(node, fr, v)
    by_cq = {e.cq.name: e for e in entries}
    root = entries[0].cq.node.root()

    def key(e, cohort: str) -> tuple:
        return (values.get((cohort, e.info.key), ZERO_DRS), -e.info.priority, e.info.order_us, e.info.seq)

    def run(cohort: QuotaNode):
        cands = []
        for child in cohort.children:
            if child.is_cohort:
                c = run(child)
                if c is not None:
                    cands.append(c)
            elif child.name in by_cq:
                cands.append(by_cq[child.name])
        if not cands:
            return None
        return min(cands, key=lambda e: key(e, cohort.name))

    return run(root)
