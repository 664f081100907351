"""MultiKueue for LeaderWorkerSets, after upstream's leaderworkerset_multikueue_adapter.go and the
wlReconciler's multi-workload path: each group's Workload names its LWS and index in annotations (the
adapter is found by them), every group's Workload must exist before any is dispatched, the lowest index
nominates workers and the others follow it to the worker it was admitted on; the worker's LWS carries the
origin and the manager's UID but no prebuilt label, names its groups' Workloads from that UID (the
copies it holds) and makes none of its own."""

from __future__ import annotations

from typing import Any

import pytest

from pykueue.controller.multikueue import adapters as adapters
from pykueue.engine import multikueue as mk
from pykueue.jobs.framework import CreateWorkload
from pykueue.jobs.leaderworkerset import workload as lws
from pykueue.jobs.leaderworkerset.multikueue import ADAPTER as LEADERWORKERSET

MARKED = {"kueue.x-k8s.io/pod-suspending-parent": lws.FRAMEWORK}


def make_lws(uid: str, labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None,
             replicas: int = 2) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "srv", "namespace": "ns", "uid": uid,
                            "labels": {"kueue.x-k8s.io/queue-name": "lq", **(labels or {})}}
    if annotations:
        meta["annotations"] = annotations
    template = {"metadata": {"annotations": dict(MARKED)},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}
    return {"apiVersion": lws.API_VERSION, "kind": lws.KIND, "metadata": meta,
            "spec": {"replicas": replicas, "leaderWorkerTemplate": {"size": 2, "workerTemplate": template}}}


def group(index: int, cluster: str | None = None, uid: str = "mgr-uid") -> dict[str, Any]:
    built = lws.workload_for_group(make_lws(uid), index)
    built["metadata"]["ownerReferences"][0]["uid"] = uid
    if cluster:
        built["status"] = {"clusterName": cluster}
    return built


def test_each_group_workload_names_its_owner_and_index() -> None:
    annotations = group(1)["metadata"]["annotations"]
    assert annotations[lws.OWNER_GVK_ANNOTATION] == "leaderworkerset.x-k8s.io/v1, Kind=LeaderWorkerSet"
    assert annotations[lws.OWNER_NAME_ANNOTATION] == "srv"
    assert annotations[lws.INDEX_ANNOTATION] == "1"


def test_the_adapter_is_found_by_the_owner_annotations() -> None:
    wl = group(0)
    owner = adapters.owner_of(wl)
    assert owner == {"apiVersion": lws.API_VERSION, "kind": lws.KIND, "name": "srv"}
    assert adapters.for_owner(owner) is LEADERWORKERSET
    assert adapters.index_of(wl) == 0
    wl["metadata"]["annotations"][lws.INDEX_ANNOTATION] = "x"
    assert adapters.index_of(wl) == -1


def test_the_workers_copy_has_origin_and_manager_uid_but_no_prebuilt_label() -> None:
    clone = LEADERWORKERSET.clone(make_lws("mgr-uid"), group(0)["metadata"]["name"], "origin-a")
    labels = clone["metadata"]["labels"]
    assert labels[mk.ORIGIN_LABEL] == "origin-a"
    assert mk.PREBUILT_WORKLOAD_LABEL not in labels
    assert clone["metadata"]["annotations"][lws.ORIGIN_UID_ANNOTATION] == "mgr-uid"
    assert clone["spec"]["replicas"] == 2
    assert LEADERWORKERSET.unmanaged(make_lws("u")) is None
    assert LEADERWORKERSET.mirrored(make_lws("u"), make_lws("v")) is None


def test_a_workers_copy_stands_for_every_group_of_the_managers_lws() -> None:
    remote = make_lws("wrk-uid", labels={mk.ORIGIN_LABEL: "o"}, annotations={lws.ORIGIN_UID_ANNOTATION: "mgr-uid"})
    assert LEADERWORKERSET.workloads_of(remote) == [group(0)["metadata"]["name"],
                                                             group(1)["metadata"]["name"]]
    assert LEADERWORKERSET.workloads_of(make_lws("x")) == []  # not MultiKueue's


def test_on_the_worker_the_copy_makes_no_workload_and_names_pods_from_the_manager_uid() -> None:
    remote = make_lws("wrk-uid", labels={mk.ORIGIN_LABEL: "o"}, annotations={lws.ORIGIN_UID_ANNOTATION: "mgr-uid"})
    assert lws.name_of(remote, 1) == group(1)["metadata"]["name"]
    assert not [a for a in lws.reconcile(remote, [], []) if isinstance(a, CreateWorkload)]
    local = make_lws("mgr-uid")
    assert len([a for a in lws.reconcile(local, [], []) if isinstance(a, CreateWorkload)]) == 2


