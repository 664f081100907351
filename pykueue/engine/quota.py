"""Quota and usage of cluster queues and cohorts: one representation, one set of formulas.

A ``QuotaNode`` is either a ClusterQueue (a leaf) or a Cohort (an inner node). Quota flows up the tree:
a node's ``subtree_quota`` is its own nominal quota plus what its children lend it (their subtree quota
minus the part their lending limit keeps local). Usage flows up the same way: a child stores in its
parent only the usage that exceeds its local (unlendable) quota. Every borrowing and lending rule is a
consequence of these two sums and of the borrowing limit applied on the way up.

Keys are ``(flavor, resource)`` pairs; values are integers in canonical units.
"""

from __future__ import annotations

from collections.abc import Iterator

from pykueue.engine.model import ResourceQuota

# (flavor, resource). Declared of any length so that a compiled build keeps the tuple an object: mypyc
# holds a fixed-size tuple unboxed and builds a new one for every dict lookup it is the key of.
FR = tuple[str, ...]
_NO_QUOTA = ResourceQuota()
_CANONICAL: dict[FR, FR] = {}


def canonical_fr(flavor: str, resource: str) -> FR:
    """The one tuple kept for a ``(flavor, resource)`` pair. A dict lookup compares its key with a stored
    one only when they are different objects: with the quota dicts and the nominations keyed by these,
    the lookups up the quota tree compare no tuples (they were ~4 % of a large-scale run). The pairs are
    those of the specs, a few dozen."""
    fr = (flavor, resource)
    return _CANONICAL.setdefault(fr, fr)


class QuotaNode:
    """Quota, lent capacity and usage of one ClusterQueue or Cohort."""

    __slots__ = ("name", "is_cohort", "parent", "children", "quotas", "subtree_quota", "usage", "local", "height")

    def __init__(self, name: str, is_cohort: bool) -> None:
        self.name = name
        self.is_cohort = is_cohort
        self.parent: QuotaNode | None = None
        self.children: list[QuotaNode] = []
        self.quotas: dict[FR, ResourceQuota] = {}
        self.subtree_quota: dict[FR, int] = {}
        self.usage: dict[FR, int] = {}
        self.local: dict[FR, int] = {}  # local_quota per resource, kept with subtree_quota
        self.height = 0  # node_height, kept by recompute_subtree (a cohort may have a thousand children)

    def __repr__(self) -> str:
        return f"QuotaNode({'cohort' if self.is_cohort else 'cq'} {self.name})"

    def quota(self, fr: FR) -> ResourceQuota:
        return self.quotas.get(fr, _NO_QUOTA)

    def local_quota(self, fr: FR) -> int:
        """Capacity that only this subtree can use: what the lending limit keeps from the parent.
        Computed with the subtree quota (``refresh_local``); it changes only when quotas do."""
        return self.local.get(fr, 0)

    def refresh_local(self) -> None:
        subtree = self.subtree_quota
        self.local = {
            fr: max(0, subtree.get(fr, 0) - q.lending_limit)
            for fr, q in self.quotas.items()
            if q.lending_limit is not None
        }

    def local_available(self, fr: FR) -> int:
        """Unused local quota: usable here, invisible to the parent."""
        local = self.local.get(fr, 0)
        return max(0, local - self.usage.get(fr, 0)) if local else 0

    def path_to_root(self) -> Iterator[QuotaNode]:
        """Ancestors, nearest first (not including self)."""
        node = self.parent
        while node is not None:
            yield node
            node = node.parent

    def root(self) -> QuotaNode:
        node = self
        while node.parent is not None:
            node = node.parent
        return node

    def borrowing_with(self, fr: FR, val: int) -> bool:
        """Whether adding ``val`` puts this node above its own subtree quota."""
        return self.usage.get(fr, 0) + val > self.subtree_quota.get(fr, 0)

    def is_borrowing(self, fr: FR) -> bool:
        return self.usage.get(fr, 0) > self.subtree_quota.get(fr, 0)

    def within_nominal(self, frs: set[FR] | frozenset[FR]) -> bool:
        """True when usage is at or below subtree quota in every one of ``frs``."""
        usage, quota = self.usage, self.subtree_quota
        for fr in frs:  # noqa: SIM110 - a plain loop: this runs for every queue of a preemption search
            if usage.get(fr, 0) > quota.get(fr, 0):
                return False
        return True


