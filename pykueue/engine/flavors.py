"""Choosing a flavor for every resource of every pod set.

For each resource group, flavors are tried in the ClusterQueue's order. A flavor is skipped when the pod
set's node selector / required affinity excludes its labels or one of its taints is not tolerated. For a
flavor that matches, each covered resource is classified: it fits in what is available now (possibly by
borrowing), it could fit by preempting, or it can never fit. ``flavorFungibility`` then decides whether
to stop at this flavor or try the next one, and which of the tried flavors is best.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum
from typing import TYPE_CHECKING, Any

from pykueue.engine import model
from pykueue.engine.quantity_text import format_quantity
from pykueue.engine.quota import FR, available, canonical_fr, lowest_subtree_that_fits, potential_available
from pykueue.engine.selectors import flavor_matches_affinity, untolerated_taint
from pykueue.engine.workload import (
    EXCEEDS_MAX_QUOTA,
    NO_MATCHING_FLAVOR,
    WAITING_FOR_QUOTA,
    Shared,
    WorkloadInfo,
)

if TYPE_CHECKING:
    from pykueue.engine.cluster import ClusterQueueState

# Assignment modes, worst to best.
class Mode(IntEnum):
    """How a pod set (or a whole assignment: the worst of its pod sets) fits a flavor."""

    NO_FIT = 0
    PREEMPT = 1
    FIT = 2


NO_FIT, PREEMPT, FIT = Mode

# Finer modes used while choosing: no candidates < preempt within the queue < reclaim from others.
class Granular(IntEnum):
    """Upstream's granular modes, ordered worst first: what preemption could do for a flavor."""

    NO_FIT = 0
    NO_CANDIDATES = 1
    PREEMPT = 2
    RECLAIM = 3
    FIT = 4


G_NO_FIT, G_NO_CANDIDATES, G_PREEMPT, G_RECLAIM, G_FIT = Granular
_TO_MODE: dict[int, Mode] = {G_NO_FIT: NO_FIT, G_NO_CANDIDATES: PREEMPT, G_PREEMPT: PREEMPT, G_RECLAIM: PREEMPT, G_FIT: FIT}

_NO_FRS: dict[str, FR] = {}
_SEVERITY = {None: 0, WAITING_FOR_QUOTA: 2, EXCEEDS_MAX_QUOTA: 3, NO_MATCHING_FLAVOR: 4}

# oracle(cq, workload, fr, quantity) -> (granular mode, borrowing level after the preemptions)
Oracle = Callable[["ClusterQueueState", WorkloadInfo, FR, int], tuple[int, int]]


def most_severe(a: str | None, b: str | None) -> str | None:
    return a if _SEVERITY.get(a, 1) >= _SEVERITY.get(b, 1) else b


# The classes made per nomination write their ``__init__`` out: a dataclass's generated one stays
# interpreted in a compiled build (``dataclass(init=False)`` keeps the rest: repr and equality).


@dataclass(slots=True, init=False)
class FlavorChoice:
    flavor: str
    mode: int
    borrow: int

    def __init__(self, flavor: str, mode: int, borrow: int) -> None:
        self.flavor, self.mode, self.borrow = flavor, mode, borrow


@dataclass(slots=True, init=False)
class PodSetResult:
    name: str
    count: int
    requests: dict[str, int]  # totals for this pod set (count x per-pod, plus pods)
    flavors: dict[str, FlavorChoice]
    reasons: list[str]
    failed: bool
    no_fit_reason: str | None

    def __init__(self, name: str, count: int, requests: dict[str, int]) -> None:
        self.name, self.count, self.requests = name, count, requests
        self.flavors = {}
        self.reasons = []
        self.failed = False
        self.no_fit_reason = None

    def mode(self) -> int:
        if self.failed:
            return NO_FIT
        if not self.reasons:
            return FIT
        if not self.flavors:
            return NO_FIT
        return min(c.mode for c in self.flavors.values())


