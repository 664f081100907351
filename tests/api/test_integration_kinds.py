"""Deployments, StatefulSets, RayClusters and RayJobs read by the loader: managed or not, named,
validated with their own field paths, as upstream's integrations treat them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from pykueue.api.references import all_warnings

from .helpers import Loader, write

ROOT = Path(__file__).resolve().parents[2]
SETUP = (
    "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: f}\n---\n"
    "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: cq}\nspec:\n  namespaceSelector: {}\n"
    "  resourceGroups:\n  - coveredResources: [cpu]\n    flavors: [{name: f, resources: [{name: cpu, nominalQuota: 4}]}]\n"
    "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: q, namespace: default}\n"
    "spec: {clusterQueue: cq}\n"
)
TEMPLATE = "{spec: {containers: [{name: c, image: x, resources: {requests: {cpu: '1'}}}]}}"


def config(*frameworks: str) -> str:
    listed = ", ".join(f'"{f}"' for f in frameworks)
    return f"apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nintegrations: {{frameworks: [{listed}]}}\n"


def serving(kind: str, name: str = "web", replicas: int = 2, namespace: str = "default", annotations: str = "{}") -> str:
    return (
        f"apiVersion: apps/v1\nkind: {kind}\nmetadata:\n  name: {name}\n  namespace: {namespace}\n"
        f"  labels: {{kueue.x-k8s.io/queue-name: q}}\n  annotations: {annotations}\n"
        f"spec:\n  replicas: {replicas}\n  template: {TEMPLATE}\n"
    )


def pod(name: str) -> str:
    return (f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  labels: {{kueue.x-k8s.io/queue-name: q}}\n"
            "spec: {containers: [{name: c, image: x, resources: {requests: {cpu: '1'}}}]}\n")


def names(inputs: object) -> list[tuple[str, str]]:
    return [(s.workload.kind, s.workload.name) for s in inputs.workloads]  # type: ignore[attr-defined]


def test_deployment_replicas_and_statefulset_group_become_workloads(load: Loader) -> None:
    inputs, problems = load("---\n".join([config("deployment", "statefulset"), SETUP, serving("Deployment"),
                                          serving("StatefulSet", "db", 3)]))
    assert problems == []
    assert names(inputs) == [("Deployment", "web-0"), ("Deployment", "web-1"), ("StatefulSet", "db")]
    group = inputs.workloads[2].workload
    assert [ps.count for ps in group.pod_sets] == [3]


def test_deployment_and_statefulset_enable_the_pod_integration(load: Loader) -> None:
    """upstream's ImplicitlyEnabledFrameworkNames: listing deployment turns pod on as well."""
    inputs, problems = load("---\n".join([config("deployment"), SETUP, pod("p")]))
    assert problems == [] and names(inputs) == [("Pod", "p")]
    inputs, problems = load("---\n".join([config("batch/job"), SETUP, pod("p")]))
    assert problems == [] and names(inputs) == []


def test_system_namespaces_are_left_alone(load: Loader) -> None:
    inputs, problems = load("---\n".join([config("deployment", "statefulset"), SETUP,
                                          serving("Deployment", namespace="kube-system"),
                                          serving("StatefulSet", namespace="kueue-system")]))
    assert problems == [] and names(inputs) == []


def test_annotations_apply_to_every_replica(load: Loader) -> None:
    inputs, problems = load("---\n".join([config("deployment"), SETUP,
                                          serving("Deployment", annotations="{pykueue.dev/arrival: 5s, pykueue.dev/runtime: 1m}")]))
    assert problems == []
    assert [(s.arrival, s.runtime) for s in inputs.workloads] == [(5.0, 60.0), (5.0, 60.0)]


def test_a_replica_named_as_another_workload_is_a_duplicate(load: Loader) -> None:
    _, problems = load("---\n".join([config("deployment"), SETUP, pod("web-1"), serving("Deployment")]))
    assert [(p.kind, p.name, p.path) for p in problems] == [("Deployment", "web-1", "metadata.name")]
    assert "would be the same workload as Pod default/web-1" in problems[0].message


def test_a_deployment_cannot_change_while_the_clock_runs(load: Loader) -> None:
    changed = serving("Deployment", annotations="{pykueue.dev/at: 10s}")
    _, problems = load("---\n".join([config("deployment"), SETUP, serving("Deployment"), changed]))
    assert [p.path for p in problems] == ["metadata.annotations[pykueue.dev/at]"]
    assert problems[0].message.startswith("a Deployment cannot change while the clock runs")


