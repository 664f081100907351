"""The controller's log is structured (issue 11): every line is logfmt with time, level, logger and
msg, and each decision is one line that names the decision, the workload, its ClusterQueue and why."""

from __future__ import annotations

import json
import re

import pytest

from tests.e2e.conftest import Kueue, eventually, is_true
from tests.e2e.objects import PLAIN_FLAVOR, bare_workload, cluster_queue, local_queue

pytestmark = pytest.mark.e2e

PAIR = re.compile(r'([A-Za-z][\w.]*)=("(?:[^"\\]|\\.)*"|[^\s"]*)(?:\s+|$)')


def parse(line: str) -> dict[str, str]:
    """One logfmt line -> its fields; a line that is not wholly key=value pairs fails the test."""
    fields, pos = {}, 0
    while pos < len(line):
        match = PAIR.match(line, pos)
        assert match, f"not logfmt at column {pos}: {line!r}"
        key, value = match.groups()
        fields[key] = json.loads(value) if value.startswith('"') else value
        pos = match.end()
    return fields


def test_one_structured_line_per_decision(kueue: Kueue, ns: str) -> None:
    start = kueue.log.stat().st_size
    kueue.apply(PLAIN_FLAVOR)
    kueue.apply(cluster_queue(ns, "2"))
    kueue.apply(local_queue(ns, ns))
    kueue.apply(bare_workload("logged", ns, "lq"))
    eventually(lambda: is_true(kueue.get("workload", "logged", ns), "Admitted"), what="admitted")
    kueue.cluster.kubectl("patch", "workload", "logged", "-n", ns, "--subresource=status", "--type=merge", "-p",
                          json.dumps({"status": {"conditions": [
                              {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                               "message": "kept", "lastTransitionTime": "2026-01-01T00:00:00Z"},
                              {"type": "Finished", "status": "True", "reason": "Succeeded",
                               "message": "done", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}))

    def decisions() -> list[dict[str, str]]:
        lines = kueue.log.read_bytes()[start:].decode().splitlines()
        records = [parse(line) for line in lines if line.startswith("time=")]
        for record in records:
            assert {"time", "level", "logger", "msg"} <= set(record), record
        return [r for r in records if r["msg"] == "decision" and r.get("workload") == f"{ns}/logged"]

    found = eventually(lambda: (d := decisions()) and {r["decision"] for r in d} >= {
        "QuotaReserved", "Admitted", "Finished"} and d, 30, what="the decisions logged")
    by_decision = {r["decision"]: r for r in found}
    admitted = by_decision["Admitted"]
    assert (admitted["clusterQueue"], admitted["reason"], admitted["level"]) == (ns, "Admitted", "info")
    assert admitted["flavors"] == "main:cpu=plain"
    assert by_decision["Finished"]["clusterQueue"] == ns
    assert [r["decision"] for r in found].count("Admitted") == 1