@dataclass(slots=True, init=False)
class Assignment:
    pod_sets: list[PodSetResult]
    borrowing: int
    usage: dict[FR, int]
    no_fit_reason: str | None
    # Set by ``FlavorAssigner.assign`` once the assignment is complete (the scheduler asks for the mode
    # three times per nomination); -1 while pod sets may still be added.
    final_mode: int

    def __init__(self, pod_sets: list[PodSetResult]) -> None:
        self.pod_sets = pod_sets
        self.borrowing = 0
        self.usage = {}
        self.no_fit_reason = None
        self.final_mode = -1

    def mode(self) -> int:
        if self.final_mode >= 0:
            return self.final_mode
        pod_sets = self.pod_sets
        if len(pod_sets) == 1:  # the common case, without a generator
            return pod_sets[0].mode()
        if not pod_sets:
            return NO_FIT
        return min(ps.mode() for ps in pod_sets)

    def frs_needing_preemption(self) -> set[FR]:
        return {
            canonical_fr(c.flavor, res)
            for ps in self.pod_sets
            for res, c in ps.flavors.items()
            if c.mode == PREEMPT
        }

    def message(self) -> str:
        parts = []
        for ps in self.pod_sets:
            if ps.mode() == FIT:
                continue
            parts.append(f"couldn't assign flavors to pod set {ps.name}: {', '.join(sorted(ps.reasons))}")
        return "; ".join(parts)

    def admission_key(self, cluster_queue: str) -> tuple:
        """What ``to_admission`` depends on, hashable: equal keys give equal admissions."""
        return (cluster_queue, tuple(
            (ps.name, ps.count, tuple(sorted((res, c.flavor) for res, c in ps.flavors.items())))
            for ps in self.pod_sets))

    def to_admission(self, cluster_queue: str) -> model.Admission:
        return model.Admission(
            cluster_queue=cluster_queue,
            pod_set_assignments=tuple(
                model.PodSetAssignment(
                    name=ps.name,
                    count=ps.count,
                    flavors={res: c.flavor for res, c in sorted(ps.flavors.items())},
                )
                for ps in self.pod_sets
            ),
        )


def _is_preferred(a: tuple[int, int], b: tuple[int, int], fungibility: model.FlavorFungibility) -> bool:
    """Whether granular mode ``a`` = (preemption mode, borrowing level) beats ``b``."""
    if a[0] == G_NO_FIT:
        return False
    if b[0] == G_NO_FIT:
        return True
    a_none, b_none = a[0] == G_NO_CANDIDATES, b[0] == G_NO_CANDIDATES
    if a_none != b_none:
        return not a_none
    if fungibility.preference == model.PREEMPTION_OVER_BORROWING:
        if a[1] != b[1]:
            return a[1] < b[1]
        return a[0] > b[0]
    if a[0] != b[0]:
        return a[0] > b[0]
    return a[1] < b[1]


def _should_try_next(mode: tuple[int, int], fungibility: model.FlavorFungibility) -> bool:
    if mode[0] in (G_NO_FIT, G_NO_CANDIDATES):
        return True
    if mode[0] in (G_PREEMPT, G_RECLAIM) and fungibility.when_can_preempt == model.TRY_NEXT_FLAVOR:
        return True
    return mode[1] != 0 and fungibility.when_can_borrow == model.TRY_NEXT_FLAVOR


def prepare(pod_sets: tuple[model.PodSet, ...], counts: list[int], covers_pods: bool) -> list[Any]:
    """Per pod set: (pod set, count, total requests, resources in the order they are assigned). The
    totals are count x per-pod request, plus ``pods`` when the queue covers it; read only."""
    out: list[Any] = []
    for ps, count in zip(pod_sets, counts, strict=True):
        requests = {res: q * count for res, q in ps.requests.items()}
        if covers_pods:
            requests[model.PODS] = count
        out.append((ps, count, requests, sorted(requests)))
    return out


def prepared(shared: Shared, pod_sets: tuple[model.PodSet, ...], covers_pods: bool) -> list[Any]:
    """``prepare`` at the pod sets' own counts, made once per pod-set tuple (for both kinds of queue)
    and kept in ``shared``: the loader gives equal tuples one object (90 for the baseline's 15,000
    workloads), so every nomination of them reads the same, instead of making its own."""
    both = shared.of_object(pod_sets, lambda: _both_kinds(pod_sets))
    return both[1] if covers_pods else both[0]


