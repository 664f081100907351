"""``simulate --generator``: upstream's performance scenario through the ordinary loader and simulator.

The generator's manifests go through the same validation and conversion as files do, so a generated
scenario cannot take a shortcut that a hand-written one could not.
"""

from __future__ import annotations

from typing import Any

from pykueue.api.inputs import Inputs, Problem
from pykueue.api.loader import load_documents
from pykueue.perf.generator import build_manifests, iter_manifests, load_generator
from pykueue.perf.summary import FactsCollector, ManifestFacts, observations_from_result, summarize


def load_generator_inputs(path: str, config_path: str | None = None) -> tuple[Inputs, list[Problem], list[dict[str, Any]]]:
    cfg = load_generator(path)
    manifests = build_manifests(cfg)
    inputs, problems = load_documents(manifests, source=path, config_path=config_path)
    return inputs, problems, manifests


def load_generator_run(path: str, config_path: str | None = None) -> tuple[Inputs, list[Problem], ManifestFacts]:
    """``load_generator_inputs`` for a run that needs only the summary's facts of the manifests: the
    manifests are made one at a time, their facts taken as they pass to the loader, which reads each
    Workload as it comes; no list of them is ever held."""
    cfg = load_generator(path)
    collector = FactsCollector()
    inputs, problems = load_documents(collector.watch(iter_manifests(cfg)), source=path, config_path=config_path,
                                      consume=True)
    return inputs, problems, collector.facts()


def summary_of(result: dict[str, Any], manifests: list[dict[str, Any]] | ManifestFacts) -> dict[str, Any]:
    return summarize(observations_from_result(result, manifests))
