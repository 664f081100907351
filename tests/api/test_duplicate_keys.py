"""A key repeated in one mapping is an error, never a silent 'last one wins' (two documents run
together without '---' would otherwise lose the first)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pykueue.api.loader import load_paths

CASES = {
    "documents run together": (
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: x}\n"
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: y}\n",
        "duplicate key 'apiVersion'",
    ),
    "nested block mapping": (
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata:\n  name: x\n  name: y\n",
        "duplicate key 'name'",
    ),
    "flow mapping": (
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: x, name: y}\n",
        "duplicate key 'name'",
    ),
}


@pytest.mark.parametrize("text,message", CASES.values(), ids=list(CASES))
def test_duplicate_keys_are_reported(tmp_path: Path, text: str, message: str) -> None:
    f = tmp_path / "dup.yaml"
    f.write_text(text)
    inputs, problems = load_paths([str(f)])
    assert len(problems) == 1
    assert str(problems[0]).startswith(f"{f}:1: ")
    assert message in problems[0].message
    assert inputs.cohorts == []