def test_no_replicas_queue_nothing_and_validate_warns(load: Loader) -> None:
    inputs, problems = load("---\n".join([config("deployment", "statefulset"), SETUP,
                                          serving("Deployment", replicas=0), serving("StatefulSet", "db", 0)]))
    assert problems == [] and names(inputs) == []
    assert [(w.kind, w.path, w.message) for w in all_warnings(inputs)] == [
        ("Deployment", "spec.replicas", "replicas is 0: no Pod is created, so nothing is queued"),
        ("StatefulSet", "spec.replicas", "replicas is 0: no Pod is created, so nothing is queued"),
    ]


def test_a_rayjob_on_an_existing_cluster_is_not_managed(load: Loader) -> None:
    rayjob = ("apiVersion: ray.io/v1\nkind: RayJob\nmetadata:\n  name: rj\n  labels: {kueue.x-k8s.io/queue-name: q}\n"
              "spec: {clusterSelector: {ray.io/cluster: shared}}\n")
    inputs, problems = load("---\n".join([config("ray.io/rayjob"), SETUP, rayjob]))
    assert problems == [] and names(inputs) == []


def test_validate_names_each_missing_framework_and_each_bad_field(tmp_path: Path) -> None:
    raycluster = ("apiVersion: ray.io/v1\nkind: RayCluster\nmetadata:\n  name: rc\n  labels: {kueue.x-k8s.io/queue-name: q}\n"
                  f"spec:\n  headGroupSpec: {{template: {TEMPLATE}}}\n"
                  f"  workerGroupSpecs: [{{groupName: head, template: {TEMPLATE}}}]\n")
    unmanaged = write(tmp_path, "---\n".join([SETUP, serving("Deployment"), serving("StatefulSet", "db"), raycluster]),
                      "unmanaged.yaml")
    proc = subprocess.run([sys.executable, "-m", "pykueue.cli", "validate", str(unmanaged)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0
    assert [line.split(": ", 3)[3] for line in proc.stderr.splitlines()] == [
        f'metadata.labels[kueue.x-k8s.io/queue-name]: the Configuration\'s integrations.frameworks does not enable "{f}": '
        f"Kueue does not manage this {kind}"
        for f, kind in (("deployment", "Deployment"), ("statefulset", "StatefulSet"), ("ray.io/raycluster", "RayCluster"))
    ]
    managed = write(tmp_path, "---\n".join([config("ray.io/raycluster"), SETUP, raycluster]), "managed.yaml")
    proc = subprocess.run([sys.executable, "-m", "pykueue.cli", "validate", str(managed)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert (proc.returncode, proc.stdout) == (2, "")
    line = managed.read_text().splitlines().index(f"  workerGroupSpecs: [{{groupName: head, template: {TEMPLATE}}}]") + 1
    assert proc.stderr.splitlines() == [
        f'{managed}:{line}: RayCluster default/rc: spec.workerGroupSpecs[0].groupName: Forbidden: "head" is reserved '
        "for the head group"
    ]


def test_a_missing_priority_class_is_reported_where_the_object_names_it(load: Loader) -> None:
    worker = "{spec: {priorityClassName: nope, containers: [{name: c, image: x, resources: {requests: {cpu: '1'}}}]}}"
    rayjob = ("apiVersion: ray.io/v1\nkind: RayJob\nmetadata:\n  name: rj\n  labels: {kueue.x-k8s.io/queue-name: q}\n"
              f"spec:\n  shutdownAfterJobFinishes: true\n  rayClusterSpec:\n    headGroupSpec: {{template: {TEMPLATE}}}\n"
              f"    workerGroupSpecs: [{{groupName: w, template: {worker}}}]\n")
    sts = serving("StatefulSet", "db").replace("template: {spec: {", "template: {spec: {priorityClassName: nope, ")
    _, problems = load("---\n".join([config("ray.io/rayjob", "statefulset"), SETUP, rayjob, sts]))
    assert [(p.kind, p.path, p.message) for p in problems] == [
        ("RayJob", "spec.rayClusterSpec.workerGroupSpecs[0].template.spec.priorityClassName",
         'PriorityClass "nope" not found'),
        ("StatefulSet", "spec.template.spec.priorityClassName", 'PriorityClass "nope" not found'),
    ]
