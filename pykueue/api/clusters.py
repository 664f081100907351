"""Several clusters in one simulation input (MultiKueue): a manager and its workers.

An object annotated ``pykueue.dev/cluster: NAME`` belongs to the worker cluster ``NAME`` (a
MultiKueueCluster of that name must be among the manager's objects); every other object is the
manager's, so an input without the annotation is read exactly as ``load_paths`` reads it. Each
cluster's objects are read by a loader of their own (its own names, queues, Configuration), and
the problems of all of them come back together, in input order.

The MultiKueue wiring the simulator needs is read from the manager's objects: which AdmissionChecks
are MultiKueue's (``controllerName: kueue.x-k8s.io/multikueue``) and which worker clusters the
MultiKueueConfig each one names lists. A cluster listed but not declared as a MultiKueueCluster is
missing, as upstream counts it: never nominated.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field

from pykueue.api.inputs import Inputs, Problem
from pykueue.api.loader import _bulk_allocation, _Doc, _Loader, _metadata
from pykueue.api.timing import NOMINATE
from pykueue.engine.multikueue import CONTROLLER_NAME, bad_parameters, builtin_dispatcher

CLUSTER_ANNOTATION = "pykueue.dev/cluster"


@dataclass(slots=True)
class Federation:
    """The manager's MultiKueue objects, as the simulator uses them."""

    # AdmissionCheck name -> the worker clusters of its MultiKueueConfig that are declared, in config order
    checks: dict[str, list[str]] = field(default_factory=dict)
    clusters: list[str] = field(default_factory=list)  # the declared MultiKueueClusters, in input order
    # worker -> the (start, end) seconds the manager cannot reach it (pykueue.dev/unreachable; a
    # pykueue.dev/delete-at on its MultiKueueCluster: from then on), in time order
    unreachable: dict[str, tuple[tuple[float, float], ...]] = field(default_factory=dict)
    # (seconds, AdmissionCheck, its clusters from then on): a MultiKueueConfig changed (pykueue.dev/at)
    # or deleted (pykueue.dev/delete-at) while the clock runs, in time order
    changes: list[tuple[float, str, list[str]]] = field(default_factory=list)


@dataclass(slots=True)
class ClusterInputs:
    """A manager's inputs and each worker's, by name (in the order the MultiKueueClusters are declared)."""

    manager: Inputs
    workers: dict[str, Inputs]
    federation: Federation


def _cluster_of(doc: _Doc) -> object:
    annotations = _metadata(doc.raw).get("annotations")
    return annotations.get(CLUSTER_ANNOTATION) if isinstance(annotations, dict) else None


def _strip(doc: _Doc) -> None:
    """The annotation said where the object goes; its cluster's loader reads it without (any other
    ``pykueue.dev/`` annotation is a problem there)."""
    meta = _metadata(doc.raw)
    annotations = dict(meta["annotations"])
    del annotations[CLUSTER_ANNOTATION]
    doc.raw = {**doc.raw, "metadata": {**meta, "annotations": annotations}}
    if not annotations:
        del doc.raw["metadata"]["annotations"]


def _listed(doc: _Doc) -> list[str]:
    spec = doc.raw.get("spec")
    listed = spec.get("clusters") if isinstance(spec, dict) else None
    return [c for c in listed if isinstance(c, str)] if isinstance(listed, list) else []


def _config_changes(fed: Federation, docs: list[_Doc]) -> None:
    """The MultiKueue checks' clusters as they start (the MultiKueueConfigs without ``pykueue.dev/at``)
    and as timed changes and deletions of the configs make them later (read after the loader's run,
    which reads the timing annotations)."""
    checks = _check_configs(docs)
    timed: list[tuple[float, int, str, list[str]]] = []
    start: dict[str, list[str]] = {}
    for i, doc in enumerate(docs):
        if doc.kind != "MultiKueueConfig":
            continue
        if doc.timing.at is None:
            start[doc.name] = _listed(doc)
        else:
            timed.append((doc.timing.at, i, doc.name, _listed(doc)))
        if doc.timing.delete_at is not None:
            timed.append((doc.timing.delete_at, i, doc.name, []))
    fed.checks = {check: [c for c in start.get(config, []) if c in fed.clusters] for check, config in checks.items()}
    fed.changes = [(at, check, [c for c in listed if c in fed.clusters])
                   for at, _, config, listed in sorted(timed, key=lambda t: (t[0], t[1]))
                   for check, named in checks.items() if named == config]


