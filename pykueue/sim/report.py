"""The ``pykueue simulate --report FILE.html`` page: one self-contained HTML file of plotly charts.

The page must open offline (plotly.js is embedded once, inline) and be byte-identical for the same run
(explicit div ids, no wall-clock time, deterministic iteration and float arithmetic). What a reader needs
comes first, in plain HTML: the range spec's verdict, the summary, the input files. Then the charts:
usage per cluster queue per flavor and resource against nominal quota, a per-workload timeline, pending
workloads by reason, borrowing and lending, cohorts, time to admission, preemptions.

A cluster queue has one colour, the same in every chart. Queues of one performance class (the
``kueue.x-k8s.io/performance-scheduler-class`` label, which upstream's generator puts on identical
queues) are drawn as one series per class. Large runs (a thousand queues, tens of thousands of workloads)
are reduced before plotting: other queues are grouped into at most ``MAX_SERIES`` series (by cohort,
then coarser), any series longer than ``MAX_POINTS`` is resampled to time-weighted means over equal bins,
and the timeline draws at most ``MAX_GANTT_ROWS`` workloads, so the file stays a few MB.

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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pykueue.engine import events as ev
from pykueue.engine import model
from pykueue.engine.quota import FR
from pykueue.sim import report_header as header
from pykueue.sim import report_timeline as timeline
from pykueue.sim.report_plot import (
    CATEGORY_PALETTE,
    MAX_POINTS,
    TIME_AXIS,
    Colors,
    Series,
    axis_label,
    binned_note,
    integer_ticks,
    layout,
    no_data,
    rgba,
    round3,
    scale,
    series,
)
from pykueue.sim.report_timeline import MAX_GANTT_ROWS
from pykueue.sim.simulator import US, Run, to_us

CLASS_LABEL = "kueue.x-k8s.io/performance-scheduler-class"
MAX_SERIES = 30  # lines per chart before queues are grouped
MAX_MARKERS = 20_000  # preemption markers drawn (all are counted)
HIST_BINS = 40
MAX_USAGE_PANELS = 60  # series x flavor/resource panels in the usage chart
MAX_USAGE_COLS = 4
MAX_BORROW_CHARTS = 4  # flavor/resource pairs that get a borrowed-and-lent chart
MAX_COHORT_ROWS = 8  # flavor/resource pairs in the cohort chart
NO_COHORT = "(no cohort)"

# Preemption reasons and cohorts in dark tones of their own, never a queue's colour.
_REASON_COLORS = {
    "InClusterQueue": "#7b241c",
    "InCohortReclamation": "#1b4f72",
    "InCohortFairSharing": "#4a235a",
    "InCohortReclaimWhileBorrowing": "#7e5109",
}
_COHORT_PALETTE = ("#34495e", "#7f8c8d", "#0e6655", "#6e2c00", "#512e5f", "#1a5276", "#7d6608", "#641e16")
_WITHIN, _LENT, _BORROWED, _NOMINAL = "#4c78a8", "#54a24b", "#e45756", "#222222"

__all__ = ["CLASS_LABEL", "MAX_GANTT_ROWS", "MAX_POINTS", "MAX_SERIES", "queue_classes_from_manifests",
           "render_report", "write_atomically", "write_report"]


def write_report(run: Run, result: dict[str, Any], path: str, *, inputs: Sequence[str] | None = None,
                 rangespec: str | None = None, verdict: Sequence[str] | None = None,
                 queue_classes: Mapping[str, str] | None = None, stopped: str | None = None) -> None:
    """Write the report for ``run`` (and its ``build_result`` document) to ``path``.

    ``inputs``: the paths the run read, as given (directories are listed file by file); without it the
    files the workloads came from. ``rangespec``: the range spec file of a generator run, checked here
    against ``result["summary"]`` unless ``verdict`` (the failure lines of ``rangespec.check``, empty
    when it passed) is given. ``queue_classes``: cluster queue -> performance class, for queues whose
    labels the engine's model does not keep (``queue_classes_from_manifests`` builds it). ``stopped``:
    why the simulation stopped early (an ``EngineError``); the page says so first and checks no range.
    """
    page = render_report(run, result, inputs=inputs, rangespec=rangespec, verdict=verdict,
                         queue_classes=queue_classes, stopped=stopped)
    write_atomically(path, page)


def queue_classes_from_manifests(manifests: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Cluster queue name -> its ``kueue.x-k8s.io/performance-scheduler-class`` label."""
    out: dict[str, str] = {}
    for m in manifests:
        if m.get("kind") == "ClusterQueue":
            meta = m.get("metadata") or {}
            label = (meta.get("labels") or {}).get(CLASS_LABEL)
            if isinstance(meta.get("name"), str) and isinstance(label, str) and label:
                out[meta["name"]] = label
    return out


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


