"""A RayService read by the loader (``simulate``, ``validate``): one Workload from its
``spec.rayClusterConfig`` with the pod sets the controller builds, only while ``ray.io/rayservice`` is
in integrations.frameworks; problems at the RayService's own field paths."""

from __future__ import annotations

from .helpers import Loader
from .test_integration_kinds import SETUP, TEMPLATE, config, names

RAYSERVICE = ("apiVersion: ray.io/v1\nkind: RayService\nmetadata:\n  name: rs\n  labels: {kueue.x-k8s.io/queue-name: q}\n"
              f"spec:\n  rayClusterConfig:\n    headGroupSpec: {{template: {TEMPLATE}}}\n"
              f"    workerGroupSpecs: [{{groupName: Serve, replicas: 2, template: {TEMPLATE}}}]\n")


def test_a_rayservice_is_one_workload_with_head_and_worker_pod_sets(load: Loader) -> None:
    """head x1 and serve x2 (the group name lower-cased): 3 cpu of the 4."""
    inputs, problems = load("---\n".join([config("ray.io/rayservice"), SETUP, RAYSERVICE]))
    assert problems == [] and names(inputs) == [("RayService", "rs")]
    assert [(ps.name, ps.count) for ps in inputs.workloads[0].workload.pod_sets] == [("head", 1), ("serve", 2)]


def test_a_rayservice_is_not_read_without_its_framework(load: Loader) -> None:
    inputs, _ = load("---\n".join([config("ray.io/raycluster"), SETUP, RAYSERVICE]))
    assert names(inputs) == []


def test_a_rayservices_bad_worker_group_is_reported_at_its_own_path(load: Loader) -> None:
    bad = RAYSERVICE.replace("groupName: Serve", "groupName: head")
    _, problems = load("---\n".join([config("ray.io/rayservice"), SETUP, bad]))
    assert [(p.path, p.message) for p in problems] == [
        ("spec.rayClusterConfig.workerGroupSpecs[0].groupName", 'Forbidden: "head" is reserved for the head group')]
