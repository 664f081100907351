"""Runs a scenario file through ``pykueue simulate`` and checks the expectations it states.

A scenario is one YAML file: the first document is ``kind: Scenario`` (a description, optional
``until``, and ``expect``), the rest are the simulator's inputs. Only the fields ``expect`` names are
checked, so each scenario states exactly the outcome it is about.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

SCENARIOS = Path(__file__).parent / "scenarios"


def split(path: Path) -> tuple[dict[str, Any], str]:
    text = path.read_text()
    head, _, rest = text.partition("\n---\n")
    meta = yaml.safe_load(head)
    assert meta.get("kind") == "Scenario", f"{path}: first document must be kind: Scenario"
    return meta, rest


def simulate(inputs: str, tmp: Path, *args: str) -> tuple[int, dict[str, Any] | None, str]:
    f = tmp / "inputs.yaml"
    f.write_text(inputs)
    proc = subprocess.run(
        [sys.executable, "-m", "pykueue.cli", "simulate", str(f), "--output", "json", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    data = json.loads(proc.stdout) if proc.returncode in (0, 1) and proc.stdout else None
    return proc.returncode, data, proc.stderr


def check(meta: dict[str, Any], result: dict[str, Any]) -> None:
    expect = meta.get("expect", {})
    by_key = {f"{w['namespace']}/{w['name']}": w for w in result["workloads"]}
    for key, fields in (expect.get("workloads") or {}).items():
        assert key in by_key, f"workload {key} missing from result"
        w = by_key[key]
        for field, want in fields.items():
            if field == "flavors":
                got = {}
                for ps in (w["admission"] or {}).get("podSetAssignments", []):
                    got.update(ps["flavors"])
                assert got == want, f"{key}.flavors: got {got}, want {want}"
            elif field == "count":
                got = sum(ps["count"] for ps in (w["admission"] or {}).get("podSetAssignments", []))
                assert got == want, f"{key}.count: got {got}, want {want}"
            else:
                assert w[field] == want, f"{key}.{field}: got {w[field]!r}, want {want!r}"
    if "admittedCount" in expect:
        n = sum(1 for w in result["workloads"] if w["state"] == "Admitted")
        assert n == expect["admittedCount"], f"admitted: got {n}, want {expect['admittedCount']}"
    if "events" in expect:
        events = result["events"]
        pos = 0
        for want in expect["events"]:
            while pos < len(events) and not all(events[pos].get(k) == v for k, v in want.items()):
                pos += 1
            assert pos < len(events), f"event {want} not found (in order) in {json.dumps(events, indent=0)}"
            pos += 1
    for want in expect.get("noEvents") or []:
        hits = [e for e in result["events"] if all(e.get(k) == v for k, v in want.items())]
        assert not hits, f"unexpected events {hits}"
    if "eventCount" in expect:
        for type_, n in expect["eventCount"].items():
            got = sum(1 for e in result["events"] if e["type"] == type_)
            assert got == n, f"{type_} events: got {got}, want {n}"
    for name, fields in (expect.get("clusterQueues") or {}).items():
        cq = next(c for c in result["clusterQueues"] if c["name"] == name)
        for field, want in fields.items():
            assert cq[field] == want, f"clusterQueue {name}.{field}: got {cq[field]!r}, want {want!r}"
    for name, wanted in (expect.get("workers") or {}).items():  # a MultiKueue worker's own result
        worker = next((w for w in result.get("workers") or [] if w["name"] == name), None)
        assert worker is not None, f"worker {name} missing from result"
        check({"expect": wanted}, worker)
    if "endTime" in expect:
        assert result["endTime"] == expect["endTime"], f"endTime {result['endTime']} != {expect['endTime']}"