@dataclass
class _Section:
    div_id: str
    heading: str
    caption: str
    content: Any  # a plotly figure, or HTML
    after: str = ""  # HTML under the figure


def render_report(run: Run, result: dict[str, Any], *, inputs: Sequence[str] | None = None,
                  rangespec: str | None = None, verdict: Sequence[str] | None = None,
                  queue_classes: Mapping[str, str] | None = None, stopped: str | None = None) -> str:
    """The whole HTML page as a string (what ``write_report`` writes)."""
    try:
        import plotly.io as pio
    except ImportError as e:  # plotly is the optional "report" extra
        raise RuntimeError("the HTML report needs plotly: pip install 'pykueue[report]'") from e

    topo = _Topology.of(run, queue_classes)
    units, unit_kind = _choose_units(topo)
    cohorts = _choose_cohorts(topo)
    sweep = _Sweep(run, topo, units, cohorts)
    sweep.replay()
    end_us = max(run.end_us, sweep.last_us)
    end_s = end_us / US
    cohort_series = _top_cohorts(sweep, cohorts, end_us)
    colors = Colors(sweep.units, units)

    timelines = timeline.build_timelines(run, result, end_s)
    choice = timeline.choose(timelines, topo.queues)
    reasons_fig, reasons_caption = timeline.reasons_figure(run, timelines, end_s)

    fair = run.engine.config.fair_sharing.enable
    sections = [
        _Section("usage", "Usage per flavor", _USAGE_CAPTION, _usage_per_flavor(sweep, end_us, unit_kind, colors)),
        _Section("timeline", "Workloads", _TIMELINE_CAPTION,
                 timeline.gantt_figure(choice, colors, end_s, len(timelines)),
                 f"<p class='note'>{timeline.left_out_note(choice)}</p>" if choice.left_out else ""),
        _Section("pending-reasons", "Pending", reasons_caption, reasons_fig),
        _Section("pending", "", _PENDING_CAPTION, _pending(sweep, end_us, unit_kind, colors)),
    ]
    for i, fr in enumerate(sweep.frs[:MAX_BORROW_CHARTS]):
        sections.append(_Section(f"borrow-lend-{i}", "Borrowing and lending" if i == 0 else "", _BORROW_CAPTION if i == 0 else "",
                                 _borrow_lend(sweep, fr, end_us, unit_kind, colors)))
    sections.append(_Section("cohorts", "Cohorts", _COHORT_CAPTION, _cohort_usage(sweep, cohort_series, end_us)))
    tta = _time_to_admission(run, result, topo)
    sections.append(_Section("time-to-admission", "Time to admission", _TTA_CAPTION, _tta_figure(tta, colors),
                             _tta_table(tta)))
    sections.append(_Section("preemptions", "Preemptions", _PREEMPT_CAPTION,
                             _preemptions(result, sweep, end_us, unit_kind, colors)))
    if fair:
        sections.append(_Section("fair-sharing", "Fair sharing", _FAIR_CAPTION,
                                 _fair_shares(sweep, end_us, unit_kind, colors)))
    sections.append(_Section("not-admitted", "Workloads without quota at the end", _NOT_ADMITTED_CAPTION,
                             header.not_admitted_html(result)))

    files = header.input_files(inputs, _fallback_files(run))
    body: list[str] = [
        "<h1>pykueue simulation report</h1>",
        header.stopped_html(stopped),
        header.verdict_html(result, rangespec, verdict, stopped),
        "<div class='top'>",
        header.facts_html(result, len(topo.queues), len(topo.all_cohorts), fair),
        header.summary_html(result.get("summary") or {}),
        "</div>",
        header.inputs_html(files),
        _notes(run, topo, unit_kind, sweep),
        "<nav>" + " · ".join(f"<a href='#{s.div_id}'>{html.escape(s.heading)}</a>" for s in sections if s.heading)
        + "</nav>",
    ]
    first = True
    for s in sections:
        body.append(f'<section id="{s.div_id}">')
        if s.heading:
            body.append(f"<h2>{html.escape(s.heading)}</h2>")
        if s.caption:
            body.append(f'<p class="caption">{html.escape(s.caption)}</p>')
        if isinstance(s.content, str):
            body.append(s.content)
        else:
            body.append(
                pio.to_html(
                    s.content,
                    full_html=False,
                    include_plotlyjs=first,  # the bundle goes inline once: the page opens offline
                    div_id=f"fig-{s.div_id}",
                    config={"displaylogo": False, "responsive": True},
                    default_height=f"{s.content.layout.height or 450}px",
                )
            )
            first = False
        body.append(s.after)
        body.append("</section>")
    return _PAGE.format(body="\n".join(part for part in body if part))


