"""The v1beta2 Kueue objects the repository already holds, as test input for the generated CRDs.

Every ``kueue.x-k8s.io/v1beta2`` document of ``tests/scenarios/*.yaml`` and ``pykueue/examples/*.yaml``
that pykueue's own loader accepts: what pykueue takes as valid, the API server must take too, with one
exception (``server_requires_more``). The documents the loader reports a problem for (scenarios written
to be invalid) are left out. ``v1beta1_examples`` are the v1beta1 documents, for the conversion webhook.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pykueue.api.documents import parse_file
from pykueue.api.loader import load_paths

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted((ROOT / "tests" / "scenarios").glob("*.yaml")) + sorted((ROOT / "pykueue" / "examples").glob("*.yaml"))
V1BETA2 = "kueue.x-k8s.io/v1beta2"
V1BETA1 = "kueue.x-k8s.io/v1beta1"


@dataclass(frozen=True)
class Example:
    file: Path
    number: int  # 1-based document number, as pykueue's error lines count them
    doc: dict[str, Any]

    @property
    def label(self) -> str:
        return f"{self.file.relative_to(ROOT)}:{self.number} {self.doc['kind']}"


def accepted(path: Path) -> list[Example]:
    """The file's v1beta2 Kueue documents that the loader accepts, read in the file's context.

    The documents are read by pykueue's own YAML reader, so a scalar means what it means to pykueue
    (``queueName: y`` is a string here; a YAML 1.1 reader such as kubectl's would see ``true``).
    """
    _, problems = load_paths([str(path)])
    rejected = {p.source.doc for p in problems}
    return [
        Example(path, raw.source.doc, copy.deepcopy(raw.content))
        for raw in parse_file(str(path), path.read_text())
        if isinstance(raw.content, dict)
        and raw.content.get("apiVersion") == V1BETA2
        and raw.source.doc not in rejected
    ]


def server_requires_more(doc: dict[str, Any]) -> bool:
    """A document the simulator completes itself but the API server refuses as upstream's does: a
    Workload naming a priority class without ``spec.priority`` (upstream's CEL rule "priority should not
    be nil when priorityClassRef is set"; the simulator reads the class's value when it is created)."""
    spec = doc.get("spec") or {}
    return doc.get("kind") == "Workload" and bool(spec.get("priorityClassRef")) and spec.get("priority") is None


def all_examples() -> list[Example]:
    return [example for path in SOURCES for example in accepted(path) if not server_requires_more(example.doc)]


def v1beta1_examples() -> list[Example]:
    """Every ``kueue.x-k8s.io/v1beta1`` document of the same files that the loader accepts."""
    out = []
    for path in SOURCES:
        _, problems = load_paths([str(path)])
        rejected = {p.source.doc for p in problems}
        out += [Example(path, raw.source.doc, copy.deepcopy(raw.content))
                for raw in parse_file(str(path), path.read_text())
                if isinstance(raw.content, dict) and raw.content.get("apiVersion") == V1BETA1
                and raw.source.doc not in rejected]
    return out
