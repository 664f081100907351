"""Tier 2 runs Jobs for real: controller manager, scheduler and kwok's fake kubelets."""

from __future__ import annotations

import datetime
import json

import pytest
import yaml

from pykueue.devcluster.cluster import DevCluster

pytestmark = pytest.mark.e2e


def _job(name: str, namespace: str, *, runs_for: str = "0s", pod_spec: dict | None = None,
         count: int = 2) -> str:
    spec = {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox",
                                                      "resources": {"requests": {"cpu": "1"}}}]}
    spec.update(pod_spec or {})
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "parallelism": count,
            "completions": count,
            "template": {
                # kwok's pod-complete stage reads how long the pod runs from this annotation
                "metadata": {"annotations": {"pod-complete.stage.kwok.x-k8s.io/delay": runs_for}},
                "spec": spec,
            },
        },
    }
    return yaml.safe_dump(job)


def _time(stamp: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00"))


@pytest.fixture
def namespace(e2e_cluster: DevCluster, request: pytest.FixtureRequest):
    name = request.node.name.replace("_", "-").lower()[:50]
    e2e_cluster.kubectl("create", "namespace", name)
    yield name
    e2e_cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)


def test_job_runs_to_complete_on_kwok_nodes(e2e_cluster: DevCluster, namespace: str) -> None:
    e2e_cluster.kubectl("apply", "-f", "-", input=_job("smoke", namespace, runs_for="3s"))
    e2e_cluster.kubectl("wait", "--for=condition=Complete", "job/smoke", "-n", namespace, "--timeout=120s",
                        timeout=150)
    pods = json.loads(e2e_cluster.kubectl("get", "pods", "-n", namespace, "-o", "json").stdout)["items"]
    assert len(pods) == 2
    for pod in pods:
        assert pod["status"]["phase"] == "Succeeded"
        assert pod["spec"]["nodeName"] in {"plain-0", "plain-1"}  # the GPU node's taint keeps them off
        terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
        assert terminated["reason"] == "Completed"
        ran = _time(terminated["finishedAt"]) - _time(pod["status"]["startTime"])
        assert ran >= datetime.timedelta(seconds=2)  # the 3 s the test chose (timestamps have 1 s steps)


def test_node_labels_and_taints_come_from_the_test(e2e_cluster: DevCluster, namespace: str) -> None:
    gpu = {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}}
    tolerating = dict(gpu, tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}])
    e2e_cluster.kubectl("apply", "-f", "-", input=_job("tolerates", namespace, pod_spec=tolerating, count=1))
    e2e_cluster.kubectl("apply", "-f", "-", input=_job("intolerant", namespace, pod_spec=gpu, count=1))
    e2e_cluster.kubectl("wait", "--for=condition=Complete", "job/tolerates", "-n", namespace, "--timeout=120s",
                        timeout=150)
    pods = json.loads(e2e_cluster.kubectl("get", "pods", "-n", namespace, "-o", "json").stdout)["items"]
    by_job = {p["metadata"]["labels"]["job-name"]: p for p in pods}
    assert by_job["tolerates"]["spec"]["nodeName"] == "gpu-h100-0"
    e2e_cluster.kubectl(
        "wait", "--for=jsonpath={.status.conditions[0].reason}=Unschedulable",
        f"pod/{by_job['intolerant']['metadata']['name']}", "-n", namespace, "--timeout=60s", timeout=90,
    )


def test_nodes_added_by_a_test_take_pods(e2e_cluster: DevCluster, namespace: str) -> None:
    e2e_cluster.add_nodes([{"apiVersion": "v1", "kind": "Node",
                            "metadata": {"name": "late-node", "labels": {"pool": "late"}}}])
    e2e_cluster.kubectl("apply", "-f", "-",
                        input=_job("late", namespace, pod_spec={"nodeSelector": {"pool": "late"}}, count=1))
    e2e_cluster.kubectl("wait", "--for=condition=Complete", "job/late", "-n", namespace, "--timeout=120s",
                        timeout=150)
    pod = json.loads(e2e_cluster.kubectl("get", "pods", "-n", namespace, "-o", "json").stdout)["items"][0]
    assert pod["spec"]["nodeName"] == "late-node"


def test_garbage_collector_and_namespace_controller(e2e_cluster: DevCluster) -> None:
    e2e_cluster.kubectl("create", "namespace", "gc-check")
    e2e_cluster.kubectl("apply", "-f", "-", input=_job("held", "gc-check", runs_for="1h", count=1))
    e2e_cluster.kubectl("wait", "--for=jsonpath={.status.active}=1", "job/held", "-n", "gc-check",
                        "--timeout=60s", timeout=90)
    e2e_cluster.kubectl("delete", "job", "held", "-n", "gc-check", "--cascade=background")
    e2e_cluster.kubectl("wait", "--for=delete", "pods", "--all", "-n", "gc-check", "--timeout=60s", timeout=90)
    e2e_cluster.kubectl("delete", "namespace", "gc-check", "--timeout=60s", timeout=90)
    assert e2e_cluster.kubectl("get", "namespace", "gc-check", check=False).returncode != 0
