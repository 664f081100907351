"""Random small worlds for the simulator-level properties (``test_liveness.py``, ``test_order_properties.py``).

One ClusterQueue, or two in a cohort with random borrowing and lending limits and fair-sharing weights,
either queueing strategy, fair sharing on or off, no preemption; workloads that each fit in their own
queue's nominal quota, with random priorities, arrivals and runtimes. ``simulate`` plays a world as
``pykueue simulate`` does (the loader, then the simulator) and returns the result's workloads.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from pykueue.api.loader import load_paths
from pykueue.sim.result import build_result
from pykueue.sim.simulator import Simulation

V2 = "kueue.x-k8s.io/v1beta2"
POD_CPU_M = (250, 500, 1000, 1500, 2000)


@dataclass(frozen=True)
class Job:
    name: str
    cq: int
    count: int
    cpu_m: int  # per pod
    priority: int
    arrival_ms: int
    runtime_ms: int

    @property
    def request_m(self) -> int:
        return self.count * self.cpu_m


@dataclass(frozen=True)
class World:
    nominal: tuple[int, ...]  # cpu per ClusterQueue
    borrowing: tuple[int | None, ...]
    lending: tuple[int | None, ...]
    strategies: tuple[str, ...]
    weights: tuple[str | None, ...]  # fairSharing.weight, None: the default (1)
    cohort: bool
    fair: bool
    jobs: tuple[Job, ...]


@st.composite
def worlds(draw: st.DrawFn, fair: bool | None = None, two: bool = False) -> World:
    n = 2 if two else draw(st.integers(1, 2))
    cohort = n == 2 or draw(st.booleans())
    nominal = tuple(draw(st.integers(1, 6)) for _ in range(n))
    borrowing = tuple(draw(st.none() | st.integers(0, 4)) if cohort else None for _ in range(n))
    lending = tuple(draw(st.none() | st.integers(0, nominal[i])) if cohort else None for i in range(n))
    strategies = tuple(draw(st.sampled_from(("BestEffortFIFO", "StrictFIFO"))) for _ in range(n))
    weights = tuple(draw(st.sampled_from((None, "1", "2", "0.5"))) for _ in range(n))
    jobs = []
    for i in range(draw(st.integers(1, 12))):
        cq = draw(st.integers(0, n - 1))
        count = draw(st.integers(1, 3))
        cpu_m = draw(st.sampled_from([c for c in POD_CPU_M if c * count <= nominal[cq] * 1000]))
        jobs.append(Job(
            name=f"w{i:02d}", cq=cq, count=count, cpu_m=cpu_m,
            priority=draw(st.sampled_from((0, 10))),
            arrival_ms=draw(st.integers(0, 40)) * 250,
            runtime_ms=draw(st.integers(1, 60)) * 250,
        ))
    fair = draw(st.booleans()) if fair is None else fair
    return World(nominal, borrowing, lending, strategies, weights, cohort, fair, tuple(jobs))


def manifests(world: World) -> str:
    docs = []
    if world.fair:
        docs.append("apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\nfairSharing: {enable: true}\n")
    docs.append(f"apiVersion: {V2}\nkind: ResourceFlavor\nmetadata: {{name: f}}\n")
    for i, nominal in enumerate(world.nominal):
        quota = f"name: cpu, nominalQuota: {nominal}"
        if world.borrowing[i] is not None:
            quota += f", borrowingLimit: {world.borrowing[i]}"
        if world.lending[i] is not None:
            quota += f", lendingLimit: {world.lending[i]}"
        docs.append(
            f"apiVersion: {V2}\nkind: ClusterQueue\nmetadata: {{name: cq{i}}}\nspec:\n"
            + ("  cohortName: co\n" if world.cohort else "")
            + f"  queueingStrategy: {world.strategies[i]}\n  namespaceSelector: {{}}\n"
            + (f"  fairSharing: {{weight: \"{world.weights[i]}\"}}\n" if world.weights[i] is not None else "")
            + f"  resourceGroups:\n  - coveredResources: [cpu]\n    flavors: [{{name: f, resources: [{{{quota}}}]}}]\n"
        )
        docs.append(f"apiVersion: {V2}\nkind: LocalQueue\nmetadata: {{name: q{i}, namespace: ns}}\n"
                    f"spec: {{clusterQueue: cq{i}}}\n")
    for j in world.jobs:
        docs.append(
            f"apiVersion: {V2}\nkind: Workload\nmetadata:\n  name: {j.name}\n  namespace: ns\n"
            f"  annotations: {{pykueue.dev/arrival: {j.arrival_ms}ms, pykueue.dev/runtime: {j.runtime_ms}ms}}\n"
            f"spec:\n  queueName: q{j.cq}\n  priority: {j.priority}\n"
            f"  podSets: [{{name: main, count: {j.count}, template: {{spec: {{restartPolicy: Never, containers: "
            f"[{{name: c, image: x, resources: {{requests: {{cpu: {j.cpu_m}m}}}}}}]}}}}}}]\n"
        )
    return "---\n".join(docs)


def run(world: World, until_ms: int | None = None) -> dict[str, Any]:
    """The result document of ``pykueue simulate`` on the world (up to ``until_ms``)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "world.yaml"
        path.write_text(manifests(world))
        inputs, problems = load_paths([str(path)])
    assert not problems, problems
    return build_result(Simulation(inputs, until=None if until_ms is None else until_ms / 1000).run())


def simulate(world: World) -> dict[str, dict[str, Any]]:
    """The result's workloads of a run to the end, by name."""
    return {w["name"]: w for w in run(world)["workloads"]}


def ms(seconds: float | None) -> int | None:
    return None if seconds is None else round(seconds * 1000)
