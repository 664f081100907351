"""Range spec loading and checking, with upstream's failure semantics."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pykueue.perf.rangespec import RangeSpec, RangeSpecError, check, load_rangespec, parse_rangespec

SHARED = next(
    (p for p in (Path(__file__).resolve().parents[2].parent / "shared" / "perf", Path("/work/shared/perf")) if p.exists()),
    Path(__file__).resolve().parents[2].parent / "shared" / "perf",
)
needs_shared = pytest.mark.skipif(not SHARED.exists(), reason="shared perf configs not available")


def summary(wall: int = 400_000, usage: float | None = 55.9, large: int = 16_501) -> dict[str, Any]:
    return {
        "clusterQueueClasses": {"cq": {"avgUsagePercent": usage}},
        "wallMs": wall,
        "workloadClasses": {
            "large": {"avgTimeToAdmissionMs": large},
            "medium": {"avgTimeToAdmissionMs": 76_768},
            "small": {"avgTimeToAdmissionMs": 215_468},
        },
    }


@needs_shared
def test_load_shared_specs() -> None:
    base = load_rangespec(SHARED / "baseline" / "rangespec.yaml")
    assert base == RangeSpec(
        max_wall_ms=425_000,
        cluster_queue_classes_min_usage={"cq": 50.0},
        wl_classes_max_avg_time_to_admission_ms={"large": 23_000, "medium": 90_000, "small": 260_000},
    )
    large = load_rangespec(SHARED / "large-scale" / "rangespec.yaml")
    assert large.max_wall_ms == 1_416_000
    assert large.cluster_queue_classes_min_usage == {"cq": 31.6}
    assert large.wl_classes_max_avg_time_to_admission_ms == {
        "large": 128_000,
        "medium": 308_000,
        "small": 841_000,
    }


@needs_shared
def test_pass_and_fail_against_baseline() -> None:
    spec = load_rangespec(SHARED / "baseline" / "rangespec.yaml")
    assert check(summary(), spec) == []
    assert check(summary(wall=425_000, usage=50.0, large=23_000), spec) == []  # bounds are inclusive
    assert check(summary(wall=430_001, usage=48.123, large=24_000), spec) == [
        "cmd.maxWallMs: wall time 430001ms is greater than maximum expected 425000ms",
        "clusterQueueClassesMinUsage.cq: usage 48.12% is less than expected 50.00%",
        "wlClassesMaxAvgTimeToAdmissionMs.large: average wait for admission 24000ms is more than expected 23000ms",
    ]


def test_unexpected_classes_and_unmeasurable_usage() -> None:
    spec = parse_rangespec(
        {
            "clusterQueueClassesMinUsage": {"other": 1},
            "wlClassesMaxAvgTimeToAdmissionMs": {"small": 1, "gone": 5},
        }
    )
    s = {
        "clusterQueueClasses": {"cq": {"avgUsagePercent": 10.0}},
        "wallMs": 1,
        "workloadClasses": {"small": {"avgTimeToAdmissionMs": 1}, "tiny": {"avgTimeToAdmissionMs": 0}},
    }
    assert check(s, spec) == [
        "clusterQueueClassesMinUsage.cq: unexpected cluster queue class 'cq' (the range spec has no entry for it)",
        "wlClassesMaxAvgTimeToAdmissionMs.tiny: unexpected workload class 'tiny' (the range spec has no entry for it)",
    ]
    spec = parse_rangespec({"clusterQueueClassesMinUsage": {"cq": 0}})
    assert check({"clusterQueueClasses": {"cq": {"avgUsagePercent": None}}}, spec) == [
        "clusterQueueClassesMinUsage.cq: usage is not measurable (no quota or an empty monitoring window)"
    ]


def test_process_stats_accepted_but_not_checked_and_absent_wall_is_unbounded() -> None:
    spec = parse_rangespec({"cmd": {"mCPU": 500, "maxrss": 468_000}})
    assert (spec.max_mcpu, spec.max_rss_kib, spec.max_wall_ms) == (500, 468_000, None)
    assert check({"wallMs": 10**9}, spec) == []
    assert check({}, parse_rangespec({"cmd": {"maxWallMs": 5}})) == [
        "cmd.maxWallMs: the summary has no wallMs"
    ]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"cmd": {"maxWallMs": 1}, "extra": {}}, "spec.yaml: extra: unknown field"),
        ({"cmd": {"maxWall": 1}}, "spec.yaml: cmd.maxWall: unknown field"),
        ({"cmd": {"maxWallMs": 1.5}}, "spec.yaml: cmd.maxWallMs: must be a non-negative integer, got 1.5"),
        ({"cmd": []}, "spec.yaml: cmd: must be a mapping"),
        (
            {"clusterQueueClassesMinUsage": {"cq": "50%"}},
            "spec.yaml: clusterQueueClassesMinUsage.cq: must be a non-negative number, got '50%'",
        ),
        (
            {"wlClassesMaxAvgTimeToAdmissionMs": {"large": 2.5}},
            "spec.yaml: wlClassesMaxAvgTimeToAdmissionMs.large: must be a non-negative integer, got 2.5",
        ),
        (
            {"wlClassesMaxAvgTimeToAdmissionMs": [1]},
            "spec.yaml: wlClassesMaxAvgTimeToAdmissionMs: must be a mapping",
        ),
    ],
)
def test_invalid_specs(data: Any, expected: str) -> None:
    with pytest.raises(RangeSpecError) as err:
        parse_rangespec(data, "spec.yaml")
    assert str(err.value).startswith(expected), str(err.value)


def test_yaml_errors(tmp_path: Path) -> None:
    f = tmp_path / "r.yaml"
    f.write_text("cmd:\n  maxWallMs: 1\ncmd:\n  maxWallMs: 2\n")
    with pytest.raises(RangeSpecError, match="duplicate key 'cmd'"):
        load_rangespec(f)
    f.write_text("cmd: [\n")
    with pytest.raises(RangeSpecError, match="invalid YAML"):
        load_rangespec(f)
