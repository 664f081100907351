"""References among the inputs that resolve to nothing: valid objects, probably not what was meant.

The real API accepts each of these (objects refer to each other by name, and the other object may be
created later), so none is an error. A simulation starts from its inputs alone, though, and each one
leaves workloads pending or a ClusterQueue inactive without saying why; ``pykueue validate`` warns
about them. ``reference_warnings`` is a pure function of the loaded ``Inputs`` so that any front end
can print the same lines. Found:

- a Workload's ``spec.queueName`` (a Job's ``kueue.x-k8s.io/queue-name`` label) naming no LocalQueue
  of its namespace; a Workload's ``status.admission.clusterQueue`` naming no ClusterQueue;
- a LocalQueue's ``spec.clusterQueue`` naming no ClusterQueue, or a ClusterQueue whose
  ``namespaceSelector`` leaves the LocalQueue's namespace out;
- a ClusterQueue (or Cohort) flavor naming no ResourceFlavor, a ClusterQueue's admission check naming
  no AdmissionCheck (cohort names need no object: a cohort exists once something names it);
- a ClusterQueue whose ``namespaceSelector`` selects none of the namespaces (declared ones, and those
  the namespaced inputs use, each labelled ``kubernetes.io/metadata.name``); an absent selector is
  upstream's "nothing" selector, as in ``pykueue.engine.selectors``, so it always warns;
- a Job left unmanaged because its queue label is misspelt, empty, or given as the annotation
  ``kueue.x-k8s.io/queue-name`` (upstream no longer reads it; v0.18 takes the label alone).

Objects replaced or added at a later time (``Inputs.changes``) count as defined and are checked too.
Paths are the v1beta2 ones, as for validation problems.
"""

from __future__ import annotations

import difflib
from collections import defaultdict
from collections.abc import Iterable, Iterator
from typing import Any

from pykueue.api.convert import NAMESPACE_NAME_LABEL
from pykueue.api.inputs import Inputs, Problem, Source, SubmittedWorkload, UnmanagedJob
from pykueue.engine import model
from pykueue.engine.selectors import selector_matches

QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
# Kueue's other Job labels: close in spelling to the queue label, but meant as themselves
KNOWN_KUEUE_LABELS = frozenset(
    {
        "kueue.x-k8s.io/priority-class",
        "kueue.x-k8s.io/pod-group-name",
        "kueue.x-k8s.io/prebuilt-workload-name",
        "kueue.x-k8s.io/managed",
        "kueue.x-k8s.io/job-uid",
        "kueue.x-k8s.io/multikueue-origin",
        "kueue.x-k8s.io/max-exec-time-seconds",
        "kueue.x-k8s.io/podset",
        "kueue.x-k8s.io/elastic-job",
    }
)
MISSPELLING_CUTOFF = 0.8  # difflib ratio of a whole label key to the queue label
NAME_PART_CUTOFF = 0.85  # ratio of a key's name part to "queue-name", when its prefix mentions kueue
_UNKNOWN_SOURCE = Source("<inputs>", 0)
_SHOWN_NAMESPACES = 5


class _Index:
    """Every name the inputs define, at any time of the clock."""

    def __init__(self, inputs: Inputs, invalid: Iterable[Problem] = ()) -> None:
        changed: dict[str, list[Any]] = defaultdict(list)
        for change in inputs.changes:
            if not change.delete and change.obj is not None:
                changed[change.kind].append(change.obj)
        self.flavors = {f.name for f in (*inputs.resource_flavors, *changed["ResourceFlavor"])}
        self.checks = {c.name for c in (*inputs.admission_checks, *changed["AdmissionCheck"])}
        self.cluster_queues: dict[str, list[model.ClusterQueue]] = defaultdict(list)
        for cq in (*inputs.cluster_queues, *changed["ClusterQueue"]):
            self.cluster_queues[cq.name].append(cq)
        self.local_queues: dict[str, set[str]] = defaultdict(set)
        for lq in (*inputs.local_queues, *changed["LocalQueue"]):
            self.local_queues[lq.namespace].add(lq.name)
        self.namespaces: dict[str, list[dict[str, str]]] = defaultdict(list)
        for ns in (*inputs.namespaces, *changed["Namespace"]):
            self.namespaces[ns.name].append(ns.labels)
        # objects written but invalid (validate shows the warnings beside the errors): they count as
        # defined, and what depends on their content (a selector, a namespace's labels) is not judged
        self.unsure_cluster_queues: set[str] = set()
        self.unsure_namespaces = False
        for problem in invalid:
            if problem.kind == "ResourceFlavor":
                self.flavors.add(problem.name)
            elif problem.kind == "AdmissionCheck":
                self.checks.add(problem.name)
            elif problem.kind == "LocalQueue" and problem.namespace:
                self.local_queues[problem.namespace].add(problem.name)
            elif problem.kind == "ClusterQueue":
                self.unsure_cluster_queues.add(problem.name)
            elif problem.kind in ("Namespace", "Document"):
                self.unsure_namespaces = True

    def namespace_labels(self, name: str) -> list[dict[str, str]]:
        return self.namespaces.get(name) or [{NAMESPACE_NAME_LABEL: name}]

    def selects(self, cq: str, namespace: str) -> bool:
        """Whether any version of the ClusterQueue selects any version of the namespace."""
        return any(
            selector_matches(version.namespace_selector, labels)
            for version in self.cluster_queues.get(cq, ())
            for labels in self.namespace_labels(namespace)
        )


