"""A small cohort for the report's tests: two teams' queues and workloads as manifests, simulated through the
public loading path with usage recorded."""

from __future__ import annotations

from pathlib import Path

from pykueue.api.loader import load_paths
from pykueue.sim.report import (
    CLASS_LABEL,
)
from pykueue.sim.result import build_result
from pykueue.sim.simulator import Run, Simulation

FAIR = """\
apiVersion: config.kueue.x-k8s.io/v1beta1
kind: Configuration
fairSharing: {enable: true}
"""
FLAVOR = """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default-flavor}
"""


def cluster_queue(name: str, cohort: str, cpu: int = 4, reclaim: bool = False) -> str:
    preemption = "  preemption: {reclaimWithinCohort: Any}\n" if reclaim else ""
    return f"""\
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {{name: {name}}}
spec:
  cohortName: {cohort}
{preemption}  namespaceSelector: {{}}
  resourceGroups:
  - coveredResources: ["cpu", "memory"]
    flavors:
    - name: default-flavor
      resources: [{{name: cpu, nominalQuota: {cpu}}}, {{name: memory, nominalQuota: 8Gi}}]
"""


def local_queue(ns: str, cq: str) -> str:
    return f"""\
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {{name: q, namespace: {ns}}}
spec: {{clusterQueue: {cq}}}
"""


def workload(ns: str, name: str, arrival: str, runtime: str, cpu: int, label: str | None = None) -> str:
    labels = f", labels: {{{CLASS_LABEL}: {label}}}" if label else ""
    return f"""\
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata:
  {{name: {name}, namespace: {ns}{labels},
   annotations: {{pykueue.dev/arrival: "{arrival}", pykueue.dev/runtime: "{runtime}"}}}}
spec:
  queueName: q
  priority: 0
  podSets:
  - name: main
    count: 1
    template:
      spec:
        restartPolicy: Never
        containers: [{{name: c, image: x, resources: {{requests: {{cpu: "{cpu}", memory: 1Gi}}}}}}]
"""


def reclaim_scenario(fair: bool = False) -> list[str]:
    """team-b borrows 2 cpu of team-a's idle quota; at 5s a-1 reclaims them, preempting b-5 and b-4.

    At 10s a-1 finishes: c-1 (waiting since 6s) and the two requeued b workloads are admitted, and
    team-b borrows 2 again while team-a uses 1 of its 4.
    """
    docs = [FLAVOR]
    if fair:
        docs.append(FAIR)
    docs += [cluster_queue("team-a", "research", reclaim=True), cluster_queue("team-b", "research"),
             local_queue("team-a", "team-a"), local_queue("team-b", "team-b")]
    docs += [workload("team-b", f"b-{i}", "0s", "20s", 1, label="batch") for i in range(6)]
    docs += [workload("team-a", "a-1", "5s", "5s", 4), workload("team-a", "c-1", "6s", "10s", 1)]
    return docs


def simulate(tmp_path: Path, docs: list[str]) -> tuple[Run, dict]:
    path = tmp_path / "scenario.yaml"
    path.write_text("---\n".join(docs))
    inputs, problems = load_paths([str(path)])
    assert not problems, [str(p) for p in problems]
    run = Simulation(inputs, record_usage=True).run()
    return run, build_result(run)
