"""Session fixtures for the tests that run on a real Kubernetes control plane.

The clusters start only when a test asks for one. Their binaries are built on first use (see
`pykueue.devcluster.binaries`); when that cannot happen the run stops with one line that says what to
install, instead of skipping: CI must never pass without having run the cluster tests.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from pykueue.devcluster import binaries
from pykueue.devcluster.cluster import DevCluster

# Nodes of the session's tier 2 cluster: plain ones, and a GPU flavor's nodes as seed 001 labels them.
E2E_NODES = [
    {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "plain-0"}},
    {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "plain-1"}},
    {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "gpu-h100-0", "labels": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}},
        "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]},
        "status": {"capacity": {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": "8"}},
    },
]


def _binaries() -> None:
    try:
        binaries.ensure()
    except binaries.BuildError as exc:
        pytest.exit(f"pykueue: the cluster tests cannot run: {exc}", returncode=4)


def start_cluster(factory: pytest.TempPathFactory, tier: int, nodes=None) -> Iterator[DevCluster]:
    _binaries()
    started = time.monotonic()
    cluster = DevCluster(factory.mktemp(f"tier{tier}-cluster"), tier=tier)
    cluster.start(nodes)
    print(f"\ntier {tier} control plane ready in {time.monotonic() - started:.1f} s at {cluster.directory}")
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevCluster]:
    """Tier 1: etcd and kube-apiserver, RBAC and admission webhooks on."""
    yield from start_cluster(tmp_path_factory, 1)


@pytest.fixture(scope="session")
def e2e_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevCluster]:
    """Tier 2: plus controller manager, scheduler and kwok faking `E2E_NODES`."""
    yield from start_cluster(tmp_path_factory, 2, E2E_NODES)
