"""MultiKueue for StatefulSets, after upstream's statefulset_multikueue_adapter.go and GetOwnerUID: the
manager hands a StatefulSet over as it is (no managedBy to check), the worker's copy carries the
prebuilt Workload's name, the origin and the manager's UID, nothing is mirrored back, and on the worker
that copy is named after the manager's StatefulSet and makes no Workload of its own."""

from __future__ import annotations

from typing import Any

from pykueue.controller.multikueue import adapters as adapters
from pykueue.jobs import registry
from pykueue.jobs.framework import CreateWorkload, Patch
from pykueue.jobs.pod import groups as pods
from pykueue.jobs.statefulset import webhook as statefulset_webhook
from pykueue.jobs.statefulset import workload as statefulset
from pykueue.jobs.statefulset.multikueue import ADAPTER as STATEFULSET

MARKED = {"kueue.x-k8s.io/pod-suspending-parent": "statefulset"}


def sts(uid: str, labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "web", "namespace": "ns", "uid": uid, "resourceVersion": "3",
                            "labels": {"kueue.x-k8s.io/queue-name": "lq", **(labels or {})}}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": meta,
            "spec": {"replicas": 2, "serviceName": "web", "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}, "annotations": dict(MARKED)},
                                  "spec": {"containers": [{"name": "c"}]}}},
            "status": {"replicas": 2, "readyReplicas": 0}}


def test_a_statefulset_owner_has_an_adapter_of_its_own() -> None:
    found = adapters.for_owner({"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web"})
    assert found is STATEFULSET
    assert adapters.for_owner({"apiVersion": "apps/v1", "kind": "Deployment"}) is None  # its Pods own theirs


def test_a_statefulset_is_always_handed_over_and_nothing_comes_back() -> None:
    local = sts("mgr-uid")
    assert STATEFULSET.unmanaged(local) is None
    remote = sts("wrk-uid")
    remote["status"] = {"replicas": 2, "readyReplicas": 2}
    assert STATEFULSET.mirrored(local, remote) is None
    assert STATEFULSET.given_up(local) is None


def test_the_workers_copy_names_the_workload_the_origin_and_the_managers_uid() -> None:
    clone = STATEFULSET.clone(sts("mgr-uid"), "statefulset-web-abc", "mk-manager")
    assert clone == {
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "web", "namespace": "ns",
                     "labels": {"kueue.x-k8s.io/queue-name": "lq",
                                "kueue.x-k8s.io/prebuilt-workload-name": "statefulset-web-abc",
                                "kueue.x-k8s.io/multikueue-origin": "mk-manager"},
                     "annotations": {"kueue.x-k8s.io/multikueue-origin-uid": "mgr-uid"}},
        "spec": sts("x")["spec"]}


def test_the_workers_copy_is_named_after_the_managers_statefulset() -> None:
    manager = sts("mgr-uid")
    copy = sts("wrk-uid", labels={"kueue.x-k8s.io/multikueue-origin": "mk-manager"},
               annotations={"kueue.x-k8s.io/multikueue-origin-uid": "mgr-uid"})
    assert statefulset.name_of(copy) == statefulset.name_of(manager) == statefulset.workload_name("web", "mgr-uid")
    assert statefulset.name_of(copy) != statefulset.workload_name("web", "wrk-uid")
    # the annotation alone (no origin label) is not a MultiKueue copy: its own UID names it
    assert statefulset.name_of(sts("wrk-uid", annotations={"kueue.x-k8s.io/multikueue-origin-uid": "mgr-uid"})) \
        == statefulset.workload_name("web", "wrk-uid")


def test_the_workers_copy_makes_no_workload_of_its_own() -> None:
    copy = copy_of_manager()
    assert not any(isinstance(a, CreateWorkload) for a in statefulset.reconcile(copy, None, []))
    assert any(isinstance(a, CreateWorkload) for a in statefulset.reconcile(sts("mgr-uid"), None, []))


def copy_of_manager() -> dict[str, Any]:
    return sts("wrk-uid", labels={"kueue.x-k8s.io/multikueue-origin": "mk-manager"},
               annotations={"kueue.x-k8s.io/multikueue-origin-uid": "mgr-uid"})


def test_the_copys_template_names_the_managers_group_when_it_is_created() -> None:
    """A Pod's group label is immutable once set, so the worker's StatefulSet webhook writes the group
    (known from the origin UID) into the copy's template; a StatefulSet of the worker's own gets none."""
    right = statefulset.workload_name("web", "mgr-uid")
    ops = statefulset_webhook.statefulset_defaults(copy_of_manager(), manage_without_queue_name=False)
    added = {op["path"]: op["value"] for op in ops}
    assert added["/spec/template/metadata/labels/kueue.x-k8s.io~1pod-group-name"] == right
    assert added["/spec/template/metadata/labels/kueue.x-k8s.io~1prebuilt-workload-name"] == right
    own = statefulset_webhook.statefulset_defaults(sts("wrk-uid"), manage_without_queue_name=False)
    assert not any("pod-group-name" in op["path"] or "prebuilt" in op["path"] for op in own)


def test_a_replica_created_in_the_copys_group_stays_in_it() -> None:
    right = statefulset.workload_name("web", "mgr-uid")
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "web-0", "namespace": "ns",
        "labels": {"kueue.x-k8s.io/pod-group-name": right, "kueue.x-k8s.io/prebuilt-workload-name": right,
                   "kueue.x-k8s.io/queue-name": "lq"},
        "annotations": dict(MARKED),
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "wrk-uid",
                             "controller": True}]},
        "spec": {"containers": [{"name": "c"}]}}
    assert statefulset.pod_marks(pod) == {}
    ops = pods.pod_defaults(pod, registry.enabled(["statefulset"]), manage_without_queue_name=False, owner_marks=statefulset.pod_marks)
    assert not any("pod-group-name" in op["path"] or "prebuilt" in op["path"] for op in ops)
    # the reconciler finds nothing to relabel
    assert not [a for a in statefulset.reconcile(copy_of_manager(), None, [pod]) if isinstance(a, Patch)]
    # a replica of a StatefulSet of the worker's own is still named by the Pod webhook after its owner
    del pod["metadata"]["labels"]["kueue.x-k8s.io/pod-group-name"]
    own = statefulset.workload_name("web", "wrk-uid")
    assert statefulset.pod_marks(pod) == {"kueue.x-k8s.io/pod-group-name": own,
                                          "kueue.x-k8s.io/prebuilt-workload-name": own}
