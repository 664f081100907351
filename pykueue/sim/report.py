"""The ``pykueue simulate --report FILE.html`` page: one self-contained HTML file of plotly charts.

The page must open offline (plotly.js is embedded once, inline) and be byte-identical for the same run
(explicit div ids, no wall-clock time, deterministic iteration and float arithmetic). Large runs (a thousand
queues, tens of thousands of workloads) are reduced before plotting: queues are grouped into at most
``MAX_SERIES`` series (by cohort and queue class, then coarser), and any series longer than ``MAX_POINTS``
is resampled to time-weighted means over equal bins, so the file stays a few MB and writes in seconds.

Usage is read from ``Run.samples`` (recorded with ``Simulation(..., record_usage=True)``); nominal quotas
come from the inputs and their timed changes, so a quota changed mid-run shows as a step.
"""

from __future__ import annotations

import contextlib
import html
import math
import os
import tempfile
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pykueue.engine import events as ev
from pykueue.engine import model
from pykueue.sim.simulator import US, Run, to_us

CLASS_LABEL = "kueue.x-k8s.io/performance-scheduler-class"
MAX_SERIES = 30  # lines per chart before queues are grouped
MAX_POINTS = 1200  # points per series before resampling
MAX_MARKERS = 20_000  # preemption markers drawn (all are counted)
HIST_BINS = 40
MAX_SMALL_MULTIPLE_RESOURCES = 3
NO_COHORT = "(no cohort)"

FR = tuple[str, str]  # (flavor, resource)
_PALETTE = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
    "#17becf", "#393b79", "#ad494a", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd", "#e6550d",
    "#31a354", "#756bb1", "#636363", "#6baed6", "#fd8d3c", "#74c476", "#9e9ac8", "#969696", "#9c9ede",
    "#e7969c", "#b5cf6b", "#e7ba52",
)
_REASON_COLORS = {
    "InClusterQueue": "#d62728",
    "InCohortReclamation": "#1f77b4",
    "InCohortFairSharing": "#9467bd",
    "InCohortReclaimWhileBorrowing": "#ff7f0e",
}
_WITHIN, _LENT, _BORROWED, _NOMINAL = "#4c78a8", "#54a24b", "#e45756", "#222222"


def write_report(run: Run, result: dict[str, Any], path: str) -> None:
    """Write the report for ``run`` (and its ``build_result`` document) to ``path``."""
    write_atomically(path, render_report(run, result))


