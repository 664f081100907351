"""The generator builds what upstream's runner creates, with upstream's creation timing."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from pykueue.perf.generator import (
    ARRIVAL_ANNOTATION,
    CLASS_LABEL,
    CLEANUP_LABEL,
    RUNNING_TIME_LABEL,
    RUNTIME_ANNOTATION,
    GeneratorError,
    build_manifests,
    format_ms,
    load_generator,
    parse_generator,
    quantity_value,
)

SHARED = next(
    (p for p in (Path(__file__).resolve().parents[2].parent / "shared" / "perf", Path("/work/shared/perf")) if p.exists()),
    Path(__file__).resolve().parents[2].parent / "shared" / "perf",
)
BASELINE = SHARED / "baseline" / "generator.yaml"
LARGE = SHARED / "large-scale" / "generator.yaml"
needs_shared = pytest.mark.skipif(not BASELINE.exists(), reason="shared perf configs not available")


def by_kind(objs: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for o in objs:
        out.setdefault(o["kind"], []).append(o)
    return out


def workload(objs: list[dict[str, Any]], ns: str, name: str) -> dict[str, Any]:
    (found,) = [
        o
        for o in objs
        if o["kind"] == "Workload" and o["metadata"]["namespace"] == ns and o["metadata"]["name"] == name
    ]
    return found


@pytest.fixture(scope="module")
def baseline() -> list[dict[str, Any]]:
    return build_manifests(load_generator(BASELINE))


@needs_shared
def test_baseline_counts(baseline: list[dict[str, Any]]) -> None:
    kinds = by_kind(baseline)
    assert set(kinds) == {"ResourceFlavor", "ClusterQueue", "Namespace", "LocalQueue", "Workload"}
    assert len(kinds["ResourceFlavor"]) == 1
    assert len(kinds["ClusterQueue"]) == len(kinds["Namespace"]) == len(kinds["LocalQueue"]) == 30
    assert len(kinds["Workload"]) == 15_000
    assert Counter(cq["spec"]["cohortName"] for cq in kinds["ClusterQueue"]) == {
        f"cohort-{i}": 6 for i in range(5)
    }
    assert {cq["metadata"]["name"] for cq in kinds["ClusterQueue"]} == {
        f"cq-0-{q}-cohort-{c}" for q in range(6) for c in range(5)
    }
    assert Counter(w["metadata"]["labels"][CLASS_LABEL] for w in kinds["Workload"]) == {
        "small": 10_500,
        "medium": 3_000,
        "large": 1_500,
    }
    per_ns = Counter(w["metadata"]["namespace"] for w in kinds["Workload"])
    assert set(per_ns.values()) == {500}
    cfg = load_generator(BASELINE)
    assert (cfg.workload_count, cfg.cluster_queue_count) == (15_000, 30)


@needs_shared
def test_baseline_setup_objects(baseline: list[dict[str, Any]]) -> None:
    assert baseline[0] == {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": "rf", "labels": {CLEANUP_LABEL: "true"}},
        "spec": {},
    }
    cq, ns, lq = baseline[1:4]
    assert cq == {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "cq-0-0-cohort-0", "labels": {CLASS_LABEL: "cq", CLEANUP_LABEL: "true"}},
        "spec": {
            "cohortName": "cohort-0",
            "namespaceSelector": {},
            "queueingStrategy": "BestEffortFIFO",
            "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"},
            "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu"],
                    "flavors": [
                        {
                            "name": "rf",
                            "resources": [{"name": "cpu", "nominalQuota": "20", "borrowingLimit": "100"}],
                        }
                    ],
                }
            ],
        },
    }
    assert ns == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "cq-0-0-cohort-0", "labels": {CLEANUP_LABEL: "true"}},
    }
    assert lq == {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": "cq-0-0-cohort-0", "namespace": "cq-0-0-cohort-0"},
        "spec": {"clusterQueue": "cq-0-0-cohort-0"},
    }
    # Setup objects come before every workload.
    assert all(o["kind"] != "Workload" for o in baseline[:91])
    assert all(o["kind"] == "Workload" for o in baseline[91:])


@needs_shared
def test_baseline_first_workload_exact(baseline: list[dict[str, Any]]) -> None:
    assert workload(baseline, "cq-0-3-cohort-2", "small-0-0-0") == {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": "small-0-0-0",
            "namespace": "cq-0-3-cohort-2",
            "labels": {RUNNING_TIME_LABEL: "200", CLASS_LABEL: "small"},
            "annotations": {ARRIVAL_ANNOTATION: "0.1s", RUNTIME_ANNOTATION: "0.2s"},
        },
        "spec": {
            "queueName": "cq-0-3-cohort-2",
            "priority": 50,
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
                        }
                    },
                }
            ],
        },
    }


@pytest.mark.parametrize(
    ("name", "arrival", "runtime", "priority", "cpu"),
    [
        ("small-0-0-0", "0.1s", "0.2s", 50, "1"),
        ("small-0-1-0", "0.2s", "0.2s", 50, "1"),
        ("small-0-349-0", "35s", "0.2s", 50, "1"),
        ("medium-1-0-0", "0.5s", "0.5s", 100, "5"),
        ("medium-1-99-0", "50s", "0.5s", 100, "5"),
        ("large-2-0-0", "1.2s", "1s", 200, "20"),
        ("large-2-49-0", "60s", "1s", 200, "20"),
    ],
)
@needs_shared
def test_baseline_set_ends(
    baseline: list[dict[str, Any]], name: str, arrival: str, runtime: str, priority: int, cpu: str
) -> None:
    wl = workload(baseline, "cq-0-5-cohort-4", name)
    assert wl["metadata"]["annotations"] == {ARRIVAL_ANNOTATION: arrival, RUNTIME_ANNOTATION: runtime}
    assert wl["metadata"]["labels"][RUNNING_TIME_LABEL] == str(round(float(runtime[:-1]) * 1000))
    assert wl["spec"]["priority"] == priority
    assert wl["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]["requests"] == {
        "cpu": cpu
    }


def _arrival_ms(wl: dict[str, Any]) -> int:
    return round(float(wl["metadata"]["annotations"][ARRIVAL_ANNOTATION][:-1]) * 1000)


@needs_shared
def test_baseline_arrival_order(baseline: list[dict[str, Any]]) -> None:
    wls = [o for o in baseline if o["kind"] == "Workload"]
    arrivals = [_arrival_ms(w) for w in wls]
    assert arrivals == sorted(arrivals)
    assert arrivals[0] == 100 and arrivals[-1] == 60_000
    # The 30 queues' first small workloads all arrive at 0.1s, in queue generation order.
    assert [w["metadata"]["namespace"] for w in wls[:30]] == [
        f"cq-0-{q}-cohort-{c}" for c in range(5) for q in range(6)
    ]
    assert {w["metadata"]["name"] for w in wls[:30]} == {"small-0-0-0"}
    # At 0.5s the small set's 5th and the medium set's 1st creation coincide in every queue.
    at_half = Counter(w["metadata"]["name"] for w in wls if _arrival_ms(w) == 500)
    assert at_half == {"small-0-4-0": 30, "medium-1-0-0": 30}


@needs_shared
def test_large_scale_counts() -> None:
    """What the large-scale config builds; how fast is measured by bench/generator_speed.py."""
    objs = build_manifests(load_generator(LARGE))
    kinds = by_kind(objs)
    assert len(kinds["Workload"]) == 50_000
    assert len(kinds["ClusterQueue"]) == 1_000
    assert len({cq["spec"]["cohortName"] for cq in kinds["ClusterQueue"]}) == 10
    assert Counter(w["metadata"]["labels"][CLASS_LABEL] for w in kinds["Workload"]) == {
        "small": 35_000,
        "medium": 11_000,
        "large": 4_000,
    }
    last = workload(objs, "cq-0-99-cohort-9", "small-0-34-0")
    assert last["metadata"]["annotations"] == {ARRIVAL_ANNOTATION: "2.1s", RUNTIME_ANNOTATION: "0.15s"}
    assert (
        workload(objs, "cq-0-99-cohort-9", "medium-1-10-0")["metadata"]["annotations"][ARRIVAL_ANNOTATION]
        == "3.3s"
    )
    assert (
        workload(objs, "cq-0-0-cohort-0", "large-2-3-0")["metadata"]["annotations"][ARRIVAL_ANNOTATION]
        == "2.8s"
    )


def test_interval_counts_across_templates_of_a_set() -> None:
    cfg = parse_generator(
        {
            "cohorts": [
                {
                    "className": "co",
                    "count": 1,
                    "queuesSets": [
                        {
                            "className": "q",
                            "count": 1,
                            "nominalQuota": "500m",
                            "workloadsSets": [
                                {
                                    "count": 2,
                                    "creationIntervalMs": 100,
                                    "workloads": [
                                        {"className": "a", "runtimeMs": 5, "priority": -3, "request": "250m"},
                                        {"className": "b", "request": 1},
                                    ],
                                },
                                {
                                    "count": 1,
                                    "creationIntervalMs": 0,
                                    "workloads": [{"className": "z", "request": 2}],
                                },
                            ],
                        }
                    ],
                }
            ]
        }
    )
    objs = build_manifests(cfg)
    cq = objs[1]
    assert cq["spec"]["preemption"] == {}  # left to the API defaults
    assert cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"] == [
        {"name": "cpu", "nominalQuota": "500m"}
    ]
    got = [
        (o["metadata"]["name"], o["metadata"]["annotations"][ARRIVAL_ANNOTATION], o["spec"]["priority"])
        for o in objs
        if o["kind"] == "Workload"
    ]
    assert got == [
        ("z-1-0-0", "0s", 0),
        ("a-0-0-0", "0.1s", -3),
        ("b-0-0-1", "0.2s", 0),
        ("a-0-1-0", "0.3s", -3),
        ("b-0-1-1", "0.4s", 0),
    ]
    assert objs[-1]["metadata"]["annotations"][RUNTIME_ANNOTATION] == "0s"
    assert objs[-1]["metadata"]["labels"][RUNNING_TIME_LABEL] == "0"


def test_custom_flavor_lending_limit_and_old_list_format() -> None:
    cfg = parse_generator(
        [
            {
                "className": "c",
                "count": 1,
                "queuesSets": [
                    {
                        "className": "q",
                        "count": 1,
                        "nominalQuota": 4,
                        "borrowingLimit": 0,
                        "lendingLimit": "2",
                    }
                ],
            }
        ]
    )
    assert cfg.workload_count == 0
    res = build_manifests(cfg)[1]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]
    assert res == {"name": "cpu", "nominalQuota": "4", "borrowingLimit": "0", "lendingLimit": "2"}
    cfg = parse_generator({"resourceFlavor": {"name": "big"}, "cohorts": [{"className": "c", "count": 1}]})
    assert build_manifests(cfg)[0]["metadata"]["name"] == "big"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({}, "cohorts: is required"),
        ({"cohorts": []}, "cohorts: config must contain at least one cohort"),
        ({"cohorts": [{"className": "c", "count": -1}]}, "cohorts[0].count: must be >= 0, got -1"),
        ({"cohorts": [{"className": "c", "count": 1, "extra": 1}]}, "cohorts[0].extra: unknown field"),
        (
            {"cohorts": [{"className": "C_1", "count": 1}]},
            "cohorts[0].className: 'C_1' must be a DNS-1123 label",
        ),
        ({"cohorts": [{"count": 1}]}, "cohorts[0].className: is required"),
        ({"topology": {}, "cohorts": [{"className": "c"}]}, "topology: TAS/DRA generator features"),
        (
            {"cohorts": [{"className": "c", "queuesSets": [{"className": "q", "count": 1}]}]},
            "cohorts[0].queuesSets[0].nominalQuota: is required",
        ),
        (
            {"cohorts": [{"className": "c", "queuesSets": [{"className": "q", "nominalQuota": "1x"}]}]},
            "cohorts[0].queuesSets[0].nominalQuota: invalid quantity '1x'",
        ),
        (
            {
                "cohorts": [
                    {
                        "className": "c",
                        "queuesSets": [{"className": "q", "nominalQuota": 1, "withinClusterQueue": "Any"}],
                    }
                ]
            },
            "cohorts[0].queuesSets[0].withinClusterQueue: must be one of Never, LowerPriority, "
            "LowerOrNewerEqualPriority, got 'Any'",
        ),
        (
            {
                "cohorts": [
                    {
                        "className": "c",
                        "queuesSets": [
                            {
                                "className": "q",
                                "nominalQuota": 1,
                                "workloadsSets": [
                                    {"count": 1, "creationIntervalMs": -5, "workloads": [{"className": "w"}]}
                                ],
                            }
                        ],
                    }
                ]
            },
            "cohorts[0].queuesSets[0].workloadsSets[0].creationIntervalMs: must be >= 0, got -5",
        ),
        (
            {
                "cohorts": [
                    {
                        "className": "c",
                        "queuesSets": [
                            {
                                "className": "q",
                                "nominalQuota": 1,
                                "workloadsSets": [
                                    {"workloads": [{"className": "w", "request": 1, "tasLevel": "rack"}]}
                                ],
                            }
                        ],
                    }
                ]
            },
            "cohorts[0].queuesSets[0].workloadsSets[0].workloads[0].tasLevel: TAS/DRA generator features",
        ),
        (
            {
                "cohorts": [
                    {
                        "className": "c",
                        "count": 1,
                        "queuesSets": [{"className": "q", "count": 1, "nominalQuota": 1}],
                    },
                    {
                        "className": "c",
                        "count": 1,
                        "queuesSets": [{"className": "q", "count": 1, "nominalQuota": 1}],
                    },
                ]
            },
            "cohorts[1].queuesSets[0]: generates ClusterQueue 'q-0-0-c-0', already generated by cohorts[0].queuesSets[0]",
        ),
    ],
)
def test_validation_names_the_field(data: Any, expected: str) -> None:
    with pytest.raises(GeneratorError) as err:
        parse_generator(data, "gen.yaml")
    assert any(line.startswith(f"gen.yaml: {expected}") for line in str(err.value).splitlines()), str(
        err.value
    )


def test_validation_reports_every_problem_and_yaml_errors(tmp_path: Path) -> None:
    with pytest.raises(GeneratorError) as err:
        parse_generator({"cohorts": [{"className": "c", "count": "x", "queuesSets": 3}]}, "g")
    assert [p for p, _ in err.value.problems] == ["cohorts[0].count", "cohorts[0].queuesSets"]
    dup = tmp_path / "dup.yaml"
    dup.write_text("cohorts: []\ncohorts: []\n")
    with pytest.raises(GeneratorError, match="duplicate key 'cohorts'"):
        load_generator(dup)
    with pytest.raises(GeneratorError, match="cannot read"):
        load_generator(tmp_path / "missing.yaml")
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    with pytest.raises(GeneratorError, match="the file is empty"):
        load_generator(empty)


def test_helpers() -> None:
    assert [format_ms(v) for v in (0, 1, 100, 1200, 35_000, 60_060)] == [
        "0s",
        "0.001s",
        "0.1s",
        "1.2s",
        "35s",
        "60.06s",
    ]
    assert quantity_value("500m") == 0.5
    assert quantity_value("20") == 20
    assert quantity_value("1Ki") == 1024
    assert quantity_value("2e3") == 2000
    with pytest.raises(ValueError):
        quantity_value("1.2.3")


def test_counts_that_cannot_be_meant_are_refused_before_anything_is_built() -> None:
    """1e11 workloads (or queues) would allocate until the machine gives out; so would the name check,
    which walks every queue: both totals are checked first."""
    queues = {"className": "q", "count": 1, "nominalQuota": 1}
    many_queues = {"cohorts": [{"className": "c", "count": 2_000_000, "queuesSets": [queues]}]}
    with pytest.raises(GeneratorError) as err:
        parse_generator(many_queues, "g")
    assert err.value.problems == [("cohorts", "the counts generate 2000000 ClusterQueues; pykueue simulates at most 1000000")]
    sets = [{"count": 10**11, "creationIntervalMs": 1, "workloads": [{"className": "w", "request": 1}]}]
    many_workloads = {"cohorts": [{"className": "c", "count": 1, "queuesSets": [queues | {"workloadsSets": sets}]}]}
    with pytest.raises(GeneratorError, match="generate 100000000000 Workloads; pykueue simulates at most 10000000"):
        parse_generator(many_workloads, "g")


def test_deep_nesting_in_a_generator_file_is_refused_without_overflowing(tmp_path: Path) -> None:
    deep = tmp_path / "deep.yaml"
    deep.write_text("cohorts: " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(GeneratorError, match="nested more than 100 levels deep"):
        load_generator(deep)
