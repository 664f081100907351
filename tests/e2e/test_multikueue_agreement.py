"""The simulator against the live dispatch (issue 42 item 5): tests/scenarios/multikueue_agreement.yaml
is simulated, then played on a manager and two workers (test_multikueue's clusters fixture: separate
API servers, etcds and controllers), and each job must land on the worker the simulation named.

The scenario makes each choice a matter of quota alone (one worker full, the other with room), so
that it does not depend on which worker's controller is quicker; the live run orders its steps by
waiting for each one's outcome instead of the scenario's virtual times."""

from __future__ import annotations

from pathlib import Path

from pykueue.api.clusters import load_clusters
from pykueue.sim.multicluster import MultiSimulation
from tests.e2e.conftest import Kueue, eventually, is_true
from tests.e2e.test_multikueue import NS, Clusters, Sampler, clusters, workload_of  # noqa: F401 - clusters: the fixture
from tests.e2e.test_multikueue import job as mk_job
from tests.scenario_harness import SCENARIOS, split

SCENARIO = SCENARIOS / "multikueue_agreement.yaml"


def simulated(tmp: Path) -> dict[str, str | None]:
    """Job name -> the worker the simulation ran it on."""
    _, inputs = split(SCENARIO)
    path = tmp / "agreement.yaml"
    path.write_text(inputs)
    _, multi, problems = load_clusters([path])
    assert not problems and multi is not None, problems
    run = MultiSimulation(multi).run()
    return {key.split("/", 1)[1]: cluster for key, cluster in run.cluster_name.items()}


def job(name: str, cpu: int, run: str, managed: bool) -> str:
    """test_multikueue's Job (1 cpu) asking for ``cpu``."""
    manifest = mk_job(name, run, managed)
    assert 'cpu: "1"' in manifest
    return manifest.replace('cpu: "1"', f'cpu: "{cpu}"')


def admitted(kueue: Kueue, name: str, what: str) -> dict:
    return eventually(lambda: (w := workload_of(kueue, name)) and is_true(w, "Admitted") and w, 120, what=what)


def dispatched(c: Clusters, name: str) -> str:
    """Submit a job to the manager; the worker it is admitted through, once it has completed there."""
    sampler = Sampler(c, name)
    c.manager.apply(job(name, 1, "4s", managed=True))
    wl = admitted(c.manager, name, f"{name} admitted in the manager")
    eventually(lambda: is_true(c.manager.get("job", name, NS), "Complete"), 120, what=f"{name} Complete")
    sampler.finish()
    assert sampler.seen <= {wl["status"]["clusterName"]}
    return str(wl["status"]["clusterName"])


def test_each_job_lands_on_the_worker_the_simulation_names(clusters: Clusters, tmp_path: Path) -> None:  # noqa: F811
    expected = simulated(tmp_path)
    assert expected == {"a": "w2", "b": "w1"}  # the scenario's own expectations say why
    w1, w2 = clusters.workers["w1"], clusters.workers["w2"]
    live: dict[str, str] = {}
    try:
        w1.apply(job("w1-fill", 4, "600s", managed=False))  # w1 full
        admitted(w1, "w1-fill", "w1-fill admitted in w1")
        live["a"] = dispatched(clusters, "a")
        w2.apply(job("w2-fill", 4, "600s", managed=False))  # w2 full
        admitted(w2, "w2-fill", "w2-fill admitted in w2")
        w1.cluster.kubectl("delete", "job", "w1-fill", "-n", NS)  # w1 free again
        eventually(lambda: workload_of(w1, "w1-fill") is None, 120, what="w1-fill's Workload gone from w1")
        live["b"] = dispatched(clusters, "b")
    finally:
        for kueue, name in ((w1, "w1-fill"), (w2, "w2-fill"), (clusters.manager, "a"), (clusters.manager, "b")):
            kueue.cluster.kubectl("delete", "job", name, "-n", NS, "--ignore-not-found", check=False)
    assert live == expected