def test_no_group_is_dispatched_before_every_group_workload_exists() -> None:
    assert adapters.component_step(group(0), [group(0)], 2) == adapters.Component(wait=True)


def test_the_lowest_index_nominates_and_the_others_wait_for_it() -> None:
    members = [group(0), group(1)]
    assert adapters.component_step(members[0], members, 2) == adapters.Component()
    assert adapters.component_step(members[1], members, 2) == adapters.Component(wait=True)


def test_the_others_follow_the_group_admitted_on_a_worker() -> None:
    members = [group(0, cluster="w2"), group(1), group(2)]
    assert adapters.component_step(members[1], members, 3) == adapters.Component(cluster="w2")


def test_groups_on_different_workers_are_an_error() -> None:
    members = [group(0, cluster="w1"), group(1, cluster="w2"), group(2)]
    with pytest.raises(ValueError, match="different clusters"):
        adapters.component_step(members[2], members, 3)


class _Store:
    def __init__(self, store: dict[str, Any]) -> None:
        self.store = store

    def get(self, key: str) -> dict[str, Any] | None:
        return self.store.get(key)


class _Kube:
    def __init__(self) -> None:
        self.created: list[str] = []
        self.patches: list[dict[str, Any]] = []

    async def create(self, res: Any, obj: dict[str, Any], namespace: str) -> None:
        self.created.append(obj["metadata"]["name"])

    async def merge_patch(self, res: Any, name: str, patch: dict[str, Any], namespace: str,
                          subresource: str | None = None) -> None:
        self.patches.append(patch)


def _follower_reconciled(second_cluster: str | None) -> tuple[dict[str, Any], Any, Any]:
    """The first group admitted through w2; the second reconciled (reserving on ``second_cluster``, if
    any): the second's patches and each worker's created copies."""
    import asyncio
    from types import SimpleNamespace

    from pykueue.controller.multikueue.workloads import MultiKueueWorkloads
    from pykueue.engine import model

    first, second = group(0, cluster="w2"), group(1)
    second["status"] = {"conditions": [{"type": "QuotaReserved", "status": "True"}],
                        "admissionChecks": [{"name": "mk", "state": "Pending"}]}
    if second_cluster is not None:
        second["status"]["clusterName"] = second_cluster
    workloads = {f"ns/{w['metadata']['name']}": w for w in (first, second)}
    informers = {
        "workloads": _Store(workloads),
        "leaderworkersets": _Store({"ns/srv": make_lws("mgr-uid")}),
        "admissionchecks": _Store({"mk": {"spec": {"controllerName": mk.CONTROLLER_NAME, "parameters": {
            "apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "mkc"}}}}),
        "multikueueconfigs": _Store({"mkc": {"spec": {"clusters": ["w1", "w2"]}}}),
    }
    remote = {c: SimpleNamespace(kube=_Kube(), informers={"workloads": _Store({})}) for c in ("w1", "w2")}
    workers = SimpleNamespace(workers=remote, origin="o", usable=remote.get)
    local = _Kube()
    rec = MultiKueueWorkloads(local, informers, workers, model.MultiKueue(),  # type: ignore[arg-type]
                              SimpleNamespace(emit=lambda *a: None))  # type: ignore[arg-type]
    asyncio.run(rec.reconcile(f"ns/{second['metadata']['name']}"))
    return second, local, remote


def test_the_reconciler_sends_a_follower_only_to_its_siblings_worker() -> None:
    second, local, remote = _follower_reconciled(None)
    assert remote["w2"].kube.created == [second["metadata"]["name"]]
    assert remote["w1"].kube.created == []
    assert local.patches[0]["status"] == {"nominatedClusterNames": ["w2"]}


def test_a_follower_already_reserving_on_another_worker_is_not_nominated() -> None:
    """Its clusterName (immutable) names w1 while its sibling runs on w2: no nomination patch (the CRD
    refuses clusterName and nominatedClusterNames together, and the refusal was retried at once, a hot
    loop that starved the manager) and no copy anywhere."""
    _, local, remote = _follower_reconciled("w1")
    assert local.patches == []
    assert remote["w1"].kube.created == [] and remote["w2"].kube.created == []
