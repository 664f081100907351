"""Plotting helpers shared by the report's modules: step series, resampling, units, colours, layout.

Kept apart from ``report.py`` so that the timeline module can draw with the same conventions (time axis,
resampling, one colour per cluster queue) without importing the usage sweep.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pykueue.sim.simulator import US

MAX_POINTS = 1200  # points per series before resampling
TIME_AXIS = "virtual time (s)"

# One colour per series (cluster queue, or the group it is drawn in), the same in every chart.
PALETTE = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
    "#17becf", "#393b79", "#ad494a", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd", "#e6550d",
    "#31a354", "#756bb1", "#636363", "#6baed6", "#fd8d3c", "#74c476", "#9e9ac8", "#969696", "#9c9ede",
    "#e7969c", "#b5cf6b", "#e7ba52",
)
# Categories that are not queues (pending reasons, other groupings): a palette of their own, so that a
# reason is never mistaken for a queue.
CATEGORY_PALETTE = (
    "#e8a33d", "#c0392b", "#8e44ad", "#16a085", "#2c3e50", "#d35400", "#7f8c8d", "#27ae60", "#2980b9",
    "#f1c40f", "#b03a2e", "#6c3483",
)


def color(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def rgba(hex_color: str, alpha: float) -> str:
    """``#rrggbb`` with an opacity, for fills under a line of the same colour."""
    r, g, b = (int(hex_color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


class Colors:
    """The one colour map of a report, keyed by series name (a cluster queue, or the group of cluster
    queues it is drawn in); queues map to their series' colour."""

    def __init__(self, series: Iterable[str], series_of_queue: dict[str, str]) -> None:
        self.of_series = {name: color(i) for i, name in enumerate(series)}
        self.series_of_queue = series_of_queue

    def series(self, name: str) -> str:
        return self.of_series.get(name, "#555555")

    def queue(self, cluster_queue: str | None) -> str:
        return self.series(self.series_of_queue.get(cluster_queue or "", cluster_queue or ""))


@dataclass
class Series:
    x: list[float]
    ys: list[list[float]]
    resampled_bin_s: float | None


def series(points: list[tuple[int, tuple[float, ...]]], idx: Sequence[int], end_us: int,
           scale: Sequence[float]) -> Series:
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
        ts_f, vals = resample(ts, vals, end_us, MAX_POINTS)
        bin_s = end_us / MAX_POINTS / US
        x = [round(t / US, 6) for t in ts_f]
    else:
        x = [round(t / US, 6) for t in ts]
    last = vals[-1]
    if end_us / US > x[-1]:
        x.append(round(end_us / US, 6))
        vals.append(last)
    ys = [[round3(v[k] * scale[k]) for v in vals] for k in range(len(idx))]
    return Series(x, ys, bin_s)


def round3(v: float) -> float:
    r = round(v, 3)
    return int(r) if r == int(r) else r


def resample(ts: list[int], vals: list[tuple[float, ...]], end_us: int,
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


def scale(resource: str) -> tuple[float, str]:
    """Canonical units to display units: cpu milli-units to cores, byte quantities to GiB."""
    if resource == "cpu":
        return 1 / 1000, "cores"
    if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
        return 1 / 2**30, "GiB"
    return 1.0, ""


def axis_label(resource: str) -> str:
    unit = scale(resource)[1]
    return f"{resource} ({unit})" if unit else resource


def binned_note(made: Iterable[Series]) -> str:
    bins = [s.resampled_bin_s for s in made if s.resampled_bin_s]
    return f" · time-weighted means over {max(bins):.3g} s bins" if bins else ""


def layout(fig: Any, title: str, height: int) -> None:
    fig.update_layout(
        title={"text": title, "x": 0.01, "xanchor": "left"},
        template="plotly_white",
        height=height,
        margin={"l": 70, "r": 20, "t": 70, "b": 50},
        hovermode="closest",
        legend={"font": {"size": 11}},
    )


def no_data(fig: Any, text: str) -> None:
    fig.add_annotation(text=text, showarrow=False, xref="paper", yref="paper", x=0.5, y=0.5)


def integer_ticks(fig: Any, made: Sequence[Series], stacked: bool = False) -> None:
    """Counts of workloads read best on whole ticks; plotly's default puts 0.5 steps on small ranges."""
    if any(s.resampled_bin_s for s in made):
        return  # time-weighted means are fractional
    if stacked:
        top = max((sum(col) for s in made for col in zip(*s.ys, strict=True)), default=0)
    else:
        top = max((v for s in made for ys in s.ys for v in ys), default=0)
    if top <= 10:
        fig.update_yaxes(dtick=1)
