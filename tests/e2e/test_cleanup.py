"""The namespace fixture's cleanup of cluster-scoped objects: only those named after the namespace go."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import Kueue, delete_named_after, eventually
from tests.e2e.objects import cluster_queue, priority_classes

pytestmark = pytest.mark.e2e


def test_objects_named_after_the_namespace_are_deleted_and_no_others(kueue: Kueue) -> None:
    base = "cleanup-probe"
    kueue.apply(cluster_queue(base, "1") + "---" + cluster_queue(f"{base}-b", "1")
                + "---" + cluster_queue(f"{base}x", "1") + "---" + priority_classes(base))
    deleted = delete_named_after(kueue.cluster, base)
    assert sorted(deleted) == sorted([
        f"clusterqueue.kueue.x-k8s.io/{base}", f"clusterqueue.kueue.x-k8s.io/{base}-b",
        f"priorityclass.scheduling.k8s.io/{base}-high", f"priorityclass.scheduling.k8s.io/{base}-low"])
    eventually(lambda: kueue.get("clusterqueue", base) is None and kueue.get("clusterqueue", f"{base}-b") is None
               and kueue.get("priorityclass", f"{base}-low") is None, what="the named objects gone")
    assert kueue.get("clusterqueue", f"{base}x") is not None  # a name that merely starts the same stays
    delete_named_after(kueue.cluster, f"{base}x")