def _fallback_files(run: Run) -> list[str]:
    return [sub.source.file for sub in run.inputs.workloads] + [c.source.file for c in run.inputs.changes]


def _notes(run: Run, topo: _Topology, kind: str, sweep: _Sweep) -> str:
    notes = []
    if kind != "cluster queue":
        notes.append(f"{len(topo.queues)} cluster queues are drawn as {len(sweep.units)} series, one per "
                     f"{kind} (sums of their queues).")
    if not run.samples:
        notes.append("No usage samples: run the simulation with record_usage=True for usage charts.")
    return "".join(f"<p class='note'>{html.escape(n)}</p>" for n in notes)


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
    def of(run: Run, queue_classes: Mapping[str, str] | None = None) -> _Topology:
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
        for name in engine.cluster_queue_names():
            cqs = engine.cluster_queue_status(name)
            assert cqs is not None
            if name not in cohort_of:
                add(0, "cq", name, _quotas(cqs.spec.resource_groups))
            see_cq(cqs.spec)
        for name in engine.cohort_names():
            cs = engine.cohort_status(name)
            assert cs is not None
            parent_of[name] = cs.spec.parent
        for s in run.samples:
            cohort_of.setdefault(s.cluster_queue, None)
        for c in list(cohort_of.values()):
            if c is not None:
                parent_of.setdefault(c, None)
        for p in list(parent_of.values()):
            if p is not None:
                parent_of.setdefault(p, None)
        for name, cls in (queue_classes or {}).items():
            if name in cohort_of and cls:
                class_of[name] = cls
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
    """Map each queue to the series it is drawn in: one per performance class when queues carry one
    (upstream's generator makes tens of identical queues per class), else itself when few, else the
    finest grouping that fits."""
    qs = topo.queues
    if topo.class_of:
        by_class = {q: topo.class_of.get(q, q) for q in qs}
        groups = len(set(by_class.values()))
        if groups < len(qs) and groups <= MAX_SERIES:
            return by_class, "queue class"
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
        seen: dict[FR, None] = {}
        for _, _, _, q in topo.quota_events:
            seen.update(dict.fromkeys(q))
        for sample in run.samples:
            seen.update(dict.fromkeys(sorted(sample.usage)))
        self.frs = _order_frs(list(seen))
        self._fr_index = {fr: i for i, fr in enumerate(self.frs)}
        self.members = Counter(units.values())
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
            for fr in self.frs:
                snap.append(unit.usage.get(fr, 0))
                snap.append(unit.nominal.get(fr, 0))
                snap.append(unit.within.get(fr, 0))
                snap.append(unit.borrowed.get(fr, 0))
                snap.append(max(0.0, round(unit.lent.get(fr, 0.0), 3)))
            snap.append(unit.pending)
            snap.append(unit.share_max)
            _append(unit.points, t, tuple(snap))
        self.dirty_units.clear()
        for name in sorted(self.dirty_cohorts):
            acc = self.cohorts[name]
            snap = []
            for fr in self.frs:
                snap.append(acc.usage.get(fr, 0))
                snap.append(acc.nominal.get(fr, 0))
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

    def index(self, fr: FR, what: str) -> int:
        """Where one flavor/resource's figure sits in a series' snapshot."""
        return self._fr_index[fr] * 5 + _WHAT[what]

    def cohort_index(self, fr: FR) -> int:
        """Where one flavor/resource's usage sits in a cohort's snapshot (its nominal quota follows)."""
        return self._fr_index[fr] * 2

    @property
    def pending_index(self) -> int:
        return len(self.frs) * 5

    @property
    def share_index(self) -> int:
        return len(self.frs) * 5 + 1


