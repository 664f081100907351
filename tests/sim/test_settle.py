"""Runs that used to hang (issue 14) end: on time, with exit status 3, or at ``--until``.

Each case runs ``pykueue simulate`` in a subprocess with a timeout, so a regression fails the test
instead of hanging the suite. Expected times are worked out by hand in each docstring.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.sim.settle_objects import queue, workload

ROOT = Path(__file__).resolve().parents[2]
GUARD = 30  # seconds; every case here takes well under one


DEFAULT_PODS_READY = """\
apiVersion: config.kueue.x-k8s.io/v1beta1
kind: Configuration
waitForPodsReady: {enable: true}
---
"""


def simulate(tmp: Path, text: str, *args: str) -> tuple[int, dict[str, Any] | None, str]:
    f = tmp / "in.yaml"
    f.write_text(text)
    proc = subprocess.run(
        [sys.executable, "-m", "pykueue.cli", "simulate", str(f), "--output", "json", *args],
        capture_output=True, text=True, timeout=GUARD, cwd=ROOT,
    )
    return proc.returncode, json.loads(proc.stdout) if proc.returncode == 0 else None, proc.stderr


def timeline(result: dict[str, Any]) -> list[tuple[float, str, str | None]]:
    return [(e["time"], e["type"], e.get("reason")) for e in result["events"]]


def test_backoff_after_a_millisecond_arrival_expires_on_time(tmp_path: Path) -> None:
    """Upstream's default waitForPodsReady (v1beta1 enable: true): timeout 5m, backoff 60 s doubling,
    capped at 3600 s, no limit. Arriving at 3 ms and never ready, it is admitted at 0.003 and evicted
    300 s after each admission, then requeued after 60, 120, 240, 480, 960, 1920 s. In floats the sixth
    requeue time, 3660.003 + 1920, is 5580.003000000001: just after the microsecond the clock wakes up
    at, so that backoff never expired and the clock stood still at 5580.003 s."""
    text = DEFAULT_PODS_READY + queue() + workload("w", 'pykueue.dev/arrival: "3ms", pykueue.dev/ready-after: never')
    code, result, stderr = simulate(tmp_path, text, "--until", "6000s")
    assert code == 0, stderr
    assert result is not None
    admissions = [0.003, 360.003, 780.003, 1320.003, 2100.003, 3360.003, 5580.003]
    backoffs = [60, 120, 240, 480, 960, 1920]
    expected: list[tuple[float, str, str | None]] = []
    for n, at in enumerate(admissions):
        if n:
            expected.append((at, "Requeued", "BackoffFinished"))
            assert round(at - admissions[n - 1] - 300, 3) == backoffs[n - 1]  # the table above is right
        expected += [(at, "QuotaReserved", None), (at, "Admitted", None), (round(at + 300, 3), "Evicted", "PodsReadyTimeout")]
    assert timeline(result) == expected
    assert result["endTime"] == 6000.0
    assert result["workloads"][0]["evictions"] == 7


def test_check_retrying_after_zero_seconds_is_a_loop(tmp_path: Path) -> None:
    """prov=Retry@0s repeats for every reservation: reserve, Retry at the same instant, requeue,
    reserve... The clock can never move, and each Retry came from a timer, so every reservation was a
    separate scheduling call that the per-call loop counter never saw. --until cannot help either."""
    text = queue(checks=True) + workload("w", 'pykueue.dev/admission-checks: "prov=Retry@0s"')
    code, _, stderr = simulate(tmp_path, text, "--until", "1h")
    assert code == 3
    assert stderr.splitlines()[0] == (
        "simulation stopped: admission loop: workload default/w got quota and was evicted (AdmissionCheck) "
        "50 times at time 0s; the configuration would evict and readmit it forever without the clock moving"
    )


def test_retrying_after_zero_seconds_then_ready_is_no_loop(tmp_path: Path) -> None:
    """Retry@0s for the first two reservations, then Ready: three reservations at 0, admitted at 0."""
    text = queue(checks=True) + workload("w", 'pykueue.dev/admission-checks: "prov=Retry@0s,Retry@0s,Ready@0s"')
    code, result, stderr = simulate(tmp_path, text)
    assert code == 0, stderr
    assert result is not None
    assert [t for t in timeline(result) if t[1] == "QuotaReserved"] == [(0.0, "QuotaReserved", None)] * 3
    assert result["workloads"][0]["state"] == "Admitted"
    assert result["workloads"][0]["evictions"] == 2


def test_zero_pods_ready_timeout_without_backoff_is_a_loop(tmp_path: Path) -> None:
    """timeout 0s and backoffBaseSeconds 0 (both accepted upstream: only negative values are
    rejected): admitted, timed out and requeued at once, forever at time 0."""
    config = """\