def _check_configs(docs: list[_Doc]) -> dict[str, str]:
    """MultiKueue AdmissionCheck -> the MultiKueueConfig its parameters name ("" when they name none)."""
    out: dict[str, str] = {}
    for doc in docs:
        spec = doc.raw.get("spec")
        spec = spec if isinstance(spec, dict) else {}
        if doc.kind == "AdmissionCheck" and spec.get("controllerName") == CONTROLLER_NAME:
            params = spec.get("parameters")
            out[doc.name] = params["name"] if bad_parameters(params) is None else ""  # type: ignore[index]
    return out


def _federation(docs: list[_Doc]) -> Federation:
    """The declared workers (their checks' clusters are read once the documents are: ``_config_changes``)."""
    fed = Federation()
    for doc in docs:
        if doc.kind == "MultiKueueCluster" and doc.name not in fed.clusters:
            fed.clusters.append(doc.name)
    return fed


def _outages(fed: Federation, docs: list[_Doc]) -> None:
    """Each worker's unreachable windows, from its MultiKueueCluster's annotations (read by the loader's
    run): a deleted MultiKueueCluster is unreachable from its deletion on, as the controller closes its
    connection then."""
    for doc in docs:
        if doc.kind != "MultiKueueCluster" or doc.timing.at is not None:
            continue
        windows = list(doc.timing.unreachable)
        gone = doc.timing.delete_at
        if gone is not None:
            windows = [(s, min(e, gone)) for s, e in windows if s < gone]
            if windows and windows[-1][1] >= gone:
                windows[-1] = (windows[-1][0], math.inf)
            else:
                windows.append((gone, math.inf))
        if windows:
            fed.unreachable[doc.name] = tuple(windows)


def _nominate_warnings(loader: _Loader, fed: Federation) -> None:
    """A ``pykueue.dev/nominate`` script that is never played (a built-in dispatcher nominates by
    itself) or names a worker no MultiKueueCluster declares: a warning, as for an unknown check."""
    builtin = builtin_dispatcher(loader.inputs.config.multi_kueue.dispatcher_name)
    for sub in loader.inputs.workloads:
        if not sub.nominate:
            continue
        w = sub.workload
        unknown = sorted({n for names, _ in sub.nominate for n in names if n not in fed.clusters})
        if builtin:
            message = (f"the dispatcher {loader.inputs.config.multi_kueue.dispatcher_name} nominates by itself: "
                       "the script is never played")
        elif unknown:
            message = f"{', '.join(unknown)} names no MultiKueueCluster: never nominated"
        else:
            continue
        loader.warnings.append(Problem(sub.source, w.kind, w.namespace, w.name,
                                       f"metadata.annotations[{NOMINATE}]", message))


def load_clusters(
    paths: Sequence[str | os.PathLike[str]], config_path: str | os.PathLike[str] | None = None
) -> tuple[Inputs, ClusterInputs | None, list[Problem]]:
    """Like ``load_paths``; with objects marked for worker clusters also their ``ClusterInputs``
    (None when no object is: a single cluster, read exactly as before)."""
    loader = _Loader()
    with _bulk_allocation():
        docs = loader.read([os.fspath(p) for p in paths], None if config_path is None else os.fspath(config_path))
        groups: dict[str, list[_Doc]] = {}
        manager: list[_Doc] = []
        marked: list[tuple[_Doc, object]] = []
        for doc in docs:
            name = _cluster_of(doc)
            if name is None:
                manager.append(doc)
            else:
                marked.append((doc, name))
        if not marked:
            loader.run(docs)
            loader.inputs.warnings = loader.sorted_warnings()
            return loader.inputs, None, loader.sorted_problems()
        federation = _federation(manager)
        for doc, name in marked:
            if not isinstance(name, str) or name not in federation.clusters:
                message = (f"{name!r} names no MultiKueueCluster among the manager's objects (declared: "
                           f"{', '.join(federation.clusters) or 'none'})")
                loader.report(doc.source, doc.kind, doc.namespace, doc.name or "-",
                              f"metadata.annotations[{CLUSTER_ANNOTATION}]", message)
                continue
            _strip(doc)
            groups.setdefault(name, []).append(doc)
        loader.elsewhere_checks = {doc.name for doc, _ in marked if doc.kind == "AdmissionCheck"}
        loader.run(manager)
        _outages(federation, manager)
        _config_changes(federation, manager)
        _nominate_warnings(loader, federation)
        problems, warnings = list(loader.problems), list(loader.warnings)
        workers: dict[str, Inputs] = {}
        for name in federation.clusters:
            worker = _Loader()
            worker.file_order = loader.file_order
            worker.run(groups.get(name, []))
            problems += worker.problems
            warnings += worker.warnings
            workers[name] = worker.inputs
    loader.problems, loader.warnings = problems, warnings
    loader.inputs.warnings = loader.sorted_warnings()
    for inputs in workers.values():
        inputs.warnings = []
    return loader.inputs, ClusterInputs(loader.inputs, workers, federation), loader.sorted_problems()