_WHAT = {"usage": 0, "nominal": 1, "within": 2, "borrowed": 3, "lent": 4}


def _append(points: list[tuple[int, tuple[float, ...]]], t: int, snap: tuple[float, ...]) -> None:
    if points and points[-1][1] == snap:
        return
    if points and points[-1][0] == t:
        points[-1] = (t, snap)
    else:
        points.append((t, snap))


def _order_frs(frs: list[FR]) -> list[FR]:
    """Flavors in the order the queues list them (preference order), resources the usual way within."""
    flavor_rank: dict[str, int] = {}
    for f, _ in frs:
        flavor_rank.setdefault(f, len(flavor_rank))
    usual = {r: i for i, r in enumerate(("cpu", "memory", "nvidia.com/gpu", "pods"))}
    return sorted(set(frs), key=lambda fr: (flavor_rank[fr[0]], usual.get(fr[1], len(usual)), fr[1]))


def _top_cohorts(sweep: _Sweep, cohorts: list[str], end_us: int) -> list[str]:
    """At most ``MAX_SERIES`` cohorts, the busiest (peak usage of the first resource) first when trimmed."""
    if len(cohorts) <= MAX_SERIES:
        return cohorts

    def peak(c: str) -> float:
        return max((p[1][0] for p in sweep.cohorts[c].points if p[1]), default=0)

    return sorted(sorted(cohorts, key=lambda c: (-peak(c), c))[:MAX_SERIES])


# ------------------------------------------------------------------------------------------ figures

_USAGE_CAPTION = (
    "Quota in use over virtual time (solid, filled) against the nominal quota (dashed), one panel per cluster "
    "queue (or group of queues) and flavor/resource: flavors are never summed. A queue has the same colour in "
    "every chart. Usage above the dashed line is borrowed from the cohort."
)
_TIMELINE_CAPTION = (
    "Each workload from its arrival to the end of the run, coloured by state; red crosses are evictions "
    "(hover for the reason and the preemptor). Row labels take their cluster queue's colour."
)
_PENDING_CAPTION = "Pending workloads per series, as the cluster queues counted them after every instant."
_BORROW_CAPTION = (
    "Per series and flavor/resource: usage within nominal quota (blue), lent quota (green: nominal left "
    "unused while others in the cohort borrow, attributed proportionally), borrowed usage above nominal "
    "(red), nominal (dashed)."
)
_COHORT_CAPTION = "Sum of the usage of each cohort's queues (solid) and its total nominal quota (dashed), per flavor."
_TTA_CAPTION = (
    "Time from creation to first admission per workload class (the performance-scheduler-class label, "
    "else the cluster queue). Workloads never admitted are left out and counted in the table."
)
_PREEMPT_CAPTION = "Each Preempted event: y is the victim's cluster queue (or its series); hover for details."
_FAIR_CAPTION = "Weighted share (status.fairSharing.weightedShare) over time; the maximum within a group."
_NOT_ADMITTED_CAPTION = "Upstream's reason and message of the QuotaReserved=False condition, at the end of the run."


def _fr_label(fr: FR) -> str:
    return f"{fr[0]} · {axis_label(fr[1])}"


def _unit_label(sweep: _Sweep, name: str, kind: str) -> str:
    n = sweep.members.get(name, 0)
    return f"{name} ({n} queues)" if kind != "cluster queue" and n > 1 else name