apiVersion: config.kueue.x-k8s.io/v1beta1
kind: Configuration
waitForPodsReady:
  enable: true
  timeout: 0s
  requeuingStrategy: {backoffBaseSeconds: 0}
---
"""
    text = config + queue() + workload("w", "pykueue.dev/ready-after: never")
    code, _, stderr = simulate(tmp_path, text, "--until", "10s")
    assert code == 3
    assert "admission loop: workload default/w got quota and was evicted (PodsReadyTimeout) 50 times at time 0s" in stderr


def test_check_retrying_forever_stops_with_the_cycle(tmp_path: Path) -> None:
    """prov=Retry@5s forever, no --until: reserved at 0, 5, 10, ...; the idle bound is 100 plus the
    script's length (1), so the 102nd eviction, at 510 s, stops the run; the first was at 5 s."""
    text = queue(checks=True) + workload("w", 'pykueue.dev/admission-checks: "prov=Retry@5s"')
    code, _, stderr = simulate(tmp_path, text)
    assert code == 3
    assert stderr.splitlines()[0] == (
        "simulation stopped: requeue loop: workload default/w was evicted (AdmissionCheck) 102 times from 5s "
        "to 510s while no workload arrived, finished or was deactivated, and nothing else can happen; the "
        "configuration would requeue it forever (--until bounds the run)"
    )


def test_pods_never_ready_without_limit_stops_with_the_cycle(tmp_path: Path) -> None:
    """Default requeuing (no limit), never ready, no --until: evictions at 300 + k * 300 plus the
    backoffs 60, 120, ..., 1920, then 3600 each; the 101st eviction stops the run."""
    text = DEFAULT_PODS_READY + queue() + workload("w", "pykueue.dev/ready-after: never")
    code, _, stderr = simulate(tmp_path, text)
    assert code == 3
    # Eviction n (n <= 7) is at 300n + 60(2^(n-1) - 1): the 7th at 2100 + 3780 = 5880 s. Then each cycle
    # is a 3600 s backoff plus the 300 s timeout: the 101st at 5880 + 94 * 3900 = 372480 s.
    assert "workload default/w was evicted (PodsReadyTimeout) 101 times from 300s to 372480s" in stderr


def test_until_bounds_a_run_that_never_settles(tmp_path: Path) -> None:
    """The same configuration with --until: the user asked for the state at that time, so the run is
    not stopped early even past 101 evictions. Eviction n >= 7 is at 5880 + 3900 (n - 7) s and is
    followed by a 3600 s backoff: the 108th is at 399780 s, after the 107th readmission at 399480 s;
    at 400000 s the workload is still waiting for its backoff."""
    text = DEFAULT_PODS_READY + queue() + workload("w", "pykueue.dev/ready-after: never")
    code, result, stderr = simulate(tmp_path, text, "--until", "400000s")
    assert code == 0, stderr
    assert result is not None
    w = result["workloads"][0]
    assert (w["state"], w["evictions"], w["admittedAt"], result["endTime"]) == ("Pending", 108, 399480.0, 400000.0)