def write_atomically(path: str, text: str) -> None:
    """Write ``text`` to a temporary file beside ``path``, then rename it into place: a run killed
    mid-write leaves the previous file whole, never an empty or truncated one. The new file gets the
    permissions an ordinary ``open`` would have given it."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, temporary = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def render_report(run: Run, result: dict[str, Any]) -> str:
    """The whole HTML page as a string (what ``write_report`` writes)."""
    try:
        import plotly.io as pio
    except ImportError as e:  # plotly is the optional "report" extra
        raise RuntimeError("the HTML report needs plotly: pip install 'pykueue[report]'") from e

    topo = _Topology.of(run)
    units, unit_kind = _choose_units(topo)
    cohorts = _choose_cohorts(topo)
    sweep = _Sweep(run, topo, units, cohorts)
    sweep.replay()
    end_us = max(run.end_us, sweep.last_us)
    cohort_series = _top_cohorts(sweep, cohorts, end_us)

    fair = run.engine.config.fair_sharing.enable
    sections: list[tuple[str, str, Any]] = []  # (div id, caption, figure or html)
    sections.append(("usage", _USAGE_CAPTION, _usage_overview(sweep, end_us, unit_kind)))
    for i, res in enumerate(sweep.resources[:MAX_SMALL_MULTIPLE_RESOURCES]):
        sections.append((f"borrow-lend-{i}", _BORROW_CAPTION, _borrow_lend(sweep, res, end_us, unit_kind)))
    sections.append(("cohorts", _COHORT_CAPTION, _cohort_usage(sweep, cohort_series, end_us)))
    tta = _time_to_admission(run, result, topo)
    sections.append(("time-to-admission", _TTA_CAPTION, _tta_figure(tta)))
    sections.append(("time-to-admission-table", "", _tta_table(tta)))
    sections.append(("pending", "", _pending(sweep, end_us, unit_kind)))
    sections.append(("preemptions", _PREEMPT_CAPTION, _preemptions(result, sweep, end_us, unit_kind)))
    if fair:
        sections.append(("fair-sharing", _FAIR_CAPTION, _fair_shares(sweep, end_us, unit_kind)))

    body: list[str] = [_header(run, result, topo, unit_kind, sweep)]
    first = True
    for div_id, caption, fig in sections:
        if isinstance(fig, str):
            body.append(f'<section id="{div_id}">{fig}</section>')
            continue
        if caption:
            body.append(f'<p class="caption">{html.escape(caption)}</p>')
        body.append(
            pio.to_html(
                fig,
                full_html=False,
                include_plotlyjs=first,  # the bundle goes inline once: the page opens offline
                div_id=f"fig-{div_id}",
                config={"displaylogo": False, "responsive": True},
                default_height=f"{fig.layout.height or 450}px",
            )
        )
        first = False
    return _PAGE.format(body="\n".join(body))


# ------------------------------------------------------------------------------------------ topology


def _quotas(groups: Iterable[model.ResourceGroup]) -> dict[FR, tuple[int, int | None]]:
    return {
        (fq.name, res): (q.nominal, q.lending_limit)
        for group in groups
        for fq in group.flavors
        for res, q in fq.resources.items()
    }


@dataclass
class _Topology:
    """Queues, cohorts and their quota timelines, from the inputs, their timed changes and the engine."""

    queues: list[str]  # by cohort, then name: the order series are drawn in
    cohort_of: dict[str, str | None]
    parent_of: dict[str, str | None]
    class_of: dict[str, str]
    # (time_us, "cq" | "cohort", name, quotas) in time order; t=0 holds the initial objects
    quota_events: list[tuple[int, str, str, dict[FR, tuple[int, int | None]]]]
    all_cohorts: list[str]

    @staticmethod
    def of(run: Run) -> _Topology:
        inp, engine = run.inputs, run.engine
        cohort_of: dict[str, str | None] = {}
        class_of: dict[str, str] = {}
        parent_of: dict[str, str | None] = {}
        qevents: list[tuple[int, int, str, str, dict[FR, tuple[int, int | None]]]] = []
        seq = 0

        def add(t: int, kind: str, name: str, q: dict[FR, tuple[int, int | None]]) -> None:
            nonlocal seq
            seq += 1
            qevents.append((t, seq, kind, name, q))

        def see_cq(spec: model.ClusterQueue) -> None:
            cohort_of[spec.name] = spec.cohort
            labels = getattr(spec, "labels", None) or {}  # kept if the model ever carries labels
            if labels.get(CLASS_LABEL):
                class_of[spec.name] = labels[CLASS_LABEL]

        for cq in inp.cluster_queues:
            see_cq(cq)
            add(0, "cq", cq.name, _quotas(cq.resource_groups))
        for c in inp.cohorts:
            parent_of[c.name] = c.parent
            add(0, "cohort", c.name, _quotas(c.resource_groups))
        for change in sorted(inp.changes, key=lambda c: c.at):
            t = max(0, to_us(change.at))
            if change.kind == "ClusterQueue":
                if isinstance(change.obj, model.ClusterQueue) and not change.delete:
                    see_cq(change.obj)
                    add(t, "cq", change.key, _quotas(change.obj.resource_groups))
                else:
                    add(t, "cq", change.key, {})
            elif change.kind == "Cohort":
                if isinstance(change.obj, model.Cohort) and not change.delete:
                    parent_of[change.key] = change.obj.parent
                    add(t, "cohort", change.key, _quotas(change.obj.resource_groups))
                else:
                    add(t, "cohort", change.key, {})
        # The engine's final structure wins (it is what the run ended with).
        for name, cqs in engine.cqs.items():
            if name not in cohort_of:
                add(0, "cq", name, _quotas(cqs.spec.resource_groups))
            see_cq(cqs.spec)
        for name, cs in engine.cohorts.items():
            parent_of[name] = cs.spec.parent
        for s in run.samples:
            cohort_of.setdefault(s.cluster_queue, None)
        for c in list(cohort_of.values()):
            if c is not None:
                parent_of.setdefault(c, None)
        for p in list(parent_of.values()):
            if p is not None:
                parent_of.setdefault(p, None)
        qevents.sort(key=lambda e: (e[0], e[1]))
        return _Topology(
            queues=sorted(cohort_of, key=lambda q: (cohort_of[q] is None, cohort_of[q] or "", q)),
            cohort_of=cohort_of,
            parent_of=parent_of,
            class_of=class_of,
            quota_events=[(t, k, n, q) for t, _, k, n, q in qevents],
            all_cohorts=sorted(parent_of),
        )

    def ancestors(self, cohort: str | None) -> list[str]:
        """``cohort`` and its parents, nearest first (a cycle stops the walk)."""
        out: list[str] = []
        while cohort is not None and cohort not in out:
            out.append(cohort)
            cohort = self.parent_of.get(cohort)
        return out

    def root(self, cohort: str | None) -> str | None:
        chain = self.ancestors(cohort)
        return chain[-1] if chain else None


def _choose_units(topo: _Topology) -> tuple[dict[str, str], str]:
    """Map each queue to the series it is drawn in: itself when few, else the finest grouping that fits."""
    qs = topo.queues
    if len(qs) <= MAX_SERIES:
        return {q: q for q in qs}, "cluster queue"

    def cohort(q: str) -> str:
        return topo.cohort_of[q] or NO_COHORT

    def root(q: str) -> str:
        return topo.root(topo.cohort_of[q]) or NO_COHORT

    candidates: list[tuple[dict[str, str], str]] = []
    if topo.class_of:
        candidates.append(
            ({q: f"{cohort(q)} / {topo.class_of.get(q, '-')}" for q in qs}, "cohort / queue class")
        )
        if all(topo.class_of.get(q) for q in qs):
            candidates.append(({q: topo.class_of[q] for q in qs}, "queue class"))
    candidates.append(({q: cohort(q) for q in qs}, "cohort"))
    candidates.append(({q: root(q) for q in qs}, "root cohort"))
    for mapping, kind in candidates:
        if len(set(mapping.values())) <= MAX_SERIES:
            return mapping, kind
    # Too many independent trees: keep the biggest by queue count and fold the rest.
    sizes = Counter(root(q) for q in qs)
    keep = {r for r, _ in sorted(sizes.items(), key=lambda kv: (-kv[1], kv[0]))[: MAX_SERIES - 1]}
    return {q: root(q) if root(q) in keep else "(other cohorts)" for q in qs}, "root cohort"


def _choose_cohorts(topo: _Topology) -> list[str]:
    """Cohorts drawn in the cohort chart: all when few, else roots (trimmed by peak usage later)."""
    used = {c for q in topo.queues for c in topo.ancestors(topo.cohort_of[q])}
    cohorts = sorted(used | {c for c in topo.all_cohorts if c in used or topo.parent_of.get(c) is None})
    if len(cohorts) <= MAX_SERIES:
        return cohorts
    return sorted({topo.root(c) or c for c in cohorts})


# --------------------------------------------------------------------------------------------- sweep


def _derive(u: int, nominal: int, lending: int | None, can_lend: bool) -> tuple[int, int, int]:
    """(used within nominal, borrowed, lendable) of one queue in one flavor/resource."""
    unused = max(0, nominal - u)
    lendable = (unused if lending is None else min(unused, lending)) if can_lend else 0
    return min(u, nominal), max(0, u - nominal), lendable


@dataclass
class _Unit:
    usage: dict[FR, int] = field(default_factory=dict)
    nominal: dict[FR, int] = field(default_factory=dict)
    within: dict[FR, int] = field(default_factory=dict)
    borrowed: dict[FR, int] = field(default_factory=dict)
    lendable: dict[str, dict[FR, int]] = field(default_factory=dict)  # per root cohort
    lent: dict[FR, float] = field(default_factory=dict)
    pending: int = 0
    shares: dict[str, int] = field(default_factory=dict)
    share_max: int = 0
    points: list[tuple[int, tuple[float, ...]]] = field(default_factory=list)


@dataclass
class _Root:
    borrowed: dict[FR, int] = field(default_factory=dict)
    lendable: dict[FR, int] = field(default_factory=dict)
    own: dict[FR, int] = field(default_factory=dict)  # cohorts' own nominal quota in the tree
    ratio: dict[FR, float] = field(default_factory=dict)
    units: list[str] = field(default_factory=list)


@dataclass
class _CohortAcc:
    usage: dict[FR, int] = field(default_factory=dict)
    nominal: dict[FR, int] = field(default_factory=dict)
    points: list[tuple[int, tuple[float, ...]]] = field(default_factory=list)


def _add(d: dict[FR, Any], fr: FR, v: float) -> None:
    if v:
        d[fr] = d.get(fr, 0) + v


class _Sweep:
    """Replays samples and quota changes in time order, keeping per-series sums up to date incrementally.

    Lent capacity is attributed proportionally: in each cohort tree, what its queues borrow above their
    nominal quota is taken from the unused (lendable, within lending limits) nominal quota of the other
    queues and the cohorts' own quota, each giving the same fraction ``borrowed / (lendable + own)``.
    """

    def __init__(self, run: Run, topo: _Topology, units: dict[str, str], cohorts: list[str]) -> None:
        self.run = run
        self.topo = topo
        self.unit_of = units
        self.fair = run.engine.config.fair_sharing.enable
        if all(u == q for q, u in units.items()):
            order: Iterable[str] = topo.queues  # queues grouped by cohort
        else:  # groups by name, the "(no cohort)"-style catch-alls last
            order = sorted(set(units.values()), key=lambda u: (u.startswith("("), u))
        self.units: dict[str, _Unit] = {u: _Unit() for u in order}
        self.root_of = {q: topo.root(topo.cohort_of[q]) for q in topo.queues}
        self.roots: dict[str, _Root] = {}
        for q in topo.queues:
            r = self.root_of[q]
            if r is not None:
                root = self.roots.setdefault(r, _Root())
                if units[q] not in root.units:
                    root.units.append(units[q])
        for c in topo.all_cohorts:
            r = topo.root(c)
            if r is not None:
                self.roots.setdefault(r, _Root())
        shown = set(cohorts)
        self.cohorts: dict[str, _CohortAcc] = {c: _CohortAcc() for c in cohorts}
        self.cq_cohorts = {q: [c for c in topo.ancestors(topo.cohort_of[q]) if c in shown] for q in topo.queues}
        self.usage: dict[str, dict[FR, int]] = {q: {} for q in topo.queues}
        self.quota: dict[str, dict[FR, tuple[int, int | None]]] = {q: {} for q in topo.queues}
        self.own: dict[str, dict[FR, tuple[int, int | None]]] = {}
        self.pending: dict[str, int] = {}
        frs: set[FR] = set()
        for _, _, _, q in topo.quota_events:
            frs.update(q)
        for s in run.samples:
            frs.update(s.usage)
        self.resources = _order_resources({r for _, r in frs})
        self.frs_of = {r: sorted(fr for fr in frs if fr[1] == r) for r in self.resources}
        self.dirty_units: set[str] = set(self.units)
        self.dirty_roots: set[str] = set()
        self.dirty_cohorts: set[str] = set(self.cohorts)
        self.last_us = 0

    # ---- state changes

    def _set_queue(self, q: str, fr: FR, u: int, quota: tuple[int, int | None]) -> None:
        old_u = self.usage[q].get(fr, 0)
        old_q = self.quota[q].get(fr, (0, None))
        root = self.root_of[q]
        can_lend = root is not None
        ow, ob, ol = _derive(old_u, old_q[0], old_q[1], can_lend)
        nw, nb, nl = _derive(u, quota[0], quota[1], can_lend)
        unit = self.units[self.unit_of[q]]
        du, dn = u - old_u, quota[0] - old_q[0]
        _add(unit.usage, fr, du)
        _add(unit.nominal, fr, dn)
        _add(unit.within, fr, nw - ow)
        _add(unit.borrowed, fr, nb - ob)
        if root is not None and (nb != ob or nl != ol):
            r = self.roots[root]
            _add(r.borrowed, fr, nb - ob)
            _add(r.lendable, fr, nl - ol)
            _add(unit.lendable.setdefault(root, {}), fr, nl - ol)
            _add(unit.lent, fr, (nl - ol) * r.ratio.get(fr, 0.0))
            self.dirty_roots.add(root)
        if du or dn:
            for c in self.cq_cohorts[q]:
                acc = self.cohorts[c]
                _add(acc.usage, fr, du)
                _add(acc.nominal, fr, dn)
                self.dirty_cohorts.add(c)
        self.dirty_units.add(self.unit_of[q])

    def _queue_usage(self, q: str, usage: dict[FR, int]) -> None:
        old = self.usage[q]
        quota = self.quota[q]
        for fr in sorted(old.keys() | usage.keys()):
            v = usage.get(fr, 0)
            if old.get(fr, 0) != v:
                self._set_queue(q, fr, v, quota.get(fr, (0, None)))
                if v:
                    old[fr] = v
                else:
                    old.pop(fr, None)

    def _queue_quota(self, q: str, quotas: dict[FR, tuple[int, int | None]]) -> None:
        old = self.quota[q]
        usage = self.usage[q]
        for fr in sorted(old.keys() | quotas.keys()):
            new = quotas.get(fr, (0, None))
            if old.get(fr, (0, None)) != new:
                self._set_queue(q, fr, usage.get(fr, 0), new)
        self.quota[q] = dict(quotas)

    def _cohort_quota(self, name: str, quotas: dict[FR, tuple[int, int | None]]) -> None:
        old = self.own.get(name, {})
        root = self.topo.root(name)
        shown = [c for c in self.topo.ancestors(name) if c in self.cohorts]
        for fr in sorted(old.keys() | quotas.keys()):
            dn = quotas.get(fr, (0, None))[0] - old.get(fr, (0, None))[0]
            if not dn:
                continue
            if root is not None:
                _add(self.roots[root].own, fr, dn)
                self.dirty_roots.add(root)
            for c in shown:
                _add(self.cohorts[c].nominal, fr, dn)
                self.dirty_cohorts.add(c)
        self.own[name] = dict(quotas)

    def _queue_counts(self, q: str, pending: int, share: int) -> None:
        unit_name = self.unit_of[q]
        unit = self.units[unit_name]
        dp = pending - self.pending.get(q, 0)
        if dp:
            unit.pending += dp
            self.pending[q] = pending
            self.dirty_units.add(unit_name)
        old = unit.shares.get(q, 0)
        if share != old:
            unit.shares[q] = share
            if share >= unit.share_max:
                unit.share_max = share
            elif old == unit.share_max:
                unit.share_max = max(unit.shares.values())
            self.dirty_units.add(unit_name)

    # ---- emission

    def _settle_roots(self) -> None:
        for name in sorted(self.dirty_roots):
            r = self.roots[name]
            for fr in sorted(r.borrowed.keys() | r.lendable.keys() | r.own.keys() | r.ratio.keys()):
                pool = r.lendable.get(fr, 0) + r.own.get(fr, 0)
                new = min(1.0, r.borrowed.get(fr, 0) / pool) if pool > 0 else 0.0
                old = r.ratio.get(fr, 0.0)
                if new == old:
                    continue
                r.ratio[fr] = new
                for unit_name in r.units:
                    unit = self.units[unit_name]
                    lendable = unit.lendable.get(name, {}).get(fr, 0)
                    if lendable:
                        unit.lent[fr] = unit.lent.get(fr, 0.0) + lendable * (new - old)
                        self.dirty_units.add(unit_name)
        self.dirty_roots.clear()

    def _emit(self, t: int) -> None:
        self._settle_roots()
        for name in sorted(self.dirty_units):
            unit = self.units[name]
            snap: list[float] = []
            for res in self.resources:
                frs = self.frs_of[res]
                snap.append(sum(unit.usage.get(fr, 0) for fr in frs))
                snap.append(sum(unit.nominal.get(fr, 0) for fr in frs))
                snap.append(sum(unit.within.get(fr, 0) for fr in frs))
                snap.append(sum(unit.borrowed.get(fr, 0) for fr in frs))
                snap.append(max(0.0, round(sum(unit.lent.get(fr, 0.0) for fr in frs), 3)))
            snap.append(unit.pending)
            snap.append(unit.share_max)
            _append(unit.points, t, tuple(snap))
        self.dirty_units.clear()
        for name in sorted(self.dirty_cohorts):
            acc = self.cohorts[name]
            snap = []
            for res in self.resources:
                frs = self.frs_of[res]
                snap.append(sum(acc.usage.get(fr, 0) for fr in frs))
                snap.append(sum(acc.nominal.get(fr, 0) for fr in frs))
            _append(acc.points, t, tuple(snap))
        self.dirty_cohorts.clear()

    def replay(self) -> None:
        """Apply quota changes and samples instant by instant, emitting the changed series after each."""
        events, samples = self.topo.quota_events, self.run.samples
        i = j = t = 0
        while True:
            while i < len(events) and events[i][0] <= t:
                _, kind, name, quotas = events[i]
                if kind == "cohort":
                    self._cohort_quota(name, quotas)
                elif name in self.quota:
                    self._queue_quota(name, quotas)
                i += 1
            while j < len(samples) and samples[j].time_us <= t:
                s = samples[j]
                self._queue_usage(s.cluster_queue, s.usage)
                self._queue_counts(s.cluster_queue, s.pending, s.weighted_share if self.fair else 0)
                j += 1
            self._emit(t)
            self.last_us = t
            upcoming = [x[0] for x in events[i : i + 1]] + [x.time_us for x in samples[j : j + 1]]
            if not upcoming:
                return
            t = min(upcoming)

    # ---- series for the charts

    def index(self, res: str, what: str) -> int:
        return self.resources.index(res) * 5 + ("usage", "nominal", "within", "borrowed", "lent").index(what)

    @property
    def pending_index(self) -> int:
        return len(self.resources) * 5

    @property
    def share_index(self) -> int:
        return len(self.resources) * 5 + 1


def _append(points: list[tuple[int, tuple[float, ...]]], t: int, snap: tuple[float, ...]) -> None:
    if points and points[-1][1] == snap:
        return
    if points and points[-1][0] == t:
        points[-1] = (t, snap)
    else:
        points.append((t, snap))


def _order_resources(resources: set[str]) -> list[str]:
    first = [r for r in ("cpu", "memory", "nvidia.com/gpu", "pods") if r in resources]
    return first + sorted(resources - set(first))


def _top_cohorts(sweep: _Sweep, cohorts: list[str], end_us: int) -> list[str]:
    """At most ``MAX_SERIES`` cohorts, the busiest (peak usage of the first resource) first when trimmed."""
    if len(cohorts) <= MAX_SERIES:
        return cohorts

    def peak(c: str) -> float:
        return max((p[1][0] for p in sweep.cohorts[c].points), default=0)

    return sorted(sorted(cohorts, key=lambda c: (-peak(c), c))[:MAX_SERIES])


# ------------------------------------------------------------------------------------------ series


@dataclass
class _Series:
    x: list[float]
    ys: list[list[float]]
    resampled_bin_s: float | None


def _series(points: list[tuple[int, tuple[float, ...]]], idx: Sequence[int], end_us: int,
            scale: Sequence[float]) -> _Series:
    """Step series of some components of a point list, resampled when long; ends at ``end_us``."""
    ts: list[int] = []
    vals: list[tuple[float, ...]] = []
    for t, snap in points:
        v = tuple(snap[i] for i in idx)
        if vals and vals[-1] == v:
            continue
        ts.append(t)
        vals.append(v)
    if not ts:
        ts, vals = [0], [tuple(0.0 for _ in idx)]
    bin_s = None
    if len(ts) > MAX_POINTS and end_us > 0:
        ts_f, vals = _resample(ts, vals, end_us, MAX_POINTS)
        bin_s = end_us / MAX_POINTS / US
        x = [round(t / US, 6) for t in ts_f]
    else:
        x = [round(t / US, 6) for t in ts]
    last = vals[-1]
    if end_us / US > x[-1]:
        x.append(round(end_us / US, 6))
        vals.append(last)
    ys = [[_round(v[k] * scale[k]) for v in vals] for k in range(len(idx))]
    return _Series(x, ys, bin_s)


def _round(v: float) -> float:
    r = round(v, 3)
    return int(r) if r == int(r) else r


def _resample(ts: list[int], vals: list[tuple[float, ...]], end_us: int,
              nbins: int) -> tuple[list[float], list[tuple[float, ...]]]:
    """Time-weighted mean of a step function over ``nbins`` equal bins of [0, end_us]."""
    k = len(vals[0])
    width = end_us / nbins
    sums = [[0.0] * k for _ in range(nbins)]
    n = len(ts)
    for i in range(n):
        s = float(ts[i])
        e = float(ts[i + 1]) if i + 1 < n else float(end_us)
        e = min(e, float(end_us))
        if e <= s:
            continue
        v = vals[i]
        if not any(v):
            continue
        b = min(int(s / width), nbins - 1)
        while s < e and b < nbins:
            bin_end = (b + 1) * width if b < nbins - 1 else float(end_us)
            seg = min(e, bin_end) - s
            if seg > 0:
                row = sums[b]
                for c in range(k):
                    row[c] += v[c] * seg
                s += seg
            b += 1
    return [b * width for b in range(nbins)], [tuple(x / width for x in row) for row in sums]


def _scale(resource: str) -> tuple[float, str]:
    """Canonical units to display units: cpu milli-units to cores, byte quantities to GiB."""
    if resource == "cpu":
        return 1 / 1000, "cores"
    if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
        return 1 / 2**30, "GiB"
    return 1.0, ""


def _axis_label(resource: str) -> str:
    unit = _scale(resource)[1]
    return f"{resource} ({unit})" if unit else resource


def _color(i: int) -> str:
    return _PALETTE[i % len(_PALETTE)]


def _binned_note(series: Iterable[_Series]) -> str:
    bins = [s.resampled_bin_s for s in series if s.resampled_bin_s]
    return f" · time-weighted means over {max(bins):.3g} s bins" if bins else ""


# ------------------------------------------------------------------------------------------ figures

_USAGE_CAPTION = (
    "Quota in use per series over virtual time (solid), with its nominal quota (dashed, same colour). "
    "Click a legend entry to hide a series and its quota."
)
_BORROW_CAPTION = (
    "Per series: usage within nominal quota (blue), lent quota (green: nominal left unused while others "
    "in the cohort borrow, attributed proportionally), borrowed usage above nominal (red), nominal (dashed)."
)
_COHORT_CAPTION = "Sum of the usage of each cohort's queues (solid) and its total nominal quota (dashed)."
_TTA_CAPTION = (
    "Time from creation to first admission per workload class (the performance-scheduler-class label, "
    "else the cluster queue). Workloads never admitted are left out and counted in the table."
)
_PREEMPT_CAPTION = "Each Preempted event: y is the victim's cluster queue (or its series); hover for details."
_FAIR_CAPTION = "Weighted share (status.fairSharing.weightedShare) over time; the maximum within a group."

_TIME_AXIS = "virtual time (s)"


def _layout(fig: Any, title: str, height: int) -> None:
    fig.update_layout(
        title={"text": title, "x": 0.01, "xanchor": "left"},
        template="plotly_white",
        height=height,
        margin={"l": 70, "r": 20, "t": 70, "b": 50},
        hovermode="closest",
        legend={"font": {"size": 11}},
    )


def _usage_overview(sweep: _Sweep, end_us: int, kind: str) -> Any:
    from plotly.subplots import make_subplots

    resources = sweep.resources or ["cpu"]
    fig = make_subplots(rows=len(resources), cols=1, shared_xaxes=True, vertical_spacing=0.08,
                        subplot_titles=[_axis_label(r) for r in resources])
    made: list[_Series] = []
    for row, res in enumerate(resources, start=1):
        factor = _scale(res)[0]
        for i, (name, unit) in enumerate(sweep.units.items()):
            if not sweep.resources:
                break
            s = _series(unit.points, [sweep.index(res, "usage")], end_us, [factor])
            n = _series(unit.points, [sweep.index(res, "nominal")], end_us, [factor])
            made.append(s)
            _add_usage_and_nominal(fig, s, n, name, _color(i), row)
        fig.update_yaxes(title_text=_axis_label(res), rangemode="tozero", row=row, col=1)
    fig.update_xaxes(title_text=_TIME_AXIS, row=len(resources), col=1)
    _layout(fig, f"Usage over time per {kind} (dashed: nominal quota){_binned_note(made)}",
            120 + 380 * len(resources))
    return fig


def _borrow_lend(sweep: _Sweep, res: str, end_us: int, kind: str) -> Any:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    names = list(sweep.units)
    cols = 3 if len(names) > 4 else max(1, len(names))
    rows = max(1, math.ceil(len(names) / cols))
    fig = make_subplots(rows=rows, cols=cols, shared_xaxes=True, subplot_titles=names,
                        vertical_spacing=min(0.3 / rows, 0.08) if rows > 1 else 0.1, horizontal_spacing=0.05)
    factor = _scale(res)[0]
    idx = [sweep.index(res, w) for w in ("within", "lent", "borrowed")]
    made: list[_Series] = []
    for i, name in enumerate(names):
        unit = sweep.units[name]
        row, col = i // cols + 1, i % cols + 1
        s = _series(unit.points, idx, end_us, [factor] * 3)
        n = _series(unit.points, [sweep.index(res, "nominal")], end_us, [factor])
        made.append(s)
        stack = f"stack-{i}"
        for k, (label, color) in enumerate(
            (("used within nominal", _WITHIN), ("lent", _LENT), ("borrowed", _BORROWED))
        ):
            fig.add_trace(go.Scatter(x=s.x, y=s.ys[k], name=label, legendgroup=label, showlegend=i == 0,
                                     stackgroup=stack, mode="lines",
                                     line={"shape": "hv", "width": 0.5, "color": color},
                                     hovertemplate=f"{html.escape(name)}<br>%{{x}} s: %{{y}}<extra>{label}</extra>"),
                          row=row, col=col)
        fig.add_trace(go.Scatter(x=n.x, y=n.ys[0], name="nominal quota", legendgroup="nominal",
                                 showlegend=i == 0, mode="lines",
                                 line={"shape": "hv", "width": 1.2, "dash": "dash", "color": _NOMINAL},
                                 hovertemplate=f"{html.escape(name)}<br>%{{x}} s: %{{y}}<extra>nominal</extra>"),
                      row=row, col=col)
    fig.update_yaxes(rangemode="tozero")
    fig.update_annotations(font_size=11)
    for col in range(1, cols + 1):
        fig.update_xaxes(title_text=_TIME_AXIS, row=rows, col=col)
    height = 150 + 190 * rows
    _layout(fig, f"Borrowed and lent {_axis_label(res)} per {kind}{_binned_note(made)}", height)
    # A horizontal legend between the title and the first row of subplot titles.
    fig.update_layout(margin={"t": 100}, legend={"orientation": "h", "x": 1, "xanchor": "right",
                                                 "y": 1 + 30 / (height - 150), "yanchor": "bottom"})
    return fig


def _cohort_usage(sweep: _Sweep, cohorts: list[str], end_us: int) -> Any:
    from plotly.subplots import make_subplots

    resources = sweep.resources or ["cpu"]
    fig = make_subplots(rows=len(resources), cols=1, shared_xaxes=True, vertical_spacing=0.08,
                        subplot_titles=[_axis_label(r) for r in resources])
    made: list[_Series] = []
    for row, res in enumerate(resources, start=1):
        if not sweep.resources:
            break
        factor = _scale(res)[0]
        k = sweep.resources.index(res) * 2
        for i, name in enumerate(cohorts):
            acc = sweep.cohorts[name]
            s = _series(acc.points, [k], end_us, [factor])
            n = _series(acc.points, [k + 1], end_us, [factor])
            made.append(s)
            _add_usage_and_nominal(fig, s, n, name, _color(i), row)
        fig.update_yaxes(title_text=_axis_label(res), rangemode="tozero", row=row, col=1)
    fig.update_xaxes(title_text=_TIME_AXIS, row=len(resources), col=1)
    title = "Usage per cohort over time (dashed: total nominal quota)"
    if not cohorts:
        title += " · no cohorts in this run"
        fig.add_annotation(text="No cohorts", showarrow=False, xref="paper", yref="paper", x=0.5, y=0.5)
    _layout(fig, title + _binned_note(made), 120 + 340 * len(resources))
    return fig


@dataclass
class _Tta:
    by_class: dict[str, list[float]]
    not_admitted: Counter[str]


def _time_to_admission(run: Run, result: dict[str, Any], topo: _Topology) -> _Tta:
    """Seconds from createdAt to the first Admitted event, grouped by workload class."""
    labels = {sub.workload.key: sub.labels.get(CLASS_LABEL) for sub in run.inputs.workloads}
    first: dict[str, float] = {}
    for e in result["events"]:
        if e["type"] == ev.ADMITTED and e["workload"] not in first:
            first[e["workload"]] = e["time"]
    rows: list[tuple[str | None, str | None, float | None]] = []
    for w in result["workloads"]:
        key = f"{w['namespace']}/{w['name']}"
        at = first.get(key, w.get("admittedAt"))
        tta = None if at is None else max(0.0, at - w["createdAt"])
        rows.append((labels.get(key), w.get("clusterQueue"), tta))
    classes = {label or cq or "(no cluster queue)" for label, cq, _ in rows}
    if len(classes) > MAX_SERIES:  # one class per queue would be unreadable: fall back to the cohort

        def cls(label: str | None, cq: str | None) -> str:
            return label or (topo.cohort_of.get(cq) if cq else None) or NO_COHORT
    else:

        def cls(label: str | None, cq: str | None) -> str:
            return label or cq or "(no cluster queue)"

    by_class: dict[str, list[float]] = {}
    missing: Counter[str] = Counter()
    for label, cq, tta in rows:
        c = cls(label, cq)
        values = by_class.setdefault(c, [])
        if tta is None:
            missing[c] += 1
        else:
            values.append(tta)
    if len(by_class) > MAX_SERIES:
        keep = sorted(by_class, key=lambda c: (-len(by_class[c]), c))[: MAX_SERIES - 1]
        folded: dict[str, list[float]] = {c: by_class[c] for c in keep}
        other = folded.setdefault("(other)", [])
        for c in sorted(by_class):
            if c not in keep:
                other.extend(by_class[c])
                missing["(other)"] += missing.pop(c, 0)
        by_class = folded
    return _Tta({c: sorted(by_class[c]) for c in sorted(by_class)}, missing)


def _quantile(values: list[float], q: float) -> float:
    """Linear-interpolated quantile of sorted values (numpy's default)."""
    pos = (len(values) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (pos - lo)


def _tta_figure(tta: _Tta) -> Any:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=2, column_widths=[0.4, 0.6], horizontal_spacing=0.08,
                        subplot_titles=["box: quartiles, whiskers min–max, dashed mean", "histogram"])
    top = max((v[-1] for v in tta.by_class.values() if v), default=0.0)
    width = top / HIST_BINS if top > 0 else 1.0
    many = len(tta.by_class) > 6
    for i, (name, values) in enumerate(tta.by_class.items()):
        if not values:
            continue
        color = _color(i)
        fig.add_trace(go.Box(x=[name], q1=[_round(_quantile(values, 0.25))], median=[_round(_quantile(values, 0.5))],
                             q3=[_round(_quantile(values, 0.75))], lowerfence=[_round(values[0])],
                             upperfence=[_round(values[-1])], mean=[_round(sum(values) / len(values))],
                             name=name, legendgroup=name, marker_color=color, boxmean=True),
                      row=1, col=1)
        counts = [0] * HIST_BINS
        for v in values:
            counts[min(int(v / width), HIST_BINS - 1)] += 1
        centers = [_round((b + 0.5) * width) for b in range(HIST_BINS)]
        if many:
            fig.add_trace(go.Scatter(x=centers, y=counts, name=name, legendgroup=name, showlegend=False,
                                     mode="lines", line={"shape": "hvh", "color": color}), row=1, col=2)
        else:
            fig.add_trace(go.Bar(x=centers, y=counts, width=width, name=name, legendgroup=name,
                                 showlegend=False, marker_color=color, opacity=0.6), row=1, col=2)
    if not any(tta.by_class.values()):
        fig.add_annotation(text="No workload was admitted", showarrow=False, xref="paper", yref="paper",
                           x=0.5, y=0.5)
    fig.update_yaxes(title_text="seconds to admission", rangemode="tozero", row=1, col=1)
    fig.update_xaxes(title_text="seconds to admission", row=1, col=2)
    fig.update_yaxes(title_text="workloads", row=1, col=2)
    _layout(fig, "Time to admission per workload class", 480)
    fig.update_layout(barmode="overlay", bargap=0)
    return fig


def _tta_table(tta: _Tta) -> str:
    head = "<tr><th>class</th><th>admitted</th><th>never admitted</th><th>mean s</th><th>p50 s</th>" \
           "<th>p95 s</th><th>max s</th></tr>"
    rows = []
    for name, values in tta.by_class.items():
        if values:
            stats = [sum(values) / len(values), _quantile(values, 0.5), _quantile(values, 0.95), values[-1]]
            cells = "".join(f"<td>{_round(s)}</td>" for s in stats)
        else:
            cells = "<td>-</td>" * 4
        rows.append(f"<tr><td>{html.escape(name)}</td><td>{len(values)}</td>"
                    f"<td>{tta.not_admitted.get(name, 0)}</td>{cells}</tr>")
    return f'<table class="stats">{head}{"".join(rows)}</table>'


def _add_usage_and_nominal(fig: Any, usage: _Series, nominal: _Series, name: str, color: str, row: int) -> None:
    """A series' usage (solid) and its nominal quota (dashed, same colour, one legend entry for both)."""
    import plotly.graph_objects as go

    fig.add_trace(go.Scatter(x=usage.x, y=usage.ys[0], name=name, legendgroup=name, showlegend=row == 1,
                             mode="lines", line={"shape": "hv", "width": 1.5, "color": color},
                             hovertemplate=f"{html.escape(name)}<br>%{{x}} s: %{{y}}<extra>usage</extra>"),
                  row=row, col=1)
    fig.add_trace(go.Scatter(x=nominal.x, y=nominal.ys[0], name=f"{name} nominal", legendgroup=name,
                             showlegend=False, mode="lines",
                             line={"shape": "hv", "width": 1, "dash": "dash", "color": color},
                             hovertemplate=f"{html.escape(name)}<br>%{{x}} s: %{{y}}<extra>nominal</extra>"),
                  row=row, col=1)


def _pending(sweep: _Sweep, end_us: int, kind: str) -> Any:
    return _step_lines(sweep, end_us, sweep.pending_index, "pending", "pending workloads",
                       f"Pending workloads over time per {kind}")


def _step_lines(sweep: _Sweep, end_us: int, index: int, what: str, y_title: str, title: str) -> Any:
    """One step line per series for one sampled quantity (pending counts, shares)."""
    import plotly.graph_objects as go

    fig = go.Figure()
    made: list[_Series] = []
    for i, (name, unit) in enumerate(sweep.units.items()):
        s = _series(unit.points, [index], end_us, [1.0])
        made.append(s)
        fig.add_trace(go.Scatter(x=s.x, y=s.ys[0], name=name, mode="lines",
                                 line={"shape": "hv", "width": 1.5, "color": _color(i)},
                                 hovertemplate=f"{html.escape(name)}<br>%{{x}} s: %{{y}}<extra>{what}</extra>"))
    fig.update_xaxes(title_text=_TIME_AXIS)
    fig.update_yaxes(title_text=y_title, rangemode="tozero")
    _layout(fig, f"{title}{_binned_note(made)}", 480)
    return fig


def _preemptions(result: dict[str, Any], sweep: _Sweep, end_us: int, kind: str) -> Any:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    events = [e for e in result["events"] if e["type"] == ev.PREEMPTED]
    stride = max(1, math.ceil(len(events) / MAX_MARKERS))
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.3, 0.7], vertical_spacing=0.06)
    reasons = sorted({e.get("reason") or "(none)" for e in events})
    end_s = max(end_us / US, max((e["time"] for e in events), default=0.0))
    nbins = 100
    width = end_s / nbins if end_s > 0 else 1.0
    order = list(sweep.units)
    for i, reason in enumerate(reasons):
        mine = [e for e in events if (e.get("reason") or "(none)") == reason]
        color = _REASON_COLORS.get(reason, _color(i))
        counts = [0] * nbins
        for e in mine:
            counts[min(int(e["time"] / width), nbins - 1)] += 1
        fig.add_trace(go.Bar(x=[_round((b + 0.5) * width) for b in range(nbins)], y=counts, width=width,
                             name=reason, legendgroup=reason, showlegend=False, marker_color=color,
                             hovertemplate="%{x} s: %{y}<extra>" + html.escape(reason) + "</extra>"),
                      row=1, col=1)
        shown = mine[::stride]
        fig.add_trace(go.Scatter(
            x=[e["time"] for e in shown],
            y=[sweep.unit_of.get(e.get("clusterQueue") or "", e.get("clusterQueue") or "?") for e in shown],
            customdata=[[e["workload"], e.get("by") or "", reason, e.get("clusterQueue") or ""] for e in shown],
            name=reason, legendgroup=reason, mode="markers",
            marker={"color": color, "size": 7, "symbol": "x", "opacity": 0.75},
            hovertemplate="victim %{customdata[0]} (%{customdata[3]})<br>by %{customdata[1]}"
                          "<br>%{customdata[2]} at %{x} s<extra></extra>",
        ), row=2, col=1)
    fig.update_layout(barmode="stack", bargap=0)
    fig.update_yaxes(title_text=f"per {width:.3g} s", row=1, col=1)
    fig.update_yaxes(title_text=f"victim's {kind}", type="category", categoryorder="array",
                     categoryarray=order, range=[-0.5, len(order) - 0.5], row=2, col=1)
    fig.update_xaxes(title_text=_TIME_AXIS, range=[0, end_s if end_s > 0 else 1], row=2, col=1)
    title = f"Preemptions on the timeline ({len(events)} in all)"
    if stride > 1:
        title += f" · every {stride}th marker drawn"
    if not events:
        fig.add_annotation(text="No preemptions", showarrow=False, xref="paper", yref="paper", x=0.5, y=0.5)
    _layout(fig, title, 260 + max(240, 22 * len(order)))
    return fig


