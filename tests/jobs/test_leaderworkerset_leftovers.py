"""LeaderWorkerSet details upstream's integration has (v0.17 source): the slice-size annotation may
not exceed its template's pod-set count (``ValidateSliceSizeAnnotationUpperBound``, its webhook test
"slice size larger than number of podsets"), and a group's Workload carries the LWS's labels named
in ``integrations.labelKeysToCopy`` (``NewGroupWorkload(..., labelKeysToCopy)``)."""

from __future__ import annotations

from typing import Any

from pykueue.jobs.framework import CreateWorkload
from pykueue.jobs.leaderworkerset import workload as lws
from tests.jobs.test_leaderworkerset import an_lws

SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
TOPOLOGY = {"kueue.x-k8s.io/podset-required-topology": "cloud.com/block",
            "kueue.x-k8s.io/podset-slice-required-topology": "cloud.com/block"}


def sliced(leader: str, worker: str, size: int = 4) -> dict[str, Any]:
    obj = an_lws(size=size)
    template = obj["spec"]["leaderWorkerTemplate"]
    template["leaderTemplate"]["metadata"]["annotations"].update({**TOPOLOGY, SLICE_SIZE: leader})
    template["workerTemplate"]["metadata"]["annotations"].update({**TOPOLOGY, SLICE_SIZE: worker})
    return obj


def test_a_slice_larger_than_its_pod_set_is_refused() -> None:
    errors = [f"{e.path}: {e.message}" for e in lws.validate_create(sliced("2", "20"))]
    assert errors == [
        f'spec.leaderWorkerTemplate.leaderTemplate.metadata.annotations[{SLICE_SIZE}]: Invalid value: "2": '
        "must not be greater than pod set count 1",
        f'spec.leaderWorkerTemplate.workerTemplate.metadata.annotations[{SLICE_SIZE}]: Invalid value: "20": '
        "must not be greater than pod set count 3"]
    assert lws.validate_create(sliced("1", "3")) == []


def test_without_a_leader_the_workers_bound_is_the_whole_size() -> None:
    obj = an_lws(leader=False, size=4)
    obj["spec"]["leaderWorkerTemplate"]["workerTemplate"]["metadata"]["annotations"].update(
        {**TOPOLOGY, SLICE_SIZE: "4"})
    assert lws.validate_create(obj) == []
    obj["spec"]["leaderWorkerTemplate"]["workerTemplate"]["metadata"]["annotations"][SLICE_SIZE] = "5"
    assert [e.message for e in lws.validate_create(obj)] == [
        'Invalid value: "5": must not be greater than pod set count 4']


def test_a_groups_workload_copies_the_configured_labels() -> None:
    obj = an_lws()
    obj["metadata"]["labels"].update({"team": "search", "cost-center": "42", "other": "x"})
    created = [a.manifest for a in lws.reconcile(obj, [], [], ("team", "cost-center"))
               if isinstance(a, CreateWorkload)]
    assert len(created) == 2
    for workload in created:
        labels = workload["metadata"].get("labels") or {}
        assert (labels.get("team"), labels.get("cost-center"), labels.get("other")) == ("search", "42", None)