def test_a_requeuing_limit_lets_the_run_settle(tmp_path: Path) -> None:
    """With backoffLimitCount 150 (above the idle bound of 100) the series of timeouts is long but
    finite, so the run must not be stopped: base 0 s means requeue at once, timeout 1 s, so evictions
    at 1, 2, ..., 151 s; the 151st passes the limit and deactivates the workload."""
    config = """\
apiVersion: config.kueue.x-k8s.io/v1beta1
kind: Configuration
waitForPodsReady:
  enable: true
  timeout: 1s
  requeuingStrategy: {backoffBaseSeconds: 0, backoffLimitCount: 150}
---
"""
    text = config + queue() + workload("w", "pykueue.dev/ready-after: never")
    code, result, stderr = simulate(tmp_path, text)
    assert code == 0, stderr
    assert result is not None
    w = result["workloads"][0]
    assert (w["state"], w["evictions"], result["endTime"]) == ("Inactive", 151, 151.0)


FAST_BACKOFF = """\
apiVersion: config.kueue.x-k8s.io/v1beta1
kind: Configuration
waitForPodsReady:
  enable: true
  blockAdmission: false
  timeout: 1s
  requeuingStrategy: {backoffBaseSeconds: 1, backoffMaxSeconds: 1}
---
"""


def big(name: str, annotations: str, cpu: int) -> str:
    return workload(name, annotations).replace('cpu: "1"', f'cpu: "{cpu}"')


def test_a_running_job_that_will_finish_is_waited_for(tmp_path: Path) -> None:
    """Quota 4 cpu. x (3 cpu) runs for 1h; a (1 cpu) is never ready: admitted at 0, 2, 4, ... and evicted
    1 s later each time (timeout 1 s, backoff 1 s); b (4 cpu) cannot fit while x runs. After 100
    evictions of a nothing has progressed, but x's finish is still to come, so the run goes on. At
    3600 x finishes as a comes back from its backoff: b (created at 0) is ahead of a (re-queued at its
    eviction, 3599) and takes all 4 cpu. a waits for ever behind b, which never ends: the run has
    settled. b's pods-ready timeout timer at 3601 is the last instant."""
    text = (FAST_BACKOFF + queue() + big("x", 'pykueue.dev/runtime: "1h"', 3)
            + workload("a", "pykueue.dev/ready-after: never") + big("b", "", 4))
    code, result, stderr = simulate(tmp_path, text)
    assert code == 0, stderr
    assert result is not None
    w = {x["name"]: x for x in result["workloads"]}
    assert (w["x"]["state"], w["x"]["finishedAt"]) == ("Finished", 3600.0)
    assert (w["b"]["state"], w["b"]["admittedAt"]) == ("Admitted", 3600.0)
    assert (w["a"]["state"], w["a"]["evictions"]) == ("Pending", 1800)
    # endTime is the time of the last event (the spec): nothing that happens later produces one
    assert result["endTime"] == result["events"][-1]["time"] == 3600.0


def test_a_fast_cycle_waiting_for_a_distant_event_stops_at_the_hard_bound(tmp_path: Path) -> None:
    """The same with x running for 1000h: a would cycle every 2 s for 1000 hours. Its evictions are at
    1, 3, 5, ... s; the 10,001st, at 20001 s, passes the hard bound of 10,000 (no requeuing limit, no
    check script) although x's finish is still scheduled."""
    text = (FAST_BACKOFF + queue() + big("x", 'pykueue.dev/runtime: "1000h"', 3)
            + workload("a", "pykueue.dev/ready-after: never") + big("b", "", 4))
    code, _, stderr = simulate(tmp_path, text)
    assert code == 3
    assert stderr.splitlines()[0] == (
        "simulation stopped: requeue loop: workload default/a was evicted (PodsReadyTimeout) 10001 times from 1s "
        "to 20001s while no workload arrived, finished or was deactivated; stopped at the bound of 10000 such "
        "evictions although other work is still scheduled (--until bounds the run)"
    )
