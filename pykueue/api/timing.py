"""When things happen: the simulator's annotations and ``metadata.creationTimestamp``.

| annotation | on | meaning |
| --- | --- | --- |
| ``pykueue.dev/arrival`` | Workload, Job (any queued kind) | virtual time the object is created (default 0) |
| ``pykueue.dev/runtime`` | Workload, Job | how long it runs once admitted (default: never finishes) |
| ``pykueue.dev/expected-runtime`` | Workload, Job | how long its user expects it to run: the forecast's figure |
| ``pykueue.dev/ready-after`` | Workload, Job | delay from admission to all pods ready; ``never`` (default 0) |
| ``pykueue.dev/admission-checks`` | Workload, Job | script of admission check states (below) |
| ``pykueue.dev/unready-after`` | Workload, Job | delay from admission until its pods stop being ready (a failure) |
| ``pykueue.dev/unready-for`` | Workload, Job | how long they then stay not ready; ``never`` (default) |
| ``pykueue.dev/at`` | any object | the document is a change that replaces the object at that time |
| ``pykueue.dev/delete-at`` | any object | the object is removed at that time |
| ``pykueue.dev/unreachable`` | MultiKueueCluster | windows the manager cannot reach the worker (below) |
| ``pykueue.dev/nominate`` | Workload, Job | an external MultiKueue dispatcher's nominations (below) |

Any other ``pykueue.dev/`` annotation is reported, so a misspelt one is not silently ignored.

``pykueue.dev/admission-checks: CHECK=STATE@DELAY[,STATE@DELAY...][;CHECK=...]`` scripts what each
admission check reports after the workload's successive quota reservations (the last entry repeats);
STATE is Ready, Retry, Rejected or Pending. The simulator plays the script; here it is only checked.

``pykueue.dev/unreachable: START-END[,START-END...]`` (END may be left out: never reachable again), on a
MultiKueueCluster, gives the virtual times the manager cannot reach that worker, in increasing order.

``pykueue.dev/nominate: W[,W...]@DELAY[;W[,W...]@DELAY...]`` scripts what an external dispatcher writes
to ``status.nominatedClusterNames`` of the workload, DELAY after each quota reservation, in increasing
order (a later entry replaces the earlier nomination).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, date, datetime

from pykueue.api.durations import parse_duration
from pykueue.api.inputs import NEVER_READY
from pykueue.engine import model
from pykueue.jobs import registry

PREFIX = "pykueue.dev/"
ARRIVAL = "pykueue.dev/arrival"
RUNTIME = "pykueue.dev/runtime"
READY_AFTER = "pykueue.dev/ready-after"
AT = "pykueue.dev/at"
DELETE_AT = "pykueue.dev/delete-at"
ADMISSION_CHECKS = "pykueue.dev/admission-checks"
UNREADY_AFTER = "pykueue.dev/unready-after"
UNREADY_FOR = "pykueue.dev/unready-for"
UNREACHABLE = "pykueue.dev/unreachable"
NOMINATE = "pykueue.dev/nominate"
# what the user expects the job to run: read by forecasts (engine/forecast.py), never by the clock
EXPECTED_RUNTIME = "pykueue.dev/expected-runtime"
WORKLOAD_ONLY = (ARRIVAL, RUNTIME, READY_AFTER, ADMISSION_CHECKS, UNREADY_AFTER, UNREADY_FOR, NOMINATE, EXPECTED_RUNTIME)
KNOWN = (*WORKLOAD_ONLY, AT, DELETE_AT, UNREACHABLE)
CHECK_STATES = ("Ready", "Retry", "Rejected", "Pending")
# the kinds that become workloads and so may carry the workload-only annotations
WORKLOAD_LIKE = ("Workload", *registry.BY_KIND)

Errors = list[tuple[str, str]]


@dataclass(slots=True, init=False)
class Timing:
    """What a document's annotations say about time, in seconds on the virtual clock. Made empty,
    one per document, and filled in (``__init__`` written out: a dataclass's generated one stays
    interpreted in a compiled build)."""

    at: float | None
    delete_at: float | None
    arrival: float
    runtime: float | None
    expected_runtime: float | None  # pykueue.dev/expected-runtime: the user's figure, for forecasts
    ready_after: float
    unready_after: float | None  # pods stop being ready this long after admission
    unready_for: float  # and are ready again after this long (never by default)
    checks: dict[str, tuple[tuple[str, float], ...]]  # admission-checks script
    unreachable: tuple[tuple[float, float], ...]  # a MultiKueueCluster's (start, end) windows; end may be inf
    nominate: tuple[tuple[tuple[str, ...], float], ...]  # an external dispatcher's (workers, delay) script

    def __init__(self) -> None:
        self.at = self.delete_at = self.runtime = self.unready_after = self.expected_runtime = None
        self.arrival = self.ready_after = 0.0
        self.unready_for = NEVER_READY
        self.checks = model.nothing()
        self.unreachable = self.nominate = ()


def _path(key: str) -> str:
    return f"metadata.annotations[{key}]"


def _seconds(
    annotations: dict[str, str], key: str, errors: Errors, allow_never: bool = False
) -> float | None:
    value = annotations[key]
    if allow_never and value.strip() == "never":
        return NEVER_READY
    try:
        seconds = parse_duration(value)
    except ValueError as exc:
        errors.append((_path(key), str(exc)))
        return None
    if seconds < 0 or not math.isfinite(seconds):
        errors.append((_path(key), f'Invalid value: "{value}": must be a non-negative duration'))
        return None
    return seconds


def read_timing(annotations: dict[str, str], kind: str) -> tuple[Timing, Errors]:
    """The simulation annotations of an object of ``kind``, and what is wrong with them."""
    timing = Timing()
    errors: Errors = []
    workload_like = kind in WORKLOAD_LIKE
    for key in annotations:
        if not key.startswith(PREFIX):
            continue
        if key == AT:
            timing.at = _seconds(annotations, key, errors)
        elif key == DELETE_AT:
            timing.delete_at = _seconds(annotations, key, errors)
        elif key == UNREACHABLE:
            if kind != "MultiKueueCluster":
                errors.append((_path(key), f"only a MultiKueueCluster can carry {key}"))
                continue
            try:
                timing.unreachable = parse_unreachable(annotations[key])
            except ValueError as exc:
                errors.append((_path(key), str(exc)))
        elif key not in WORKLOAD_ONLY:
            errors.append((_path(key), f"unknown simulation annotation (known: {', '.join(KNOWN)})"))
            continue
        elif not workload_like:
            errors.append((_path(key), f"only a Workload or a Job can carry {key}"))
            continue
        elif key == NOMINATE:
            try:
                timing.nominate = parse_nominate(annotations[key])
            except ValueError as exc:
                errors.append((_path(key), str(exc)))
        elif key == ADMISSION_CHECKS:
            try:
                timing.checks = {c: tuple(steps) for c, steps in parse_admission_checks(annotations[key]).items()}
            except ValueError as exc:
                errors.append((_path(key), str(exc)))
        else:
            seconds = _seconds(annotations, key, errors, allow_never=key in (READY_AFTER, UNREADY_FOR))
            if seconds is None:
                continue
            if key == UNREADY_AFTER:
                timing.unready_after = seconds
            elif key == UNREADY_FOR:
                timing.unready_for = seconds
            elif key == ARRIVAL:
                timing.arrival = seconds
            elif key == RUNTIME:
                timing.runtime = seconds
            elif key == EXPECTED_RUNTIME:
                timing.expected_runtime = seconds
            else:
                timing.ready_after = seconds
        if key in (AT, DELETE_AT) and kind == "Configuration":
            errors.append((_path(key), "a Configuration cannot change while the clock runs"))
    if timing.at is not None and timing.delete_at is not None and timing.delete_at < timing.at:
        errors.append((_path(DELETE_AT), f"must not be earlier than {AT}"))
    return timing, errors


def creation_timestamp(value: object) -> datetime:
    """``metadata.creationTimestamp`` (a YAML timestamp or an RFC 3339 string), as an aware datetime."""
    if isinstance(value, datetime):
        stamp = value
    elif isinstance(value, date):
        stamp = datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        try:
            stamp = datetime.fromisoformat(value.strip())
        except ValueError:
            raise ValueError(f"must be an RFC 3339 timestamp, got {value!r}") from None
    else:
        raise ValueError(f"must be an RFC 3339 timestamp, got {value!r}")
    return stamp if stamp.tzinfo is not None else stamp.replace(tzinfo=UTC)


def parse_admission_checks(value: str) -> dict[str, list[tuple[str, float]]]:
    """``pykueue.dev/admission-checks`` as ``{check: [(state, delay seconds), ...]}``; ValueError if bad."""
    script: dict[str, list[tuple[str, float]]] = {}
    for part in value.split(";"):
        part = part.strip()
        if not part:
            continue
        name, sep, steps = part.partition("=")
        name = name.strip()
        if not sep or not name:
            raise ValueError(f"{part!r}: expected CHECK=STATE@DELAY")
        if name in script:
            raise ValueError(f"check {name!r} listed twice")
        entries = []
        for step in steps.split(","):
            state, at, delay = step.strip().partition("@")
            state = state.strip()
            if state not in CHECK_STATES:
                raise ValueError(f"check {name!r}: state {state!r} is not one of {', '.join(CHECK_STATES)}")
            if not at:
                raise ValueError(f"check {name!r}: {step.strip()!r} needs @DELAY")
            seconds = parse_duration(delay.strip())
            if seconds < 0:
                raise ValueError(f"check {name!r}: delay must not be negative")
            entries.append((state, seconds))
        script[name] = entries
    return script


def _duration(text: str, what: str) -> float:
    try:
        seconds = parse_duration(text.strip())
    except ValueError as exc:
        raise ValueError(f"{what}: {exc}") from None
    if seconds < 0 or not math.isfinite(seconds):
        raise ValueError(f"{what}: {text.strip()!r} must be a non-negative duration")
    return seconds


def parse_unreachable(value: str) -> tuple[tuple[float, float], ...]:
    """``pykueue.dev/unreachable`` as ``((start, end), ...)`` in seconds (end ``inf``: for good);
    ValueError if bad (windows must be in increasing order and must not touch)."""
    windows: list[tuple[float, float]] = []
    for part in value.split(","):
        part = part.strip()
        if not part:
            continue
        start_text, sep, end_text = part.partition("-")
        if not sep or not start_text.strip():
            raise ValueError(f"{part!r}: expected START-END or START- (unreachable from START on)")
        start = _duration(start_text, part)
        end = _duration(end_text, part) if end_text.strip() else math.inf
        if end <= start:
            raise ValueError(f"{part!r}: the end must be later than the start")
        if windows and start <= windows[-1][1]:
            raise ValueError(f"{part!r}: windows must be in increasing order, apart")
        windows.append((start, end))
    if not windows:
        raise ValueError("expected START-END[,START-END...]")
    return tuple(windows)


def parse_nominate(value: str) -> tuple[tuple[tuple[str, ...], float], ...]:
    """``pykueue.dev/nominate`` as ``((workers, delay), ...)``; ValueError if bad."""
    steps: list[tuple[tuple[str, ...], float]] = []
    for part in value.split(";"):
        part = part.strip()
        if not part:
            continue
        names, sep, delay = part.rpartition("@")
        if not sep:
            raise ValueError(f"{part!r}: expected WORKER[,WORKER...]@DELAY")
        workers = tuple(n.strip() for n in names.split(",") if n.strip())
        if not workers:
            raise ValueError(f"{part!r}: names no worker")
        seconds = _duration(delay, part)
        if steps and seconds < steps[-1][1]:
            raise ValueError(f"{part!r}: delays must be in increasing order")
        steps.append((workers, seconds))
    if not steps:
        raise ValueError("expected WORKER[,WORKER...]@DELAY[;...]")
    return tuple(steps)
