"""translate.workload's cache by shape: a conversion is reused only for a Workload that differs in
its name (and creation time), and gives exactly what converting it afresh gives."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pykueue.controller.core import translate


def api_workload(name: str, *, cpu: str = "1", priority_class: str | None = None, queue: str = "lq",
                 namespace: str = "team-a", created: str = "2026-01-01T00:00:00Z") -> dict[str, Any]:
    ref = {"priorityClassRef": {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass",
                                "name": priority_class}} if priority_class else {}
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}", "resourceVersion": "7",
                     "creationTimestamp": created, "labels": {"team": "a"}},
        "spec": {**ref, "queueName": queue, "podSets": [{"name": "main", "count": 1, "template": {"spec": {
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}}}]},
    }


def wpc(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
            "metadata": {"name": name}, "value": value}


def test_a_renamed_copy_reuses_the_conversion_under_its_own_name_and_time() -> None:
    cache: dict[bytes, Any] = {}
    first, _ = translate.workload(api_workload("a"), [], cache)
    second, problems = translate.workload(api_workload("b", created="2026-01-01T00:00:05Z"), [], cache)
    assert problems == [] and len(cache) == 1
    assert second is not None and first is not None
    assert (second.name, second.namespace, second.creation_time - first.creation_time) == ("b", "team-a", 5.0)
    assert second == translate.workload(api_workload("b", created="2026-01-01T00:00:05Z"), [])[0]


def test_any_other_difference_is_converted_afresh() -> None:
    cache: dict[bytes, Any] = {}
    classes = [wpc("high", 1000), wpc("low", 10)]
    variants = [api_workload("a"), api_workload("a", cpu="2"), api_workload("a", namespace="team-b"),
                api_workload("a", queue="other"), api_workload("a", priority_class="high"),
                api_workload("a", priority_class="low")]
    converted = [translate.workload(v, classes, cache)[0] for v in variants]
    assert len(cache) == len(variants)
    assert [w.priority for w in converted[-2:]] == [1000, 10]
    assert converted[1].pod_sets[0].requests != converted[0].pod_sets[0].requests


def test_an_invalid_workload_is_reported_every_time_and_never_cached() -> None:
    cache: dict[bytes, Any] = {}
    bad = api_workload("a", cpu="lots")
    for name in ("a", "b"):
        obj = copy.deepcopy(bad)
        obj["metadata"]["name"] = name
        workload, problems = translate.workload(obj, [], cache)
        assert workload is None and problems
    assert cache == {}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.sampled_from(["1", "2", "500m"]),
                          st.sampled_from([None, "high", "low"]), st.integers(0, 59)), min_size=1, max_size=12))
def test_cached_conversions_equal_fresh_ones(rows: list[tuple[str, str, str | None, int]]) -> None:
    classes = [wpc("high", 1000), wpc("low", 10)]
    cache: dict[bytes, Any] = {}
    for name, cpu, pc, second in rows:
        obj = api_workload(name, cpu=cpu, priority_class=pc, created=f"2026-01-01T00:00:{second:02d}Z")
        assert translate.workload(obj, classes, cache) == translate.workload(obj, classes)
