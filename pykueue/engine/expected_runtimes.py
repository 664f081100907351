"""When a workload that holds quota will give it back: the figures a forecast (``forecast.py``) plays with.

A forecast of admission times is only as good as its figures for when running workloads end. Each figure
says where it came from, so a prediction can say what it rests on. In the order a driver should prefer
them (``choose``):

- ``maximumExecutionTimeSeconds``: the workload's own limit; Kueue deactivates it then, so it is an upper
  bound that always holds;
- ``given``: the run time the simulator's input states (``pykueue.dev/runtime``): exact in a simulation;
- ``annotation``: an expected run time the user wrote (``pykueue.dev/expected-runtime: 30m``, read by the
  API layer, ``api/timing.py``);
- ``learned``: the mean run time of recently finished workloads of the same LocalQueue and shape
  (``LearnedRuntimes``), a guess;
- ``unknown``: nothing to go by; the workload never ends within the forecast's horizon, a guess too.

Upstream Kueue has no counterpart: it estimates no wait (kueue#1657 left it out of the visibility API).
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass
from enum import StrEnum

from pykueue.engine import model


class RuntimeSource(StrEnum):
    """Where the figure for a workload's end came from."""

    MAX_EXECUTION = "maximumExecutionTimeSeconds"
    GIVEN = "given"
    ANNOTATION = "annotation"
    LEARNED = "learned"
    UNKNOWN = "unknown"


GUESSES = frozenset({RuntimeSource.LEARNED, RuntimeSource.UNKNOWN})


@dataclass(frozen=True, slots=True)
class Expected:
    """One workload's expected end. For a workload holding quota now, ``end_us`` (on the driver's clock);
    for a pending one, ``runtime_us``, counted from its admission in the replay. Both None with source
    ``unknown``: it never ends within the horizon."""

    source: RuntimeSource
    end_us: int | None = None
    runtime_us: int | None = None


UNKNOWN = Expected(RuntimeSource.UNKNOWN)


def choose(spec: model.Workload, *, admitted_us: int | None, given_us: int | None = None,
           annotated_us: int | None = None, learned_us: int | None = None,
           accumulated_s: int | None = None) -> Expected:
    """The best figure for ``spec``'s end, by the order of the module's docstring. Run times are
    durations in microseconds; ``admitted_us`` is when it was admitted (None: it is pending, and the
    answer is a run time); ``accumulated_s`` the admitted seconds of its earlier admissions (default: what its
    spec says, ``status.accumulatedPastExecutionTimeSeconds``). The execution limit is taken only where it comes before every other figure:
    a job that is expected to end earlier ends then."""
    limit = spec.max_execution_seconds
    past = spec.accumulated_execution_seconds if accumulated_s is None else accumulated_s
    limit_us = None if limit is None else max(0, limit - past) * model.US
    candidates = ((RuntimeSource.GIVEN, given_us), (RuntimeSource.ANNOTATION, annotated_us),
                  (RuntimeSource.LEARNED, learned_us))
    source, runtime = next(((s, r) for s, r in candidates if r is not None), (RuntimeSource.UNKNOWN, None))
    if limit_us is not None and (runtime is None or limit_us <= runtime):
        source, runtime = RuntimeSource.MAX_EXECUTION, limit_us
    if runtime is None:
        return UNKNOWN
    if admitted_us is None:
        return Expected(source, runtime_us=runtime)
    return Expected(source, end_us=admitted_us + runtime)


def shape_of(spec: model.Workload) -> tuple:
    """What makes two workloads of one LocalQueue alike enough to share a learned run time: their pod
    sets' names, counts and per-pod requests."""
    return tuple((ps.name, ps.count, tuple(sorted(ps.requests.items()))) for ps in spec.pod_sets)


class LearnedRuntimes:
    """A bounded running mean of observed run times per (LocalQueue, pod-set shape): the last ``window``
    run times of each, for at most ``max_keys`` shapes (the least recently observed one forgotten first).
    In memory only: a driver fills it from the workloads it sees finish (the controller, at start, from
    the finished Workloads the API still shows)."""

    def __init__(self, window: int = 20, max_keys: int = 1000) -> None:
        self.window, self.max_keys = window, max_keys
        self._seen: OrderedDict[tuple, deque[int]] = OrderedDict()

    def observe(self, spec: model.Workload, runtime_us: int) -> None:
        key = (f"{spec.namespace}/{spec.queue_name}", shape_of(spec))
        runs = self._seen.pop(key, None)
        if runs is None:
            runs = deque(maxlen=self.window)
        runs.append(max(0, runtime_us))
        self._seen[key] = runs
        while len(self._seen) > self.max_keys:
            self._seen.popitem(last=False)

    def estimate(self, spec: model.Workload) -> int | None:
        """The mean run time (microseconds) of its LocalQueue's workloads of its shape, None if none seen."""
        runs = self._seen.get((f"{spec.namespace}/{spec.queue_name}", shape_of(spec)))
        return None if not runs else sum(runs) // len(runs)

    def __len__(self) -> int:
        return len(self._seen)