def _both_kinds(pod_sets: tuple[model.PodSet, ...]) -> list[list[Any]]:
    counts = [max(0, ps.count) for ps in pod_sets]
    return [prepare(pod_sets, counts, False), prepare(pod_sets, counts, True)]


class FlavorAssigner:
    """Assigns flavors to one workload against one ClusterQueue's current quota state."""

    __slots__ = ("wl", "cq", "flavors", "oracle", "fair_sharing", "prepared", "pinned")

    def __init__(
        self,
        wl: WorkloadInfo,
        cq: ClusterQueueState,
        flavors: dict[str, model.ResourceFlavor],
        oracle: Oracle,
        fair_sharing: bool,
        prepared: Shared,
        pinned: dict[str, dict[str, str]] | None = None,
    ) -> None:
        self.wl = wl
        self.cq = cq
        self.flavors = flavors
        self.oracle = oracle
        self.fair_sharing = fair_sharing
        self.prepared = prepared  # requests per pod-set tuple (``prepared``), shared by the nominations
        # Per pod set, resource -> the only flavor it may take (a scale-up slice keeps its old slice's).
        self.pinned = pinned

    def _can_preempt_while_borrowing(self) -> bool:
        p = self.cq.spec.preemption
        return p.borrow_within_cohort != model.NEVER or (
            self.fair_sharing and p.reclaim_within_cohort != model.NEVER
        )

    def assign(self, counts: list[int] | None = None) -> Assignment:
        wl = self.wl
        spec = wl.spec
        covers_pods = self.cq.group_of.get(model.PODS) is not None
        pod_sets: list[Any]
        if counts is None and not spec.reclaimable_pods:
            pod_sets = prepared(self.prepared, spec.pod_sets, covers_pods)
        else:
            pod_sets = prepare(spec.pod_sets, wl.pod_set_counts() if counts is None else counts, covers_pods)
        assignment = Assignment(pod_sets=[])
        assumed: dict[FR, int] = {}
        for ps, count, requests, ordered in pod_sets:
            result = PodSetResult(name=ps.name, count=count, requests=requests)
            attempts: dict[int, str | None] = {}  # resource group index -> least severe flavor reason
            for res in ordered:
                qty = requests[res]
                group_idx = self.cq.group_of.get(res)
                if group_idx is None:
                    if qty == 0:
                        continue
                    result.reasons.append(f"resource {res} unavailable in ClusterQueue")
                    result.failed = True
                    result.no_fit_reason = NO_MATCHING_FLAVOR
                    break
                if res in result.flavors:
                    continue
                chosen, reasons, rg_reason = self._find_flavor(ps, group_idx, requests, assumed)
                if rg_reason is not None or group_idx not in attempts:
                    attempts[group_idx] = rg_reason
                if chosen is None:
                    result.reasons.extend(reasons)
                    result.failed = True
                    break
                result.flavors.update(chosen)
                result.reasons.extend(reasons)
            if result.failed:
                reason = result.no_fit_reason
                for r in attempts.values():
                    reason = most_severe(reason, r)
                result.no_fit_reason = reason or NO_MATCHING_FLAVOR
            assignment.pod_sets.append(result)
            for res, choice in result.flavors.items():
                assignment.borrowing = max(assignment.borrowing, choice.borrow)
                qty = requests.get(res, 0)
                if qty:
                    fr = canonical_fr(choice.flavor, res)
                    assumed[fr] = assumed.get(fr, 0) + qty
            if result.failed:
                assignment.no_fit_reason = most_severe(assignment.no_fit_reason, result.no_fit_reason)
                assignment.final_mode = assignment.mode()
                return assignment
        assignment.usage = assumed
        mode = assignment.final_mode = assignment.mode()
        if mode == NO_FIT:
            for ps_result in assignment.pod_sets:
                assignment.no_fit_reason = most_severe(assignment.no_fit_reason, ps_result.no_fit_reason)
        return assignment

    def _find_flavor(
        self,
        ps: model.PodSet,
        group_idx: int,
        requests: dict[str, int],
        assumed: dict[FR, int],
    ) -> tuple[dict[str, FlavorChoice] | None, list[str], str | None]:
        """Best flavor for the resources of one group; also the reasons and the group's no-fit reason."""
        group = self.cq.spec.resource_groups[group_idx]
        covered = [r for r in group.covered_resources if r in requests]
        fungibility = self.cq.spec.flavor_fungibility
        reasons: list[str] = []
        best: dict[str, FlavorChoice] | None = None
        best_mode: tuple[int, int] = (G_NO_FIT, 1 << 30)
        group_reason: str | None = None  # least severe among flavors that did not fit
        any_no_fit = False
        keep = self.pinned.get(ps.name) if self.pinned is not None else None
        only = {keep[r] for r in covered if r in keep} if keep else None
        for fq in group.flavors:
            fname = fq.name
            if only and fname not in only:
                continue
            flavor = self.flavors.get(fname)
            flavor_reason: str | None
            if flavor is None:
                reasons.append(f"flavor {fname} not found")
                flavor_reason = NO_MATCHING_FLAVOR
            elif (taint := untolerated_taint(ps, flavor)) is not None:
                reasons.append(f"untolerated taint {taint.key}={taint.value}:{taint.effect} in flavor {fname}")
                flavor_reason = NO_MATCHING_FLAVOR
            elif not flavor_matches_affinity(ps, flavor):
                reasons.append(f"flavor {fname} doesn't match node affinity")
                flavor_reason = NO_MATCHING_FLAVOR
            else:
                flavor_reason = None
            if flavor_reason is not None:
                group_reason = flavor_reason if not any_no_fit else _least(group_reason, flavor_reason)
                any_no_fit = True
                continue
            choices: dict[str, FlavorChoice] = {}
            rep: tuple[int, int] = (G_FIT, 0)
            flavor_no_fit: str | None = None
            frs = self.cq.frs.get(fname, _NO_FRS)
            for res in covered:
                fr = frs.get(res) or (fname, res)
                pmode, borrow, msg, nofit = self._fits_quota(fr, assumed.get(fr, 0), requests[res])
                if msg:
                    reasons.append(msg)
                    flavor_no_fit = most_severe(flavor_no_fit, nofit)
                mode = (pmode, borrow)
                if _is_preferred(rep, mode, fungibility):
                    rep = mode
                if rep[0] == G_NO_FIT:
                    break
                choices[res] = FlavorChoice(fname, _TO_MODE[pmode], borrow)
            if rep[0] == G_NO_FIT:
                group_reason = flavor_no_fit if not any_no_fit else _least(group_reason, flavor_no_fit)
                any_no_fit = True
            if not _should_try_next(rep, fungibility):
                best, best_mode = choices, rep
                break
            if _is_preferred(rep, best_mode, fungibility):
                best, best_mode = choices, rep
        if best is None or best_mode[0] == G_NO_FIT:
            return None, reasons, group_reason or NO_MATCHING_FLAVOR
        if best_mode[0] == G_FIT:
            return best, [], None
        return best, reasons, None

    def _fits_quota(self, fr: FR, assumed: int, request: int) -> tuple[int, int, str, str | None]:
        """(granular mode, borrowing level, reason text, no-fit reason) for ``request`` more of ``fr``."""
        node = self.cq.node
        val = assumed + request
        avail = available(node, fr)
        # What is available now never exceeds what could ever be (usage is never negative), so a
        # request that fits needs no look at the maximum capacity.
        if val > avail and val > potential_available(node, fr):
            return (
                G_NO_FIT,
                0,
                f"insufficient quota for {fr[1]} in flavor {fr[0]}, request > maximum capacity",
                EXCEEDS_MAX_QUOTA,
            )
        borrow, may_reclaim = lowest_subtree_that_fits(node, fr, val)
        if val <= avail:
            return G_FIT, borrow, "", None
        msg = (f"insufficient unused quota for {fr[1]} in flavor {fr[0]}, "
               f"{format_quantity(fr[1], val - avail)} more needed")
        if node.quota(fr).nominal >= val or may_reclaim or self._can_preempt_while_borrowing():
            mode, borrow_after = self.oracle(self.cq, self.wl, fr, val)
            return mode, borrow_after, msg, (None if mode != G_NO_FIT else WAITING_FOR_QUOTA)
        return G_NO_FIT, borrow, msg, WAITING_FOR_QUOTA


def _least(a: str | None, b: str | None) -> str | None:
    return a if _SEVERITY.get(a, 1) <= _SEVERITY.get(b, 1) else b