def available(node: QuotaNode, fr: FR) -> int:
    """Capacity still usable by ``node``: local leftovers plus what the parent can give, capped by the
    borrowing limit. Negative after over-admission (quota removed or queue moved)."""
    parent = node.parent
    if parent is None:
        return node.subtree_quota.get(fr, 0) - node.usage.get(fr, 0)
    parent_available = available(parent, fr)
    # local_quota and local_available inlined: this runs for every resource of every nomination.
    local = node.local.get(fr, 0)
    q = node.quotas.get(fr)
    if q is not None and q.borrowing_limit is not None:
        stored_in_parent = node.subtree_quota.get(fr, 0) - local
        used_in_parent = max(0, node.usage.get(fr, 0) - local)
        parent_available = min(stored_in_parent - used_in_parent + q.borrowing_limit, parent_available)
    if local:
        return max(0, local - node.usage.get(fr, 0)) + parent_available
    return parent_available


def potential_available(node: QuotaNode, fr: FR) -> int:
    """The most ``node`` could ever use of ``fr`` if nothing else used any: the ceiling for NoFit."""
    parent = node.parent
    if parent is None:
        return node.subtree_quota.get(fr, 0)
    result = node.local.get(fr, 0) + potential_available(parent, fr)
    q = node.quotas.get(fr)
    if q is not None and q.borrowing_limit is not None:
        result = min(node.subtree_quota.get(fr, 0) + q.borrowing_limit, result)
    return result


def add_usage(node: QuotaNode, fr: FR, val: int) -> None:
    """Charge ``val`` to ``node``; what exceeds its unused local quota is charged to the parent too."""
    while True:
        usage = node.usage
        used = usage.get(fr, 0)
        local = node.local.get(fr, 0)
        local_avail = max(0, local - used) if local else 0
        usage[fr] = used + val
        parent = node.parent
        if parent is None or val <= local_avail:
            return
        val -= local_avail
        node = parent


def remove_usage(node: QuotaNode, fr: FR, val: int) -> None:
    """Release ``val`` from ``node``; the part it had stored in the parent is released there too."""
    while True:
        usage = node.usage
        used = usage.get(fr, 0)
        stored_in_parent = used - node.local.get(fr, 0)
        usage[fr] = used - val
        parent = node.parent
        if stored_in_parent <= 0 or parent is None:
            return
        val = min(val, stored_in_parent)
        node = parent


def recompute_subtree(node: QuotaNode) -> None:
    """Rebuild subtree quota and usage of a cohort subtree from its leaves (after structural changes)."""
    if not node.is_cohort:
        node.subtree_quota = {fr: q.nominal for fr, q in node.quotas.items()}
        node.refresh_local()
        node.height = 0
        return
    subtree = {fr: q.nominal for fr, q in node.quotas.items()}
    usage: dict[FR, int] = {}
    height = min(len(node.children), 1)
    for child in node.children:
        recompute_subtree(child)
        if child.is_cohort:
            height = max(height, child.height + 1)
        for fr, child_quota in child.subtree_quota.items():
            subtree[fr] = subtree.get(fr, 0) + child_quota - child.local_quota(fr)
        for fr, child_usage in child.usage.items():
            stored = child_usage - child.local_quota(fr)
            if stored > 0:
                usage[fr] = usage.get(fr, 0) + stored
    node.subtree_quota = subtree
    node.refresh_local()
    node.usage = usage
    node.height = height


def node_height(node: QuotaNode) -> int:
    """Distance to the furthest leaf: 1 for a cohort of cluster queues, more for nested cohorts (as
    of the last ``recompute_subtree``, which every change of the forest ends with)."""
    return node.height


def lowest_subtree_that_fits(cq: QuotaNode, fr: FR, val: int) -> tuple[int, bool]:
    """Height of the smallest subtree around ``cq`` whose quota can absorb ``val`` more of ``fr``
    (0 = no borrowing), and whether that subtree is smaller than the whole tree (so reclaiming
    from outside it is conceivable)."""
    if not (cq.parent is not None and cq.borrowing_with(fr, val)):
        return 0, cq.parent is not None
    remaining = val - cq.local_available(fr)
    tracking: QuotaNode | None = cq.parent
    node: QuotaNode | None = cq.parent
    while node is not None:
        tracking = node
        if not node.borrowing_with(fr, remaining):
            return node_height(node), node.parent is not None
        remaining -= node.local_available(fr)
        node = node.parent
    assert tracking is not None
    return node_height(tracking), tracking.parent is not None
