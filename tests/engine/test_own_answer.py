"""Which pending workloads have an answer of their own (what the controller writes to the API, as
upstream does): the head the scheduler tried, and workloads their queue cannot take; not the
equivalent workloads set aside with it, nor a workload not tried yet."""

from __future__ import annotations

from pathlib import Path

from pykueue.api.loader import load_paths
from pykueue.engine.engine import Engine
from pykueue.sim.simulator import Simulation
from tests.objects import workload_yaml

WORLD = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default
      resources: [{name: cpu, nominalQuota: 4}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq, namespace: ns}
spec: {clusterQueue: cq}
"""


def workload(name: str, cpu: str, queue: str = "lq", arrival: str = "0s") -> str:
    return workload_yaml(name, cpu=cpu, queue=queue, namespace="ns",
                         notes=f"pykueue.dev/arrival: {arrival}, pykueue.dev/runtime: 100s")


def engine_of(tmp_path: Path, docs: str, until: float) -> Engine:
    path = tmp_path / "world.yaml"
    path.write_text(docs)
    inputs, problems = load_paths([str(path)])
    assert not problems, problems
    return Simulation(inputs, until=until).run().engine


def test_only_the_tried_head_and_blocked_workloads_have_their_own_answer(tmp_path: Path) -> None:
    # runs (3 cpu) holds the quota; a, b, c (2 cpu each, equivalent) wait: a is tried and fails, b and
    # c are set aside with it; lost names a LocalQueue that does not exist; late arrives after the
    # last pass and is never tried.
    docs = WORLD + workload("runs", "3") + "".join(workload(n, "2") for n in "abc")
    docs += workload("lost", "1", queue="nowhere") + workload("late", "2", arrival="10s")
    engine = engine_of(tmp_path, docs, until=5)
    assert engine.has_own_answer("ns/runs")  # holds quota: not a pending answer at all
    assert engine.has_own_answer("ns/a")
    assert "insufficient unused quota" in (engine.pending_condition("ns/a") or ("", ""))[1]
    assert not engine.has_own_answer("ns/b")
    assert not engine.has_own_answer("ns/c")
    assert engine.pending_condition("ns/b") == engine.pending_condition("ns/a")  # the read model still tells
    assert engine.has_own_answer("ns/lost")
    assert engine.pending_condition("ns/lost") == ("Misconfigured", "LocalQueue nowhere doesn't exist")
    # late joins the class set aside: it shows the class's answer but was never tried itself.
    engine = engine_of(tmp_path, docs, until=11)
    assert engine.pending_condition("ns/late") == engine.pending_condition("ns/a")
    assert not engine.has_own_answer("ns/late")
