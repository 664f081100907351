"""A StatefulSet's Pod that is being deleted or has ended loses Kueue's finalizer, as upstream's
StatefulSet Pod reconciler removes it on the Pod's own update, whether or not the StatefulSet is still
there. Found by `tests/e2e/test_pod_integration.py::test_a_replaced_statefulset_pod_keeps_the_reservation`
failing under load: the deleted replica's update did not queue its StatefulSet (only a Pod's creation
did), so the finalizer went only if a later StatefulSet event came after the cache saw the deletion;
the replacement, which takes the same name, never came."""

from __future__ import annotations

import asyncio
from typing import Any

from pykueue.controller import manager
from pykueue.controller.jobs.group_owners import GroupOwnerKeys, GroupOwnerReconciler
from pykueue.engine import model
from pykueue.jobs.statefulset import INTEGRATION
from pykueue.jobs.statefulset import workload as statefulset
from pykueue.kube.informer import ADDED, DELETED, MODIFIED
from tests.jobs.recorded import Writes, finalizer_patches

FINALIZER = "kueue.x-k8s.io/managed"
GONE = "2030-01-01T00:00:00Z"


def sts_pod(name: str, *, owner: str = "web", uid: str = "sts-1", deleting: bool = False, phase: str = "Running",
            finalizers: tuple[str, ...] = (FINALIZER,), managed: bool = True) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name, "namespace": "ml", "uid": f"uid-{name}", "resourceVersion": "7",
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": owner, "uid": uid,
                             "controller": True}],
        "annotations": {statefulset.SUSPENDED_BY_PARENT: statefulset.FRAMEWORK} if managed else {},
        "finalizers": list(finalizers)}
    if deleting:
        meta["deletionTimestamp"] = GONE
    return {"metadata": meta, "spec": {"nodeName": "n1", "containers": [{"name": "c"}]}, "status": {"phase": phase}}




def test_the_ending_pods_of_a_gone_statefulset_lose_the_finalizer() -> None:
    """StatefulSet ml/web is gone. web-0 is being deleted (someone else's finalizer stays), web-1 has
    Failed, web-2 still runs (it keeps the finalizer), db-0 belongs to another StatefulSet and web-3 was
    never Kueue's (no suspended-by-parent mark): only web-0 and web-1 are patched."""
    store = {f"ml/{p['metadata']['name']}": p for p in (
        sts_pod("web-0", deleting=True, finalizers=(FINALIZER, "example.com/keep")),
        sts_pod("web-1", phase="Failed"),
        sts_pod("web-2"),
        sts_pod("db-0", owner="db", deleting=True),
        sts_pod("web-3", deleting=True, managed=False))}
    writes = Writes()
    reconciler = GroupOwnerReconciler(GroupOwnerKeys(INTEGRATION, {}, store), writes)  # type: ignore[arg-type]
    asyncio.run(reconciler.reconcile("ml/web"))
    assert finalizer_patches(writes.done) == {"web-0": ["example.com/keep"], "web-1": None}


def test_every_pod_update_queues_its_statefulset_once_the_integration_runs() -> None:
    """Upstream's StatefulSet Pod reconciler acts on a Pod's create and update: a replica being deleted
    queues its StatefulSet (before: only a Pod's creation did); a Pod's deletion does not; nothing is
    queued before the StatefulSet informer runs."""
    ctl = manager.Controller(object(), model.Config(), clock=lambda: 1_800_000_000.0)  # type: ignore[arg-type]
    ctl.on_pod(MODIFIED, sts_pod("web-1"), sts_pod("web-1", deleting=True))
    assert len(ctl.group_work["StatefulSet"]) == 0  # the integration is not running
    ctl.group_keys["StatefulSet"].running = True
    ctl.on_pod(DELETED, sts_pod("web-1", deleting=True), None)
    assert len(ctl.group_work["StatefulSet"]) == 0
    ctl.on_pod(MODIFIED, sts_pod("web-1"), sts_pod("web-1", deleting=True))
    ctl.on_pod(ADDED, None, sts_pod("db-0", owner="db"))
    assert sorted(ctl.group_work["StatefulSet"]._queued) == ["ml/db", "ml/web"]