def _used_frs(sweep: _Sweep, unit: _Unit) -> list[FR]:
    """The flavor/resource pairs a series ever had quota or usage in."""
    out = []
    for fr in sweep.frs:
        u, n = sweep.index(fr, "usage"), sweep.index(fr, "nominal")
        if any(snap[u] or snap[n] for _, snap in unit.points):
            out.append(fr)
    return out


def _usage_per_flavor(sweep: _Sweep, end_us: int, kind: str, colors: Colors) -> Any:
    """One panel per series and flavor/resource: usage against nominal quota, in the series' colour."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    cells_of = {name: _used_frs(sweep, unit) for name, unit in sweep.units.items()}
    cols = max(1, min(MAX_USAGE_COLS, max((len(v) for v in cells_of.values()), default=1)))
    grid: list[list[tuple[str, FR] | None]] = []
    drawn = left = 0
    for name, frs in cells_of.items():
        for start in range(0, len(frs), cols):
            chunk = frs[start:start + cols]
            if drawn + len(chunk) > MAX_USAGE_PANELS:
                left += len(chunk)
                continue
            grid.append([(name, fr) for fr in chunk] + [None] * (cols - len(chunk)))
            drawn += len(chunk)
    rows = max(1, len(grid))
    cells = [c for row in grid for c in row if c is not None]
    height = 110 + 230 * rows
    spacing = min(0.9 / max(1, rows - 1), 60 / height) if rows > 1 else 0.1
    fig = make_subplots(
        rows=rows, cols=cols, vertical_spacing=spacing, horizontal_spacing=0.06 if cols > 1 else 0.02,
        specs=[[{} if c is not None else None for c in row] for row in grid] or [[{}] * cols],
        subplot_titles=[f"{_unit_label(sweep, n, kind)} · {_fr_label(fr)}" for n, fr in cells] or None,
    )
    end_s = end_us / US
    shown: set[str] = set()
    made: list[Series] = []
    for r, row in enumerate(grid, start=1):
        for c, cell in enumerate(row, start=1):
            if cell is None:
                continue
            name, fr = cell
            unit = sweep.units[name]
            factor = scale(fr[1])[0]
            s = series(unit.points, [sweep.index(fr, "usage")], end_us, [factor])
            n = series(unit.points, [sweep.index(fr, "nominal")], end_us, [factor])
            made.append(s)
            color = colors.series(name)
            meta = {"series": name, "flavor": fr[0], "resource": fr[1]}
            tag = f"{html.escape(name)} · {html.escape(fr[0])} · {html.escape(fr[1])}"
            fig.add_trace(go.Scatter(x=s.x, y=s.ys[0], name=name, legendgroup=name, showlegend=name not in shown,
                                     mode="lines", fill="tozeroy", fillcolor=rgba(color, 0.15), meta=meta,
                                     line={"shape": "hv", "width": 1.6, "color": color},
                                     hovertemplate=f"{tag}<br>%{{x}} s: %{{y}}<extra>usage</extra>"),
                          row=r, col=c)
            fig.add_trace(go.Scatter(x=n.x, y=n.ys[0], name="nominal quota", legendgroup="nominal",
                                     showlegend=not shown, mode="lines", meta={**meta, "nominal": True},
                                     line={"shape": "hv", "width": 1.2, "dash": "dash", "color": _NOMINAL},
                                     hovertemplate=f"{tag}<br>%{{x}} s: %{{y}}<extra>nominal</extra>"),
                          row=r, col=c)
            shown.add(name)
            fig.update_yaxes(title_text=axis_label(fr[1]) if c == 1 else None, rangemode="tozero", row=r, col=c)
            fig.update_xaxes(range=[0, end_s if end_s > 0 else 1], row=r, col=c)
    # Panel titles in their series' colour, like the series' lines.
    for annotation, (name, _) in zip(fig.layout.annotations, cells, strict=False):
        annotation.font = {"size": 12, "color": colors.series(name)}
    for c in range(1, cols + 1):
        fig.update_xaxes(title_text=TIME_AXIS, row=rows, col=c)
    title = f"Usage per {kind} and flavor (dashed: nominal quota)"
    if left:
        title += f" · {left} more panels not drawn"
    if not cells:
        no_data(fig, "No quota and no usage")
    layout(fig, title + binned_note(made), height)
    return fig


def _borrow_lend(sweep: _Sweep, fr: FR, end_us: int, kind: str, colors: Colors) -> Any:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    names = list(sweep.units)
    cols = 3 if len(names) > 4 else max(1, len(names))
    rows = max(1, math.ceil(len(names) / cols))
    fig = make_subplots(rows=rows, cols=cols, shared_xaxes=True,
                        subplot_titles=[_unit_label(sweep, n, kind) for n in names],
                        vertical_spacing=min(0.3 / rows, 0.08) if rows > 1 else 0.1, horizontal_spacing=0.05)
    factor = scale(fr[1])[0]
    idx = [sweep.index(fr, w) for w in ("within", "lent", "borrowed")]
    made: list[Series] = []
    for i, name in enumerate(names):
        unit = sweep.units[name]
        row, col = i // cols + 1, i % cols + 1
        s = series(unit.points, idx, end_us, [factor] * 3)
        n = series(unit.points, [sweep.index(fr, "nominal")], end_us, [factor])
        made.append(s)
        stack = f"stack-{i}"
        for k, (label, color) in enumerate(
            (("used within nominal", _WITHIN), ("lent", _LENT), ("borrowed", _BORROWED))
        ):
            fig.add_trace(go.Scatter(x=s.x, y=s.ys[k], name=label, legendgroup=label, showlegend=i == 0,
                                     stackgroup=stack, mode="lines", meta={"series": name},
                                     line={"shape": "hv", "width": 0.5, "color": color},
                                     hovertemplate=f"{html.escape(name)}<br>%{{x}} s: %{{y}}<extra>{label}</extra>"),
                          row=row, col=col)
        fig.add_trace(go.Scatter(x=n.x, y=n.ys[0], name="nominal quota", legendgroup="nominal",
                                 showlegend=i == 0, mode="lines", meta={"series": name, "nominal": True},
                                 line={"shape": "hv", "width": 1.2, "dash": "dash", "color": _NOMINAL},
                                 hovertemplate=f"{html.escape(name)}<br>%{{x}} s: %{{y}}<extra>nominal</extra>"),
                      row=row, col=col)
    for annotation, name in zip(fig.layout.annotations, names, strict=False):
        annotation.font = {"size": 11, "color": colors.series(name)}
    fig.update_yaxes(rangemode="tozero")
    for col in range(1, cols + 1):
        fig.update_xaxes(title_text=TIME_AXIS, row=rows, col=col)
    height = 150 + 190 * rows
    layout(fig, f"Borrowed and lent {_fr_label(fr)} per {kind}{binned_note(made)}", height)
    # A horizontal legend between the title and the first row of subplot titles.
    fig.update_layout(margin={"t": 100}, legend={"orientation": "h", "x": 1, "xanchor": "right",
                                                 "y": 1 + 30 / (height - 150), "yanchor": "bottom"})
    return fig


def _cohort_usage(sweep: _Sweep, cohorts: list[str], end_us: int) -> Any:
    from plotly.subplots import make_subplots

    frs = sweep.frs[:MAX_COHORT_ROWS] or [("", "cpu")]
    fig = make_subplots(rows=len(frs), cols=1, shared_xaxes=True, vertical_spacing=min(0.08, 0.5 / len(frs)),
                        subplot_titles=[_fr_label(fr) if fr[0] else "" for fr in frs])
    made: list[Series] = []
    for row, fr in enumerate(frs, start=1):
        if not sweep.frs:
            break
        factor = scale(fr[1])[0]
        k = sweep.cohort_index(fr)
        for i, name in enumerate(cohorts):
            acc = sweep.cohorts[name]
            s = series(acc.points, [k], end_us, [factor])
            n = series(acc.points, [k + 1], end_us, [factor])
            made.append(s)
            _add_usage_and_nominal(fig, s, n, name, _COHORT_PALETTE[i % len(_COHORT_PALETTE)], row)
        fig.update_yaxes(title_text=axis_label(fr[1]), rangemode="tozero", row=row, col=1)
    fig.update_xaxes(title_text=TIME_AXIS, row=len(frs), col=1)
    title = "Usage per cohort over time (dashed: total nominal quota)"
    if len(sweep.frs) > len(frs):
        title += f" · {len(sweep.frs) - len(frs)} more flavor/resource pairs not drawn"
    if not cohorts:
        title += " · no cohorts in this run"
        no_data(fig, "No cohorts")
    layout(fig, title + binned_note(made), 120 + 260 * len(frs))
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


def _tta_figure(tta: _Tta, colors: Colors) -> Any:
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
        # a class named after a series (unlabelled workloads fall back to their queue) takes its colour
        color = colors.of_series.get(name) or CATEGORY_PALETTE[i % len(CATEGORY_PALETTE)]
        fig.add_trace(go.Box(x=[name], q1=[round3(_quantile(values, 0.25))], median=[round3(_quantile(values, 0.5))],
                             q3=[round3(_quantile(values, 0.75))], lowerfence=[round3(values[0])],
                             upperfence=[round3(values[-1])], mean=[round3(sum(values) / len(values))],
                             name=name, legendgroup=name, marker_color=color, boxmean=True),
                      row=1, col=1)
        counts = [0] * HIST_BINS
        for v in values:
            counts[min(int(v / width), HIST_BINS - 1)] += 1
        centers = [round3((b + 0.5) * width) for b in range(HIST_BINS)]
        if many:
            fig.add_trace(go.Scatter(x=centers, y=counts, name=name, legendgroup=name, showlegend=False,
                                     mode="lines", line={"shape": "hvh", "color": color}), row=1, col=2)
        else:
            fig.add_trace(go.Bar(x=centers, y=counts, width=width, name=name, legendgroup=name,
                                 showlegend=False, marker_color=color, opacity=0.6), row=1, col=2)
    if not any(tta.by_class.values()):
        no_data(fig, "No workload was admitted")
    fig.update_yaxes(title_text="seconds to admission", rangemode="tozero", row=1, col=1)
    fig.update_xaxes(title_text="seconds to admission", row=1, col=2)
    fig.update_yaxes(title_text="workloads", row=1, col=2)
    layout(fig, "Time to admission per workload class", 480)
    fig.update_layout(barmode="overlay", bargap=0)
    return fig


def _tta_table(tta: _Tta) -> str:
    head = "<tr><th>class</th><th>admitted</th><th>never admitted</th><th>mean s</th><th>p50 s</th>" \
           "<th>p95 s</th><th>max s</th></tr>"
    rows = []
    for name, values in tta.by_class.items():
        if values:
            stats = [sum(values) / len(values), _quantile(values, 0.5), _quantile(values, 0.95), values[-1]]
            cells = "".join(f"<td>{round3(s)}</td>" for s in stats)
        else:
            cells = "<td>-</td>" * 4
        rows.append(f"<tr><td>{html.escape(name)}</td><td>{len(values)}</td>"
                    f"<td>{tta.not_admitted.get(name, 0)}</td>{cells}</tr>")
    return f'<table class="stats">{head}{"".join(rows)}</table>'


def _add_usage_and_nominal(fig: Any, usage: Series, nominal: Series, name: str, color: str, row: int) -> None:
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


def _pending(sweep: _Sweep, end_us: int, kind: str, colors: Colors) -> Any:
    return _step_lines(sweep, end_us, sweep.pending_index, "pending", "pending workloads",
                       f"Pending workloads over time per {kind}", colors)


def _step_lines(sweep: _Sweep, end_us: int, index: int, what: str, y_title: str, title: str,
                colors: Colors) -> Any:
    """One step line per series for one sampled quantity (pending counts, shares)."""
    import plotly.graph_objects as go

    fig = go.Figure()
    made: list[Series] = []
    for name, unit in sweep.units.items():
        s = series(unit.points, [index], end_us, [1.0])
        made.append(s)
        fig.add_trace(go.Scatter(x=s.x, y=s.ys[0], name=name, mode="lines", meta={"series": name},
                                 line={"shape": "hv", "width": 1.5, "color": colors.series(name)},
                                 hovertemplate=f"{html.escape(name)}<br>%{{x}} s: %{{y}}<extra>{what}</extra>"))
    fig.update_xaxes(title_text=TIME_AXIS)
    fig.update_yaxes(title_text=y_title, rangemode="tozero")
    integer_ticks(fig, made)
    layout(fig, f"{title}{binned_note(made)}", 420)
    return fig


def _preemptions(result: dict[str, Any], sweep: _Sweep, end_us: int, kind: str, colors: Colors) -> Any:
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
        color = _REASON_COLORS.get(reason, CATEGORY_PALETTE[i % len(CATEGORY_PALETTE)])
        counts = [0] * nbins
        for e in mine:
            counts[min(int(e["time"] / width), nbins - 1)] += 1
        fig.add_trace(go.Bar(x=[round3((b + 0.5) * width) for b in range(nbins)], y=counts, width=width,
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
    ticks = [f'<span style="color:{colors.series(u)}">{html.escape(u)}</span>' for u in order]
    fig.update_yaxes(title_text=f"victim's {kind}", type="category", categoryorder="array",
                     categoryarray=order, tickvals=order, ticktext=ticks, range=[-0.5, len(order) - 0.5],
                     row=2, col=1)
    fig.update_xaxes(title_text=TIME_AXIS, range=[0, end_s if end_s > 0 else 1], row=2, col=1)
    title = f"Preemptions on the timeline ({len(events)} in all)"
    if stride > 1:
        title += f" · every {stride}th marker drawn"
    if not events:
        no_data(fig, "No preemptions")
    layout(fig, title, 260 + max(240, 22 * len(order)))
    return fig


def _fair_shares(sweep: _Sweep, end_us: int, kind: str, colors: Colors) -> Any:
    return _step_lines(sweep, end_us, sweep.share_index, "share", "weighted share",
                       f"Fair sharing: weighted share over time per {kind}", colors)


_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>pykueue simulation report</title>
<style>
body {{ font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 24px 32px; color: #222; }}
h1 {{ font-size: 22px; margin: 0 0 12px; }}
h2 {{ font-size: 17px; margin: 30px 0 4px; border-top: 1px solid #ddd; padding-top: 14px; }}
section.verdict h2 {{ border: none; margin: 0 0 6px; padding: 0; }}
h3 {{ font-size: 14px; margin: 4px 0; }}
.verdict {{ padding: 10px 14px; border-radius: 6px; margin: 0 0 14px; }}
.verdict.pass {{ background: #e7f5ea; border: 1px solid #2e9e4f; }}
.verdict.fail {{ background: #fdecea; border: 1px solid #d62728; }}
.verdict.unknown {{ background: #f4f4f4; border: 1px solid #999; }}
.verdict ul {{ margin: 4px 0 8px; font-size: 13px; }}
div.top {{ display: flex; flex-wrap: wrap; gap: 36px; align-items: flex-start; }}
table.facts, table.stats {{ border-collapse: collapse; font-size: 13px; margin: 6px 0 14px; }}
table.facts th, table.facts td, table.stats th, table.stats td {{ padding: 2px 10px; text-align: left;
  border-bottom: 1px solid #e5e5e5; }}
table.facts th {{ font-weight: 600; color: #555; }}
table.stats tr.bad td {{ color: #b00020; }}
table.stats tr.ok td:last-child {{ color: #2e9e4f; }}
table.wide td:last-child {{ max-width: 720px; }}
p.note, p.caption {{ font-size: 13px; color: #555; margin: 4px 0; }}
details#inputs {{ font-size: 13px; margin: 4px 0 8px; }}
ul.inputs {{ margin: 4px 0; columns: 2; }}
nav {{ font-size: 13px; margin: 10px 0; }}
pre {{ font-size: 12px; background: #f7f7f7; padding: 6px; }}
</style>
</head>
<body>
{body}
</body>
</html>
"""