def _fair_shares(sweep: _Sweep, end_us: int, kind: str) -> Any:
    return _step_lines(sweep, end_us, sweep.share_index, "share", "weighted share",
                       f"Fair sharing: weighted share over time per {kind}")


# ------------------------------------------------------------------------------------------- header


def _header(run: Run, result: dict[str, Any], topo: _Topology, kind: str, sweep: _Sweep) -> str:
    states = Counter(w["state"] for w in result["workloads"])
    types = Counter(e["type"] for e in result["events"])
    files = sorted({sub.source.file for sub in run.inputs.workloads} | {c.source.file for c in run.inputs.changes})
    facts = [
        ("end time", f"{result.get('endTime') or 0:g} s"),
        ("workloads", str(len(result["workloads"]))),
        *((f"· {state}", str(n)) for state, n in sorted(states.items())),
        ("preemptions", str(types.get(ev.PREEMPTED, 0))),
        ("evictions", str(types.get(ev.EVICTED, 0))),
        ("cluster queues", str(len(topo.queues))),
        ("cohorts", str(len(topo.all_cohorts))),
        ("fair sharing", "on" if run.engine.config.fair_sharing.enable else "off"),
    ]
    rows = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in facts)
    notes = []
    if kind != "cluster queue":
        notes.append(f"{len(topo.queues)} cluster queues are drawn as {len(sweep.units)} series, one per "
                     f"{kind} (sums of their queues).")
    if not run.samples:
        notes.append("No usage samples: run the simulation with record_usage=True for usage charts.")
    if files:
        shown = ", ".join(html.escape(f) for f in files[:5]) + (" …" if len(files) > 5 else "")
        notes.append(f"Inputs: {shown}")
    note_html = "".join(f"<p class='note'>{n}</p>" for n in notes)
    return f"<h1>pykueue simulation report</h1><table class='facts'>{rows}</table>{note_html}"


_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>pykueue simulation report</title>
<style>
body {{ font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 24px 32px; color: #222; }}
h1 {{ font-size: 22px; margin: 0 0 12px; }}
table.facts, table.stats {{ border-collapse: collapse; font-size: 13px; margin: 6px 0 14px; }}
table.facts th, table.facts td, table.stats th, table.stats td {{ padding: 2px 10px; text-align: left;
  border-bottom: 1px solid #e5e5e5; }}
table.facts th {{ font-weight: 600; color: #555; }}
p.note, p.caption {{ font-size: 13px; color: #555; margin: 4px 0; }}
p.caption {{ margin-top: 28px; }}
</style>
</head>
<body>
{body}
</body>
</html>
"""
