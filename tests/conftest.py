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


# What a test needs, said by its markers so that a selection runs exactly that: a test is marked by
# the fixtures it uses (or by its folder, for the e2e and node tiers whose modules start clusters of
# their own); a test that starts a cluster without a marker fails (``_unmarked_clusters_refused``), so
# ``-m "not cluster and not e2e and not binaries"`` starts nothing and needs no binary.
FIXTURE_MARKERS = {"control_plane": "cluster", "crd_cluster": "cluster", "e2e_cluster": "e2e", "kueue": "e2e",
                   "helm_bin": "binaries", "workdir": "e2e"}  # workdir: a doc block that runs `pykueue dev-cluster up`
FOLDER_MARKERS = {"e2e": "e2e", "node": "e2e", "cluster": "cluster"}
CLUSTER_MARKERS = ("cluster", "e2e")


@pytest.hookimpl(tryfirst=True)  # before `-m` selects by them
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        wanted = {FIXTURE_MARKERS[name] for name in getattr(item, "fixturenames", ()) if name in FIXTURE_MARKERS}
        parts = item.path.parts
        if "tests" in parts and (folder := parts[parts.index("tests") + 1]) in FOLDER_MARKERS:
            wanted.add(FOLDER_MARKERS[folder])
        for name in sorted(wanted - {m.name for m in item.iter_markers()}):
            item.add_marker(name)
        if not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group(xdist_group(item)))


def pytest_collection_finish(session: pytest.Session) -> None:
    """On an xdist worker with ``--dist loadgroup``, every test's id carries its group (``@NAME``), which is
    how xdist's scheduler keeps a group on one worker; without it the groups split silently (pytest 9.2
    with xdist 3.8: pytest-dev/pytest-xdist#1386), so the run stops here instead."""
    if getattr(session.config.option, "loadgroup", False) and session.items and "@" not in session.items[0].nodeid:
        raise pytest.UsageError(f"--dist loadgroup: {session.items[0].nodeid} carries no xdist_group in its id, "
                                "so the groups would split across workers (see pyproject.toml's pytest pin)")


# Under pytest-xdist (`-n 2 --dist loadgroup`), what runs on one worker, one after another: a module
# whole (its module-scoped clusters and controllers start once), every user of a shared set together
# (the MultiKueue clusters; the integrations controller and its addons), and the tests that use what
# the machine has one of together: tier 3's node (its bridge, iptables chains and kubelet), the doc
# blocks (the controller's default ports), the live benches (wall-clock figures).
MACHINE_WIDE = ("tests/node/", "tests/cluster/test_cluster_perf")


def xdist_group(item: pytest.Item) -> str:
    names = getattr(item, "fixturenames", ())
    if "multikueue_clusters" in names:
        return "multikueue"
    if "integrations_kueue" in names:
        return "integrations"
    path = item.nodeid.split("::", 1)[0]
    if "workdir" in names or path.startswith(MACHINE_WIDE):
        return "machine"
    return path


@pytest.fixture(autouse=True)
def _unmarked_clusters_refused(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if any(request.node.get_closest_marker(name) for name in CLUSTER_MARKERS):
        return

    def refused(self: DevCluster, *args: object, **kwargs: object) -> DevCluster:
        raise AssertionError(f"{request.node.nodeid} starts a cluster but is marked neither cluster nor e2e")

    monkeypatch.setattr(DevCluster, "start", refused)


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
