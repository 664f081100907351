"""The tier 1 cluster with pykueue's generated CRDs, for the tests of what the API server itself enforces."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pykueue.devcluster.cluster import DevCluster
from pykueue.manifests import crds


@pytest.fixture(scope="module")
def crd_cluster(control_plane: DevCluster) -> Iterator[DevCluster]:
    """The cluster with the generated CRDs installed and established."""
    control_plane.kubectl(
        "apply", "--server-side", "--force-conflicts", "--field-manager=pykueue-crds", "-f", "-",
        input=crds.to_yaml(crds.crds()),
    )
    control_plane.wait_for("Established", "crd", "--all", timeout=60)
    yield control_plane
