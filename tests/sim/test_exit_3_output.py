"""Exit status 3 through the CLI still prints the run up to the stop (README, "Exit status").

The input is ``tests/scenarios/preempt_loop_exit_3.yaml``: a preemption loop at 0.024 s among w0015,
w0016, w0020 and w0021 (its description tells the loop). The scenario suite checks the exit status and
stderr; this checks what is on stdout, in JSON and YAML.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from tests.scenario_harness import SCENARIOS, split

LOOP = SCENARIOS / "preempt_loop_exit_3.yaml"
IN_THE_LOOP = ("ns/w0015", "ns/w0016", "ns/w0020", "ns/w0021")


def run(tmp: Path, output: str) -> tuple[int, str, str]:
    _, inputs = split(LOOP)
    f = tmp / "loop.yaml"
    f.write_text(inputs)
    proc = subprocess.run([sys.executable, "-m", "pykueue.cli", "simulate", str(f), "-o", output],
                          capture_output=True, text=True, timeout=60)
    return proc.returncode, proc.stdout, proc.stderr


def check_partial(result: dict[str, Any]) -> None:
    # The run ends at the instant it was stopped, and every workload of the input is there.
    assert result["endTime"] == 0.024
    assert sorted(w["name"] for w in result["workloads"]) == [
        f"w{n:04d}" for n in (2, 5, 7, 8, 10, 14, 15, 16, 17, 19, 20, 21, 23, 24)]
    events = result["events"]
    assert events[-1]["time"] == 0.024
    # Before the loop's instant: each arrival admitted or preempting in turn, nothing at 0.024 yet.
    assert {e["workload"] for e in events if e["time"] < 0.024 and e["type"] == "Admitted"} >= {
        "ns/w0002", "ns/w0005", "ns/w0015", "ns/w0016", "ns/w0020", "ns/w0021"}
    at_stop = Counter((e["type"], e["workload"]) for e in events if e["time"] == 0.024)
    # The loop: w0020's 50 admissions at the instant, each undone by a preemption, and its partners
    # preempted as often; the one that started it (w0024) was admitted once.
    assert at_stop[("Admitted", "ns/w0020")] == 50
    assert at_stop[("Preempted", "ns/w0020")] == 50
    for key in IN_THE_LOOP:
        assert at_stop[("Preempted", key)] >= 50, key
    assert at_stop[("Admitted", "ns/w0024")] == 1
    by_name = {f"{w['namespace']}/{w['name']}": w for w in result["workloads"]}
    assert by_name["ns/w0024"]["state"] == "Admitted"
    for key in IN_THE_LOOP:
        assert by_name[key]["evictions"] >= 50, key


def test_exit_3_prints_the_run_so_far_as_json(tmp_path: Path) -> None:
    code, out, err = run(tmp_path, "json")
    assert code == 3
    assert err.splitlines()[0].startswith("simulation stopped: preemption loop: workload ns/w0020 ")
    check_partial(json.loads(out))


def test_exit_3_prints_the_run_so_far_as_yaml(tmp_path: Path) -> None:
    code, out, _ = run(tmp_path, "yaml")
    assert code == 3
    check_partial(yaml.safe_load(out))


def test_exit_3_table_says_where_it_stopped(tmp_path: Path) -> None:
    code, out, _ = run(tmp_path, "table")
    assert code == 3
    assert re.search(r"^end time +0\.024s$", out, re.M), out
    assert re.search(r"^stopped +preemption loop: workload ns/w0020 was admitted and preempted 50$", out, re.M), out