def _did_you_mean(name: str, candidates: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, sorted(candidates), n=1, cutoff=0.6)
    return f' (did you mean "{close[0]}"?)' if close else ""


def _objects(inputs: Inputs, kind: str, initial: Iterable[Any]) -> Iterator[tuple[Source, Any]]:
    """The initial objects of a kind with their sources, then that kind's timed changes."""
    for obj in initial:
        key = f"{obj.namespace}/{obj.name}" if kind == "LocalQueue" else obj.name
        yield inputs.sources.get((kind, key), _UNKNOWN_SOURCE), obj
    for change in inputs.changes:
        if change.kind == kind and not change.delete and change.obj is not None:
            yield change.source, change.obj


def _workloads(inputs: Inputs) -> Iterator[SubmittedWorkload]:
    yield from inputs.workloads
    for change in inputs.changes:
        if isinstance(change.obj, SubmittedWorkload):
            yield change.obj


def _workload_references(inputs: Inputs, index: _Index) -> Iterator[Problem]:
    for submitted in _workloads(inputs):
        wl, source = submitted.workload, submitted.source
        queues = index.local_queues.get(wl.namespace, set())
        if wl.queue_name and wl.queue_name not in queues:
            path = "spec.queueName" if wl.kind == "Workload" else f"metadata.labels[{QUEUE_NAME_LABEL}]"
            elsewhere = sorted(ns for ns, names in index.local_queues.items() if wl.queue_name in names)
            hint = (
                f' (there is one in namespace "{elsewhere[0]}", but a LocalQueue serves its own namespace only)'
                if elsewhere
                else _did_you_mean(wl.queue_name, queues)
            )
            message = (
                f'no LocalQueue "{wl.queue_name}" in namespace "{wl.namespace}" among the inputs: '
                f"the {wl.kind} stays pending{hint}"
            )
            yield Problem(source, wl.kind, wl.namespace, wl.name, path, message)
        admitted_to = wl.admission.cluster_queue if wl.admission is not None else None
        if admitted_to and admitted_to not in index.cluster_queues and admitted_to not in index.unsure_cluster_queues:
            message = f'no ClusterQueue "{admitted_to}" among the inputs: its quota is counted nowhere'
            yield Problem(source, wl.kind, wl.namespace, wl.name, "status.admission.clusterQueue", message)


def _local_queue_references(inputs: Inputs, index: _Index) -> Iterator[Problem]:
    for source, obj in _objects(inputs, "LocalQueue", inputs.local_queues):
        lq: model.LocalQueue = obj
        cq = lq.cluster_queue
        if cq in index.unsure_cluster_queues or index.unsure_namespaces:
            continue
        if cq not in index.cluster_queues:
            message = (
                f'no ClusterQueue "{cq}" among the inputs: workloads in this LocalQueue stay pending'
                f"{_did_you_mean(cq, [*index.cluster_queues, *index.unsure_cluster_queues])}"
            )
        elif not index.selects(cq, lq.namespace) and _selected(index, cq):
            # (a ClusterQueue that selects no namespace at all is reported once, on itself)
            message = (
                f'the namespaceSelector of ClusterQueue "{cq}" does not select namespace "{lq.namespace}": '
                "workloads in this LocalQueue are never admitted"
            )
        else:
            continue
        yield Problem(source, "LocalQueue", lq.namespace, lq.name, "spec.clusterQueue", message)


def _selected(index: _Index, cq: str) -> list[str]:
    return sorted(ns for ns in index.namespaces if index.selects(cq, ns))


def _quota_flavors(
    index: _Index, source: Source, kind: str, name: str, groups: tuple[model.ResourceGroup, ...], effect: str
) -> Iterator[Problem]:
    for i, group in enumerate(groups):
        for j, flavor in enumerate(group.flavors):
            if flavor.name not in index.flavors:
                message = (
                    f'no ResourceFlavor "{flavor.name}" among the inputs: {effect}'
                    f"{_did_you_mean(flavor.name, index.flavors)}"
                )
                yield Problem(source, kind, None, name, f"spec.resourceGroups[{i}].flavors[{j}].name", message)


