"""The cohort forest: ClusterQueues and Cohorts linked by ``spec.cohort``/``cohortName`` and Cohort
``parentName``, the cycles that cut a cohort loose, and whether a ClusterQueue is active.

Rebuilt whenever the structure changes (an object applied or deleted); the quota tree's subtree totals
are recomputed from the queues' admitted workloads at the same time.
"""

from __future__ import annotations

from pykueue.engine import model
from pykueue.engine.cluster import ClusterQueueState, CohortState
from pykueue.engine.quota import recompute_subtree

STOPPED = "Stopped"
FLAVOR_NOT_FOUND = "FlavorNotFound"
ADMISSION_CHECK_NOT_FOUND = "AdmissionCheckNotFound"
COHORT_CYCLE = "CohortCycle"
TERMINATING = "Terminating"
INVALID_SPEC = "InvalidSpec"


def cohort(cohorts: dict[str, CohortState], name: str) -> CohortState:
    """The named cohort, created implicitly (as upstream does) when only a reference names it."""
    c = cohorts.get(name)
    if c is None:
        c = cohorts[name] = CohortState(name)
    return c


def cyclic_cohorts(cohorts: dict[str, CohortState]) -> set[str]:
    """Cohorts whose chain of parents runs into a cycle (linked as the specs say)."""
    cyclic: set[str] = set()
    for name, c in cohorts.items():
        seen = {name}
        node = c.node.parent
        while node is not None:
            if node.name in seen:
                cyclic.add(name)
                break
            seen.add(node.name)
            node = node.parent
    return cyclic


def rebuild(cohorts: dict[str, CohortState], cqs: dict[str, ClusterQueueState],
            flavors: dict[str, model.ResourceFlavor], checks: dict[str, model.AdmissionCheck]) -> None:
    """Link the forest from the specs (a cohort in a cycle becomes a root), recompute usage and
    subtree quotas, and decide each ClusterQueue's activity."""
    for c in cohorts.values():
        c.node.parent = None
        c.node.children = []
    for cq in cqs.values():
        cq.node.parent = None
        cq.node.children = []
    for c in list(cohorts.values()):
        parent = c.spec.parent
        if parent:
            c.node.parent = cohort(cohorts, parent).node
    cyclic = cyclic_cohorts(cohorts)
    for name in cyclic:
        cohorts[name].node.parent = None
    for c in cohorts.values():
        if c.node.parent is not None:
            c.node.parent.children.append(c.node)
    for cq in cqs.values():
        if cq.spec.cohort:
            owner = cohort(cohorts, cq.spec.cohort)
            cq.node.parent = owner.node
            owner.node.children.append(cq.node)
    for node in [c.node for c in cohorts.values()] + [cq.node for cq in cqs.values()]:
        node.children.sort(key=lambda n: (n.is_cohort, n.name))
    for cq in cqs.values():
        cq.node.usage = {}
        # what holds quota: the admitted, and the evicted or deleted whose jobs are still stopping
        for holders in (cq.admitted, cq.stopping):
            for info in holders.values():
                for fr, v in info.usage.items():
                    cq.node.usage[fr] = cq.node.usage.get(fr, 0) + v
    roots = {cq.node.root() for cq in cqs.values()} | {c.node.root() for c in cohorts.values()}
    for root in sorted(roots, key=lambda n: n.name):
        recompute_subtree(root)
    for cq in cqs.values():
        cq.inactive_reason = inactive_reason(cq, flavors, checks, cyclic)


def inactive_reason(cq: ClusterQueueState, flavors: dict[str, model.ResourceFlavor],
                    checks: dict[str, model.AdmissionCheck], cyclic: set[str]) -> str | None:
    """Why a ClusterQueue admits nothing (upstream's Active=False reasons), or None when it is active."""
    if cq.held is not None:
        return cq.held[0]
    if cq.spec.stop_policy != model.STOP_NONE:
        return STOPPED
    if any(f not in flavors for f in cq.flavor_names):
        return FLAVOR_NOT_FOUND
    if any(rule.name not in checks for rule in cq.spec.admission_checks):
        return ADMISSION_CHECK_NOT_FOUND
    node = cq.node.parent
    while node is not None:
        if node.name in cyclic:
            return COHORT_CYCLE
        node = node.parent
    return None


def inactive_detail(cq: ClusterQueueState, flavors: dict[str, model.ResourceFlavor],
                    checks: dict[str, model.AdmissionCheck]) -> str:
    """Why a ClusterQueue admits nothing, in the words of upstream's Active=False condition."""
    reason = cq.inactive_reason
    if cq.held is not None:
        return cq.held[1]
    if reason == STOPPED:
        return f"stopPolicy is {cq.spec.stop_policy}"
    if reason == FLAVOR_NOT_FOUND:
        missing = sorted(f for f in cq.flavor_names if f not in flavors)
        return f"references missing ResourceFlavor(s): {', '.join(missing)}"
    if reason == ADMISSION_CHECK_NOT_FOUND:
        missing = sorted(r.name for r in cq.spec.admission_checks if r.name not in checks)
        return f"references missing AdmissionCheck(s): {', '.join(missing)}"
    if reason == COHORT_CYCLE:
        return "its cohort is part of a cycle of Cohort parents"
    return str(reason)
