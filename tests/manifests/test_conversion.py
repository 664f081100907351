"""The conversion webhook's v1beta1 <-> v1beta2 mapping, without a cluster: the same meaning as the API
layer's (the loader reads every v1beta1 example and its conversion as the same engine input), nothing
lost on a round trip, and the ConversionReview as the API server wants it."""

from __future__ import annotations

import copy

from pykueue.api.kinds import KUEUE_V1BETA1, KUEUE_V1BETA2
from pykueue.api.loader import load_documents
from pykueue.controller.webhooks import conversion
from tests.manifests.examples import all_examples, v1beta1_examples

CONVERTED = {"ClusterQueue", "Cohort", "LocalQueue", "Workload"}


def _read(doc: dict) -> tuple:
    inputs, problems = load_documents([doc], "example")
    return inputs.resource_flavors, inputs.cluster_queues, inputs.cohorts, inputs.local_queues, [
        w.workload for w in inputs.workloads], [str(p) for p in problems]


def test_every_v1beta1_example_means_the_same_converted() -> None:
    examples = v1beta1_examples()
    assert len(examples) > 50 and {e.doc["kind"] for e in examples} >= {"ClusterQueue", "Workload", "LocalQueue"}
    for example in examples:
        converted = conversion.convert(example.doc, KUEUE_V1BETA2)
        assert converted["apiVersion"] == KUEUE_V1BETA2
        assert _read(converted) == _read(example.doc), example.label


def test_v1beta1_spellings_become_v1beta2s() -> None:
    cq = {"apiVersion": KUEUE_V1BETA1, "kind": "ClusterQueue", "metadata": {"name": "a", "uid": "u1"},
          "spec": {"cohort": "research", "admissionChecks": ["check"],
                   "flavorFungibility": {"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt"}},
          "status": {"pendingWorkloads": 1}}
    got = conversion.convert(cq, KUEUE_V1BETA2)
    assert got["spec"] == {"cohortName": "research", "admissionChecksStrategy": {"admissionChecks": [{"name": "check"}]},
                           "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "MayStopSearch"}}
    assert got["metadata"] == cq["metadata"] and got["status"] == cq["status"]
    wl = {"apiVersion": KUEUE_V1BETA1, "kind": "Workload", "metadata": {"name": "w"},
          "spec": {"priorityClassName": "high", "priorityClassSource": "kueue.x-k8s.io/workloadpriorityclass",
                   "priority": 5, "podSets": []},
          "status": {"accumulatedPastExexcutionTimeSeconds": 7}}
    got = conversion.convert(wl, KUEUE_V1BETA2)
    assert got["spec"] == {"priorityClassRef": {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass",
                                                "name": "high"}, "priority": 5, "podSets": []}
    assert got["status"] == {"accumulatedPastExecutionTimeSeconds": 7}
    lq = {"apiVersion": KUEUE_V1BETA1, "kind": "LocalQueue", "metadata": {"name": "q"},
          "status": {"flavorUsage": [{"name": "f", "resources": []}]}}
    assert conversion.convert(lq, KUEUE_V1BETA2)["status"] == {"flavorsUsage": [{"name": "f", "resources": []}]}


def test_v1beta2_objects_survive_a_round_trip_through_v1beta1() -> None:
    examples = [e for e in all_examples() if e.doc["kind"] in CONVERTED]
    assert len(examples) > 100
    for example in examples:
        doc = copy.deepcopy(example.doc)
        down = conversion.convert(doc, KUEUE_V1BETA1)
        assert down["apiVersion"] == KUEUE_V1BETA1
        assert conversion.convert(down, KUEUE_V1BETA2) == doc, example.label
    ref = {"apiVersion": KUEUE_V1BETA2, "kind": "Workload", "metadata": {"name": "w"},
           "spec": {"priorityClassRef": {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": "p"}}}
    assert conversion.convert(ref, KUEUE_V1BETA1)["spec"] == {
        "priorityClassName": "p", "priorityClassSource": "scheduling.k8s.io/priorityclass"}


def test_conversion_review_answers_every_object_or_fails_them_all() -> None:
    objects = [{"apiVersion": KUEUE_V1BETA2, "kind": "ClusterQueue", "metadata": {"name": n}, "spec": {"cohortName": n}}
               for n in ("a", "b")]
    ok = conversion.review({"uid": "1", "desiredAPIVersion": KUEUE_V1BETA1, "objects": objects})
    assert ok["uid"] == "1" and ok["result"] == {"status": "Success"}
    assert [o["spec"] for o in ok["convertedObjects"]] == [{"cohort": "a"}, {"cohort": "b"}]
    bad = conversion.review({"uid": "2", "desiredAPIVersion": "kueue.x-k8s.io/v1alpha1", "objects": objects})
    assert bad["result"]["status"] == "Failure" and "convertedObjects" not in bad
    assert 'from "kueue.x-k8s.io/v1beta2" to "kueue.x-k8s.io/v1alpha1"' in bad["result"]["message"]
