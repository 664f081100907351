"""The summary's facts taken from the manifests as they stream past (``FactsCollector``) equal those of
the whole list, and the generator makes its manifests lazily in ``build_manifests``' order."""

from __future__ import annotations

import itertools

import pytest

from pykueue.perf.generator import build_manifests, iter_manifests, parse_generator
from pykueue.perf.summary import FactsCollector, manifest_facts

WORLD = {
    "cohorts": [{
        "className": "co", "count": 1,
        "queuesSets": [{
            "className": "cq", "count": 2, "nominalQuota": 4,
            "workloadsSets": [{"count": 3, "creationIntervalMs": 100,
                               "workloads": [{"className": "a", "runtimeMs": 200, "request": 1},
                                             {"className": "b", "runtimeMs": 300, "request": 2}]},
                              {"count": 2, "creationIntervalMs": 150,
                               "workloads": [{"className": "c", "runtimeMs": 100, "request": 3}]}],
        }],
    }]
}


def test_streamed_facts_equal_the_facts_of_the_list() -> None:
    cfg = parse_generator(WORLD)
    collector = FactsCollector()
    passed = list(collector.watch(iter_manifests(cfg)))
    assert passed == build_manifests(cfg)
    streamed, whole = collector.facts(), manifest_facts(build_manifests(cfg))
    assert streamed.cluster_queues == whole.cluster_queues
    assert streamed.workloads == whole.workloads
    ns = "cq-0-0-co-0"
    # by hand: template b requests 2 cpu; c requests 3; the facts of equal workloads are one tuple
    assert streamed.workload(f"{ns}/b-0-2-1") == ("b", {"cpu": 2.0})
    assert streamed.workload(f"{ns}/c-1-0-0") == ("c", {"cpu": 3.0})
    assert streamed.workload(f"{ns}/a-0-0-0") is streamed.workload(f"{ns}/a-0-2-0")
    assert streamed.workload(f"{ns}/nope") is None and streamed.workload("other/a-0-0-0") is None


def test_the_merged_stream_keeps_arrival_then_generation_order() -> None:
    workloads = [m for m in iter_manifests(parse_generator(WORLD)) if m["kind"] == "Workload"]
    arrivals = [m["metadata"]["annotations"]["pykueue.dev/arrival"] for m in workloads[:6]]
    # queue 0's first set makes a-0-0-0 at 100ms and b-0-0-1 at 200ms, its second set c-1-0-0 at
    # 150ms; queue 1 the same: so 100ms: q0 a, q1 a; 150ms: q0 c, q1 c; 200ms: q0 b, q1 b
    names = [(m["metadata"]["namespace"][-6:-5], m["metadata"]["name"]) for m in workloads[:6]]
    assert arrivals == ["0.1s", "0.1s", "0.15s", "0.15s", "0.2s", "0.2s"]
    assert names == [("0", "a-0-0-0"), ("1", "a-0-0-0"), ("0", "c-1-0-0"), ("1", "c-1-0-0"),
                     ("0", "b-0-0-1"), ("1", "b-0-0-1")]


def test_the_generator_is_lazy() -> None:
    """Its first Workloads come without the ten million of the set being made (a list would take
    minutes and gigabytes)."""
    huge = {"cohorts": [{"className": "co", "count": 1, "queuesSets": [{
        "className": "cq", "count": 1, "nominalQuota": 4,
        "workloadsSets": [{"count": 10**7, "creationIntervalMs": 1,
                           "workloads": [{"className": "a", "runtimeMs": 1, "request": 1}]}]}]}]}
    first = list(itertools.islice(iter_manifests(parse_generator(huge)), 6))
    assert [m["kind"] for m in first] == ["ResourceFlavor", "ClusterQueue", "Namespace", "LocalQueue",
                                           "Workload", "Workload"]


def test_a_cluster_queue_after_a_workload_is_refused() -> None:
    manifests = build_manifests(parse_generator(WORLD))
    late = next(m for m in manifests if m["kind"] == "ClusterQueue")
    collector = FactsCollector()
    for m in manifests:
        if m["kind"] == "Workload":
            collector.add(m)
            break
    with pytest.raises(ValueError, match="ClusterQueue after a Workload"):
        collector.add(late)
