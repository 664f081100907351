"""``pykueue simulate`` with worker clusters (MultiKueue): run, then print the result in the chosen
format. The single-cluster path in ``pykueue.cli`` is left as it is."""

from __future__ import annotations

import sys
from typing import Any

from pykueue.api.clusters import ClusterInputs
from pykueue.engine.events import EngineError
from pykueue.sim.multicluster import MultiSimulation
from pykueue.sim.multicluster_result import build_multi_result, render_multi
from pykueue.sim.result import write_json, write_yaml


def simulate_clusters(clusters: ClusterInputs, until: float | None, output: str
                      ) -> tuple[int, str | None, list[dict[str, Any]]]:
    """Print the run's result; ``(0, None, events)``, or, for a run that could not settle, why it
    stopped (with the manager's events, for the caller to name the loop)."""
    sim = MultiSimulation(clusters, until=until)
    stopped: str | None = None
    try:
        run = sim.run()
    except EngineError as e:  # the run so far is still shown
        run, stopped = sim.result(), str(e)
    result = build_multi_result(run)
    if output == "json":
        write_json(result, sys.stdout)
    elif output == "yaml":
        write_yaml(result, sys.stdout)
    else:
        from pykueue.sim.table import terminal

        render_multi(result, run, terminal(), stopped=stopped)
    return 0, stopped, result["events"]
