"""Upstream's performance range spec and its checks, against a ``summarize`` summary.

Mirrors ``test/performance/scheduler/checker/checker_test.go`` (Kueue v0.18), which reads the file with
``yaml.UnmarshalStrict`` into::

    cmd: {maxWallMs: int64, mCPU: int64, maxrss: uint64}
    clusterQueueClassesMinUsage: {class: float64 percent}
    wlClassesMaxAvgTimeToAdmissionMs: {class: int64 ms}

and fails when the wall time exceeds ``maxWallMs``, when a cluster queue class's usage percent is below
its minimum, when a workload class's average time to admission exceeds its maximum, and when the
summary has a class the spec does not list ("Unexpected class"). Classes listed but absent from the
summary are not checked.

Differences, because the simulator has no process: ``cmd.mCPU`` and ``cmd.maxrss`` are accepted but not
checked (they bound minimalkueue's CPU and memory), and an absent ``cmd.maxWallMs`` means no bound
(upstream would compare against 0).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pykueue.perf._yaml import read_config

_CMD_KEYS = ("maxWallMs", "mCPU", "maxrss")
_TOP_KEYS = ("cmd", "clusterQueueClassesMinUsage", "wlClassesMaxAvgTimeToAdmissionMs")


class RangeSpecError(ValueError):
    """Invalid range spec; one ``FILE: FIELD.PATH: message`` line per problem."""

    def __init__(self, source: str, problems: list[tuple[str, str]]) -> None:
        self.source = source
        self.problems = problems
        super().__init__("\n".join(f"{source}: {p}: {m}" if p else f"{source}: {m}" for p, m in problems))


@dataclass(frozen=True, slots=True)
class RangeSpec:
    max_wall_ms: int | None = None
    max_mcpu: int | None = None  # accepted, not checked
    max_rss_kib: int | None = None  # accepted, not checked
    cluster_queue_classes_min_usage: dict[str, float] | None = None  # percent
    wl_classes_max_avg_time_to_admission_ms: dict[str, int] | None = None


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def parse_rangespec(data: Any, source: str = "<rangespec>") -> RangeSpec:
    """Validate decoded range spec YAML strictly: unknown keys and wrong types are errors."""
    problems: list[tuple[str, str]] = []
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise RangeSpecError(source, [("", "must be a mapping")])
    for key in data:
        if key not in _TOP_KEYS:
            problems.append((str(key), f"unknown field (known: {', '.join(_TOP_KEYS)})"))

    cmd_vals: dict[str, int | None] = dict.fromkeys(_CMD_KEYS)
    cmd = data.get("cmd")
    if cmd is not None and not isinstance(cmd, dict):
        problems.append(("cmd", "must be a mapping"))
    elif cmd:
        for key, value in cmd.items():
            path = f"cmd.{key}"
            if key not in _CMD_KEYS:
                problems.append((path, f"unknown field (known: {', '.join(_CMD_KEYS)})"))
            elif value is None:
                continue
            elif not _is_int(value) or value < 0:
                problems.append((path, f"must be a non-negative integer, got {value!r}"))
            else:
                cmd_vals[key] = value

    def class_map(key: str, want_int: bool) -> dict[str, Any] | None:
        raw = data.get(key)
        if raw is None:
            return None
        if not isinstance(raw, dict):
            problems.append((key, "must be a mapping of class name to value"))
            return None
        out: dict[str, Any] = {}
        for cls, value in raw.items():
            path = f"{key}.{cls}"
            ok = _is_int(value) if want_int else (_is_int(value) or isinstance(value, float))
            if not ok or value < 0:
                kind = "integer" if want_int else "number"
                problems.append((path, f"must be a non-negative {kind}, got {value!r}"))
                continue
            out[str(cls)] = value if want_int else float(value)
        return out

    min_usage = class_map("clusterQueueClassesMinUsage", want_int=False)
    max_admit = class_map("wlClassesMaxAvgTimeToAdmissionMs", want_int=True)
    if problems:
        raise RangeSpecError(source, problems)
    return RangeSpec(
        max_wall_ms=cmd_vals["maxWallMs"],
        max_mcpu=cmd_vals["mCPU"],
        max_rss_kib=cmd_vals["maxrss"],
        cluster_queue_classes_min_usage=min_usage,
        wl_classes_max_avg_time_to_admission_ms=max_admit,
    )


def load_rangespec(path: str | Path) -> RangeSpec:
    """Read and validate an upstream ``rangespec.yaml``; raise ``RangeSpecError`` naming the bad field."""
    source = str(path)
    data = read_config(path, RangeSpecError)
    return parse_rangespec(data, source)


def check(summary: dict[str, Any], spec: RangeSpec) -> list[str]:
    """One line per figure out of range, in a stable order (cmd, queue classes, workload classes)."""
    out: list[str] = []
    if spec.max_wall_ms is not None:
        wall = summary.get("wallMs")
        if wall is None:
            out.append("cmd.maxWallMs: the summary has no wallMs")
        elif wall > spec.max_wall_ms:
            out.append(
                f"cmd.maxWallMs: wall time {wall}ms is greater than maximum expected {spec.max_wall_ms}ms"
            )

    min_usage = spec.cluster_queue_classes_min_usage or {}
    for cls, figures in sorted((summary.get("clusterQueueClasses") or {}).items()):
        path = f"clusterQueueClassesMinUsage.{cls}"
        if cls not in min_usage:
            out.append(f"{path}: unexpected cluster queue class {cls!r} (the range spec has no entry for it)")
            continue
        actual = figures.get("avgUsagePercent")
        if actual is None:
            out.append(f"{path}: usage is not measurable (no quota or an empty monitoring window)")
        elif actual < min_usage[cls]:
            out.append(f"{path}: usage {actual:.2f}% is less than expected {min_usage[cls]:.2f}%")

    max_admit = spec.wl_classes_max_avg_time_to_admission_ms or {}
    for cls, figures in sorted((summary.get("workloadClasses") or {}).items()):
        path = f"wlClassesMaxAvgTimeToAdmissionMs.{cls}"
        if cls not in max_admit:
            out.append(f"{path}: unexpected workload class {cls!r} (the range spec has no entry for it)")
            continue
        avg = figures.get("avgTimeToAdmissionMs")
        if avg is not None and avg > max_admit[cls]:
            out.append(f"{path}: average wait for admission {avg}ms is more than expected {max_admit[cls]}ms")
    return out