def _cluster_queue_references(inputs: Inputs, index: _Index) -> Iterator[Problem]:
    inactive = "the ClusterQueue stays inactive and admits nothing"
    for source, obj in _objects(inputs, "ClusterQueue", inputs.cluster_queues):
        cq: model.ClusterQueue = obj
        yield from _quota_flavors(index, source, "ClusterQueue", cq.name, cq.resource_groups,
                                  f"{inactive} (FlavorNotFound)")
        for i, rule in enumerate(cq.admission_checks):
            if rule.name not in index.checks:
                message = (
                    f'no AdmissionCheck "{rule.name}" among the inputs: {inactive} (AdmissionCheckNotFound)'
                    f"{_did_you_mean(rule.name, index.checks)}"
                )
                path = f"spec.admissionChecksStrategy.admissionChecks[{i}].name"
                yield Problem(source, "ClusterQueue", None, cq.name, path, message)
        if cq.namespace_selector is None:
            message = (
                "not set: a ClusterQueue without a namespaceSelector admits workloads from no namespace "
                "(namespaceSelector: {} admits every namespace)"
            )
            yield Problem(source, "ClusterQueue", None, cq.name, "spec.namespaceSelector", message)
        elif index.namespaces and not index.unsure_namespaces and not any(
            selector_matches(cq.namespace_selector, labels)
            for versions in index.namespaces.values()
            for labels in versions
        ):
            names = sorted(index.namespaces)
            shown = ", ".join(names[:_SHOWN_NAMESPACES]) + (", ..." if len(names) > _SHOWN_NAMESPACES else "")
            message = f"selects none of the namespaces among the inputs ({shown}): it admits no workload"
            yield Problem(source, "ClusterQueue", None, cq.name, "spec.namespaceSelector", message)
    for source, obj in _objects(inputs, "Cohort", inputs.cohorts):
        cohort: model.Cohort = obj
        yield from _quota_flavors(index, source, "Cohort", cohort.name, cohort.resource_groups,
                                  "this quota can never be used")


def misspelt_queue_label(key: str) -> bool:
    """A label key that was probably meant to be ``kueue.x-k8s.io/queue-name``."""
    if key == QUEUE_NAME_LABEL or key in KNOWN_KUEUE_LABELS:
        return False
    lowered = key.lower()
    if difflib.SequenceMatcher(None, lowered, QUEUE_NAME_LABEL).ratio() >= MISSPELLING_CUTOFF:
        return True
    prefix, _, name = lowered.rpartition("/")
    name = name.replace("_", "-")
    close_name = difflib.SequenceMatcher(None, name, "queue-name").ratio() >= NAME_PART_CUTOFF
    return close_name and (not prefix or "kueue" in prefix)


def _unmanaged_job_hints(job: UnmanagedJob) -> Iterator[Problem]:
    def problem(path: str, message: str) -> Problem:
        return Problem(job.source, job.kind, job.namespace, job.name, path, message)

    unmanaged = f"without it Kueue does not manage this {job.kind}"
    if job.labels.get(QUEUE_NAME_LABEL) and job.namespace_left_out:
        yield problem(f"metadata.labels[{QUEUE_NAME_LABEL}]",
                      f"the Configuration's managedJobsNamespaceSelector does not select namespace "
                      f"{job.namespace!r}: Kueue does not manage this {job.kind}")
        return
    if job.labels.get(QUEUE_NAME_LABEL) and not job.framework_enabled:
        yield problem(f"metadata.labels[{QUEUE_NAME_LABEL}]",
                      f'the Configuration\'s integrations.frameworks does not enable "{job.framework}": '
                      f"Kueue does not manage this {job.kind}")
        return
    if QUEUE_NAME_LABEL in job.labels:
        yield problem(f"metadata.labels[{QUEUE_NAME_LABEL}]", f"empty: the label must name a LocalQueue; {unmanaged}")
    for key in job.labels:
        if misspelt_queue_label(key):
            yield problem(f"metadata.labels[{key}]",
                          f"looks like a misspelling of the label {QUEUE_NAME_LABEL}; {unmanaged}")
    if job.annotations.get(QUEUE_NAME_LABEL):
        message = (
            f"Kueue no longer reads the queue name from an annotation: make it the label {QUEUE_NAME_LABEL}; "
            f"{unmanaged}"
        )
        yield problem(f"metadata.annotations[{QUEUE_NAME_LABEL}]", message)


def reference_warnings(inputs: Inputs, invalid: Iterable[Problem] = ()) -> list[Problem]:
    """Every dangling or mistaken reference among ``inputs``, in input order (file, then document).
    ``invalid`` are the loader's problems: the objects they name exist, though they were not loaded."""
    index = _Index(inputs, list(invalid))
    found = [
        *_workload_references(inputs, index),
        *_local_queue_references(inputs, index),
        *_cluster_queue_references(inputs, index),
        *(hint for job in inputs.unmanaged_jobs for hint in _unmanaged_job_hints(job)),
    ]
    return in_input_order(inputs, found)


def in_input_order(inputs: Inputs, found: Iterable[Problem]) -> list[Problem]:
    """Sorted by file (in reading order) and document; a document's findings keep their order."""
    order = {file: i for i, file in enumerate(inputs.files)}
    return sorted(found, key=lambda p: (order.get(p.source.file, len(order)), p.source.doc))


def all_warnings(inputs: Inputs, invalid: Iterable[Problem] = ()) -> list[Problem]:
    """The loader's warnings and the reference warnings together, in input order."""
    return in_input_order(inputs, [*inputs.warnings, *reference_warnings(inputs, invalid)])
