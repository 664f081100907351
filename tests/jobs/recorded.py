"""Stand-ins shared by the job-side unit tests: a writer that records what it is told to write, and
the finalizer patches among those writes."""

from __future__ import annotations

from typing import Any

from pykueue.jobs.framework import Action, Patch


class Writes:
    """Stands for the job reconciler: records what it is told to write."""

    def __init__(self) -> None:
        self.done: list[Action] = []
        self.workloads: dict[str, Any] = {}

    async def execute(self, action: Action) -> None:
        self.done.append(action)


def finalizer_patches(actions: list[Action]) -> dict[str, Any]:
    """Pod name -> the finalizers a patch leaves it."""
    return {a.name: a.body["metadata"]["finalizers"] for a in actions
            if isinstance(a, Patch) and a.kind == "Pod" and "finalizers" in (a.body.get("metadata") or {})}
