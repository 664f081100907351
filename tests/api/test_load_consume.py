"""Loading generated manifests with ``consume``: the list is emptied as it is read and each Workload's
manifest is freed once parsed, with the same inputs as an ordinary load."""

from __future__ import annotations

import gc
import weakref
from typing import Any

from pykueue.api.loader import load_documents
from pykueue.perf.generator import build_manifests, iter_manifests, parse_generator

WORLD = {
    "cohorts": [{
        "className": "co", "count": 1,
        "queuesSets": [{
            "className": "cq", "count": 2, "nominalQuota": 4,
            "workloadsSets": [{"count": 3, "creationIntervalMs": 100,
                               "workloads": [{"className": "a", "runtimeMs": 200, "request": 1},
                                             {"className": "b", "runtimeMs": 300, "request": 2, "priority": 5}]}],
        }],
    }]
}


class _Manifest(dict):  # a dict that a weak reference can watch
    pass


def _manifests() -> list[Any]:
    return [_Manifest(m) for m in build_manifests(parse_generator(WORLD))]


def test_consumed_load_gives_the_same_inputs_and_frees_the_workload_manifests() -> None:
    plain, plain_problems = load_documents(_manifests(), source="gen")
    manifests = _manifests()
    refs = [weakref.ref(m) for m in manifests if m["kind"] == "Workload"]
    assert len(refs) == 12  # 2 queues x 3 rounds x 2 templates
    consumed, problems = load_documents(manifests, source="gen", consume=True)
    assert manifests == []
    assert problems == plain_problems == []
    assert consumed.workloads == plain.workloads
    assert sorted(w.workload.priority for w in consumed.workloads) == [0] * 6 + [5] * 6
    assert consumed.cluster_queues == plain.cluster_queues
    del manifests
    gc.collect()
    assert [r() for r in refs] == [None] * 12


def test_a_consumed_load_still_reports_a_bad_workload_at_its_document() -> None:
    manifests = _manifests()
    bad = next(i for i, m in enumerate(manifests) if m["kind"] == "Workload")
    manifests[bad] = {**manifests[bad], "metadata": {**manifests[bad]["metadata"], "name": "Bad_Name"}}
    _, problems = load_documents(manifests, source="gen", consume=True)
    assert [(p.source.doc, p.name) for p in problems] == [(bad + 1, "Bad_Name")]


def test_the_generator_shares_one_spec_per_queue_and_template() -> None:
    workloads = [m for m in build_manifests(parse_generator(WORLD)) if m["kind"] == "Workload"]
    specs = {id(m["spec"]) for m in workloads}
    assert len(specs) == 4  # 2 queues x 2 templates
    by_key = {(m["spec"]["queueName"], m["metadata"]["labels"]["kueue.x-k8s.io/performance-scheduler-class"]):
              m["spec"] for m in workloads}
    assert by_key[("cq-0-0-co-0", "b")]["priority"] == 5
    assert by_key[("cq-0-1-co-0", "a")]["podSets"][0]["template"]["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "1"}}


def test_equal_label_sets_are_one_dict() -> None:
    inputs, _ = load_documents(build_manifests(parse_generator(WORLD)), source="gen")
    by_class: dict[str, list[dict[str, str]]] = {}
    for sub in inputs.workloads:
        by_class.setdefault(sub.labels["kueue.x-k8s.io/performance-scheduler-class"], []).append(sub.labels)
    assert sorted((c, len(ls)) for c, ls in by_class.items()) == [("a", 6), ("b", 6)]
    assert by_class["b"][0] == {"kueue.x-k8s.io/performance-scheduler-running-ms": "300",
                                "kueue.x-k8s.io/performance-scheduler-class": "b"}
    assert len({id(ls) for labels in by_class.values() for ls in labels}) == 2


def test_a_streamed_load_reads_each_workload_as_it_comes_and_gives_the_same_inputs() -> None:
    """An iterator of manifests (the generator's ``iter_manifests``): each Workload's manifest is read as
    it arrives, so none is alive when the next is made, and the inputs are those of a list."""
    plain, _ = load_documents(_manifests(), source="gen")
    alive: list[weakref.ref] = []
    seen_alive: list[int] = []

    def stream() -> Any:
        for made in iter_manifests(parse_generator(WORLD)):
            seen_alive.append(sum(r() is not None for r in alive))
            m = _Manifest(made)
            if m["kind"] == "Workload":
                alive.append(weakref.ref(m))
            yield m
            del m

    gc.disable()  # only reference counts free the manifests: nothing waits for a collection
    try:
        streamed, problems = load_documents(stream(), source="gen", consume=True)
    finally:
        gc.enable()
    assert problems == []
    assert streamed.workloads == plain.workloads
    assert streamed.local_queues == plain.local_queues
    # at most the one just read is alive when the next is made (the reading loop's variable still
    # names it); a list, or a document keeping its text until all are read, would have them all
    assert len(alive) == 12 and max(seen_alive) == 1


def test_a_streamed_load_reports_a_bad_workload_at_its_document() -> None:
    manifests = _manifests()
    bad = next(i for i, m in enumerate(manifests) if m["kind"] == "Workload")
    manifests[bad] = {**manifests[bad], "metadata": {**manifests[bad]["metadata"], "name": "Bad_Name"}}
    _, problems = load_documents(iter(manifests), source="gen", consume=True)
    assert [(p.source.doc, p.name) for p in problems] == [(bad + 1, "Bad_Name")]
