"""Helpers shared by the API boundary tests."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pykueue.api import Inputs, Problem

Loader = Callable[..., tuple[Inputs, list[Problem]]]


def write(tmp_path: Path, text: str, name: str = "input.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


def problem_paths(problems: list[Problem]) -> list[str]:
    return [p.path for p in problems]


def only_problem(problems: list[Problem]) -> Problem:
    assert len(problems) == 1, "\n".join(str(p) for p in problems)
    return problems[0]


def fake_workload_from_job(job: dict[str, Any]) -> dict[str, Any]:
    """A minimal stand-in for the Job integration: one pod set "main" of ``parallelism`` pods."""
    spec = job.get("spec") or {}
    labels = job.get("metadata", {}).get("labels", {})
    wl_spec: dict[str, Any] = {
        "queueName": labels.get("kueue.x-k8s.io/queue-name"),
        "podSets": [{"name": "main", "count": spec.get("parallelism", 1), "template": spec.get("template")}],
    }
    wpc = labels.get("kueue.x-k8s.io/priority-class")
    pod_class = ((spec.get("template") or {}).get("spec") or {}).get("priorityClassName")
    if wpc:
        wl_spec["priorityClassRef"] = {
            "group": "kueue.x-k8s.io",
            "kind": "WorkloadPriorityClass",
            "name": wpc,
        }
    elif pod_class:
        wl_spec["priorityClassRef"] = {
            "group": "scheduling.k8s.io",
            "kind": "PriorityClass",
            "name": pod_class,
        }
    return {"metadata": {"name": "job-" + job["metadata"]["name"]}, "spec": wl_spec}


def laughs(levels: int, leaf: str = "x", width: int = 10) -> str:
    """Each level a list of ``width`` aliases of the one before: width**levels leaves from a few hundred
    bytes."""
    lines = [f"a0: &a0 [{', '.join([leaf] * width)}]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"
