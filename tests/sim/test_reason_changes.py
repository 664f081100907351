"""Reasons over time: the simulator records each workload's QuotaReserved=False reason after every
instant in which it may have changed (for the report's pending-reasons chart)."""

from __future__ import annotations

from pykueue.api.loader import load_paths
from pykueue.demo import demo_path
from pykueue.sim.simulator import Simulation


def test_the_demo_records_exactly_the_waits_it_has() -> None:
    inputs, problems = load_paths([demo_path()], None)
    assert not problems
    run = Simulation(inputs, record_reasons=True).run()
    got = [(r.time_us // 1_000_000, r.workload, r.reason) for r in run.reasons]
    # b-train-2 is preempted at 15s and waits for quota until 30s; b-sweep arrives at 20s and waits
    # until 60s; everything else gets quota in the instant it arrives, so it never shows a reason.
    assert got == [
        (15, "team-b/b-train-2", "WaitingForQuota"),
        (20, "team-b/b-sweep", "WaitingForQuota"),
        (30, "team-b/b-train-2", None),
        (60, "team-b/b-sweep", None),
    ]
    assert run.reasons[0].message.startswith("couldn't assign flavors to pod set main: insufficient unused quota")


def test_without_the_flag_nothing_is_recorded_or_watched() -> None:
    inputs, _ = load_paths([demo_path()], None)
    sim = Simulation(inputs)
    run = sim.run()
    assert run.reasons == []
    assert sim.engine.reason_watch is None
    assert all(info.watch is None for info in sim.engine.workloads.values())


def test_a_blocked_workload_is_recorded_when_its_queue_stops(tmp_path) -> None:
    """A timed stop policy changes no workload directly: the engine marks every pending one."""
    f = tmp_path / "in.yaml"
    f.write_text("""\
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: f}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups: [{coveredResources: [cpu], flavors: [{name: f, resources: [{name: cpu, nominalQuota: 1}]}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: q, namespace: default}
spec: {clusterQueue: cq}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: q, namespace: default, annotations: {pykueue.dev/at: 5s}}
spec: {clusterQueue: cq, stopPolicy: Hold}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: big, namespace: default}
spec:
  queueName: q
  podSets: [{name: main, count: 1, template: {spec: {restartPolicy: Never, containers: [{name: c, image: x, resources: {requests: {cpu: "2"}}}]}}}]
""")
    inputs, problems = load_paths([str(f)], None)
    assert not problems
    run = Simulation(inputs, record_reasons=True).run()
    got = [(r.time_us // 1_000_000, r.reason) for r in run.reasons]
    assert got == [(0, "ExceedsMaxQuota"), (5, "Suspended")]


def test_simulate_report_uses_the_recorded_reasons(tmp_path, capsys) -> None:
    from pykueue.cli import main

    out = tmp_path / "r.html"
    assert main(["simulate", demo_path(), "--report", str(out), "-o", "json"]) == 0
    capsys.readouterr()
    html = out.read_text()
    assert "as the simulator recorded it after every instant" in html
    assert "does not record reasons over time" not in html
