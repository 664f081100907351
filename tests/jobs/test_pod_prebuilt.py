"""A single Pod naming a prebuilt Workload (``kueue.x-k8s.io/prebuilt-workload-name``), as upstream's pod
integration takes it: its Workload's name is the prebuilt one (``workloadName``), adopted with the Pod as
controller owner (``EnsurePrebuiltWorkloadOwnership``), never created; out of sync, it is finished
``OutOfSync`` (``ensurePrebuiltWorkloadInSync``)."""

from __future__ import annotations

import copy

from pykueue.jobs import prebuilt
from pykueue.jobs.framework import CreateWorkload, Note, Patch, WorkloadConditions
from pykueue.jobs.framework.workload import JOB_UID_LABEL, PREBUILT_WORKLOAD_LABEL
from pykueue.jobs.pod import groups as pods
from pykueue.jobs.pod.workload import workload_from_pod
from tests.jobs.pod_objects import ADMITTED, ASSIGNED, FLAVORS
from tests.jobs.pod_objects import managed_pod as _pod
from tests.jobs.writes import reconcile

PRE = {PREBUILT_WORKLOAD_LABEL: "pre"}


def _prebuilt(pod: dict, cpu: str = "1") -> dict:
    """The Workload someone made beforehand for ``pod``: named ``pre``, no owner yet."""
    shaped = copy.deepcopy(pod)
    shaped["spec"]["containers"][0]["resources"]["requests"]["cpu"] = cpu
    workload = workload_from_pod(shaped)
    workload["metadata"] = {"name": "pre", "namespace": "ns", "uid": "pre-uid", "resourceVersion": "3"}
    workload["status"] = {}
    return workload


def test_a_pod_names_its_prebuilt_workload() -> None:
    assert prebuilt.name_for(pods.Pod(_pod(labels=PRE))) == "pre"
    assert prebuilt.name_for(pods.Pod(_pod())) is None


def test_a_missing_prebuilt_workload_is_never_made_and_the_gated_pod_waits() -> None:
    actions = prebuilt.adopt(pods.Pod(_pod(labels=PRE)), None)
    assert actions is not None and [type(a) for a in actions] == [Note]  # gated: nothing to stop
    assert actions[0].fields["why"] == "missing"
    assert not any(isinstance(a, CreateWorkload) for a in actions)


def test_the_prebuilt_workload_is_adopted_with_the_pod_as_controller_then_runs_it() -> None:
    pod = _pod(labels=PRE)
    workload = _prebuilt(pod)
    (patch, _) = prebuilt.adopt(pods.Pod(pod), workload)
    assert isinstance(patch, Patch) and (patch.kind, patch.name) == ("Workload", "pre")
    (owner,) = patch.body["metadata"]["ownerReferences"]
    assert owner == {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "uid-p", "controller": True,
                     "blockOwnerDeletion": True}
    assert patch.body["metadata"]["labels"] == {JOB_UID_LABEL: "uid-p"}
    workload["metadata"]["ownerReferences"] = [owner]
    assert prebuilt.adopt(pods.Pod(pod), workload) is None  # adopted and in sync
    workload["status"] = {"conditions": list(ADMITTED), "admission": ASSIGNED}
    (release, _) = reconcile(pods.Pod(pod), workload, FLAVORS)
    assert isinstance(release, Patch) and release.kind == "Pod" and release.body["spec"]["schedulingGates"] is None


def test_a_prebuilt_workload_out_of_sync_with_its_pod_is_finished() -> None:
    pod = _pod(labels=PRE)
    workload = _prebuilt(pod, cpu="2")
    workload["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "uid-p",
                                                "controller": True}]
    (finish, _) = prebuilt.adopt(pods.Pod(pod), workload)  # gated: nothing to stop
    assert isinstance(finish, WorkloadConditions) and finish.conditions == (
        ("Finished", True, "OutOfSync", "The prebuilt workload is out of sync with its user job"),)


def test_a_prebuilt_workload_being_deleted_is_not_adopted() -> None:
    """Issue 53, item 12a: a deleted LeaderWorkerSet's group Workload, its owner gone and the garbage
    collector deleting it (its finalizer holds it), is never adopted by a Pod: adopted, it would outlive
    every owner, be finished OwnerNotFound and never be collected. The Pod waits as for a missing one."""
    pod = pods.Pod(_pod(labels=PRE))
    going = _prebuilt(pod.obj)
    going["metadata"]["deletionTimestamp"] = "2026-12-03T12:00:00Z"
    going["metadata"]["ownerReferences"] = [{"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
                                             "name": "infer", "uid": "lws-uid"}]
    actions = prebuilt.adopt(pod, going)
    assert actions is not None and [type(a) for a in actions] == [Note]
    assert actions[0].fields["why"] == "being deleted"
    going["metadata"].pop("deletionTimestamp")
    adopted = prebuilt.adopt(pod, going)
    assert adopted is not None and isinstance(adopted[0], Patch)  # not being deleted: adopted as before
