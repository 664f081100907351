"""The forecast of a simulation's pending workloads at the instant it stopped (``pykueue explain``).

The engine's ``forecast`` (``engine/forecast.py``) needs each workload's expected end and its source.
In a simulation the ends of running workloads are known: the input's run times (``pykueue.dev/runtime``),
source ``given``, unless ``maximumExecutionTimeSeconds`` ends one first. A pending workload's run time is
``given`` too; without one, the user's ``pykueue.dev/expected-runtime`` (``annotation``), else the mean
run time of the workloads of its LocalQueue and shape that finished in the run so far (``learned``),
else ``unknown``. Workloads arriving after the instant are not known to the forecast, as they would not
be to a live one. Upstream Kueue has no counterpart.
"""

from __future__ import annotations

from pykueue.engine.expected_runtimes import Expected, LearnedRuntimes, choose
from pykueue.engine.forecast import Forecast, forecast
from pykueue.engine.workload import State
from pykueue.sim.simulator import Simulation, to_us


def expected_ends(sim: Simulation) -> dict[str, Expected]:
    """Every workload's expected end as the simulation knows it, by key (see the module's docstring)."""
    engine = sim.engine
    learned = LearnedRuntimes()
    statuses = engine.workload_statuses()
    for w in statuses:
        if w.state is State.FINISHED and w.finished_us is not None and w.admitted_us is not None:
            learned.observe(w.spec, w.finished_us - w.admitted_us)
    finishes = sim.finish_times()
    out: dict[str, Expected] = {}
    for w in statuses:
        if w.state is State.FINISHED:
            continue
        try:
            sub = sim.submitted(w.key)
        except KeyError:
            continue
        if w.holds_quota:
            admitted = w.admitted_us if w.admitted_us is not None else w.reserved_us
            end = finishes.get(w.key)
            given = None if end is None or admitted is None else end - admitted
            if given is None and sub.runtime is not None and admitted is not None:
                given = to_us(sub.runtime)  # reserved, its checks pending: it runs that long once admitted
            out[w.key] = choose(w.spec, admitted_us=admitted, given_us=given, accumulated_s=w.accumulated_s)
            continue
        out[w.key] = choose(
            w.spec, admitted_us=None, given_us=None if sub.runtime is None else to_us(sub.runtime),
            annotated_us=None if sub.expected_runtime is None else to_us(sub.expected_runtime),
            learned_us=learned.estimate(w.spec), accumulated_s=w.accumulated_s)
    return out


def forecast_at_end(sim: Simulation, now_us: int) -> Forecast:
    """The forecast of every workload pending when the simulation stopped at ``now_us``."""
    return forecast(sim.engine, now_us, expected_ends(sim))
