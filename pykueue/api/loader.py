"""``load_paths``: YAML files and directories -> validated engine objects plus every problem found.

The loader never raises on user input: a document that cannot be understood becomes a ``Problem`` and
the rest are still read, so one run reports everything that is wrong. It works in three passes:

1. read every document and recognise its ``apiVersion``/``kind`` (unknown ones are errors);
2. parse each one with its boundary model, normalise v1beta1 to v1beta2, and apply Kueue's validation;
3. check the set as a whole (duplicates, one Configuration, priority classes), then convert each object
   once into ``pykueue.engine.model`` form, in document order.

A document annotated ``pykueue.dev/at`` is a timed change (``Change``) that replaces the object of the
same kind and name at that time, so it is not a duplicate; ``pykueue.dev/delete-at`` removes the object
(see ``pykueue.api.timing``). ``Change.obj`` is the engine object, a ``SubmittedWorkload`` for Workloads
and Jobs, and the new value for PriorityClass / WorkloadPriorityClass. Time 0 stands for the latest
``metadata.creationTimestamp`` among the inputs, so stamped objects may be created at negative times.

Cohorts may nest at most ``MAX_COHORT_DEPTH`` levels (at any moment of the clock): upstream sets no
bound, but the scheduler's preemption and fair-sharing searches walk the tree recursively, and no real
hierarchy comes near it. Things that are valid but probably not meant (a script for an admission check
that no input defines) are ``Inputs.warnings``; references to objects that no input defines are
found afterwards, from the ``Inputs``, by ``pykueue.api.references``.

A Workload or Job with ``metadata.generateName`` and no name is named as the API server would name it,
except that the 5 characters come from a hash instead of a random draw (see ``_Loader.name_generated``).
"""

from __future__ import annotations

import copy
import gc
import hashlib
import math
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from pykueue.api import convert, pod_group, validation
from pykueue.api.configuration import config_v1beta1, config_v1beta2, namespace_selector
from pykueue.api.convert import WorkloadBody
from pykueue.api.documents import ReadError, expand_paths, parse_file, read_text
from pykueue.api.fastyaml import DocumentReader
from pykueue.api.inputs import Change, Inputs, Problem, Source, SubmittedWorkload, UnmanagedJob
from pykueue.api.kinds import API_VERSIONS, CONFIG_V1BETA1, KUEUE_V1BETA1, REGISTRY, KindSpec
from pykueue.api.models import kueue_v1beta1 as v1
from pykueue.api.models import kueue_v1beta2 as v2
from pykueue.api.models.base import validation_errors
from pykueue.api.models.meta import ObjectMeta
from pykueue.api.names import generated_name
from pykueue.api.priority import PriorityClasses
from pykueue.api.timing import (
    ADMISSION_CHECKS,
    AT,
    Timing,
    creation_timestamp,
    parse_admission_checks,
    read_timing,
)
from pykueue.api.timing import PREFIX as TIMING_PREFIX
from pykueue.api.workloads import WorkloadReader, job_path, join_path
from pykueue.engine import model
from pykueue.jobs import managed, registry
from pykueue.jobs.integration import Frameworks

QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
POD_GROUP_LABEL = "kueue.x-k8s.io/pod-group-name"
DEFAULT_NAMESPACE = "default"
# each becomes engine workloads: one, but a Deployment one per replica (and a StatefulSet of 0 none)
WORKLOAD_KINDS = ("Workload", *registry.BY_KIND)
# The kinds an integration turns into Workloads, by upstream's framework name; on when the
# Configuration's integrations.frameworks lists them (upstream's default enables batch/job only).
INTEGRATIONS = {kind: i.framework for kind, i in registry.BY_KIND.items()}
SERVING_KINDS = tuple(i.kind for i in registry.INTEGRATIONS if i.serving)  # queued through the pod integration
DEFAULT_FRAMEWORKS = registry.enabled(("batch/job",))
# upstream's webhooks leave these namespaces alone (the pod-based integrations always did)
MAX_COHORT_DEPTH = 100  # cohorts from a root to the deepest cohort; see the module's docstring
_WORKLOAD_KEYS = frozenset(("apiVersion", "kind", "metadata", "spec", "status"))

Errors = list[tuple[str, str]]


@dataclass(slots=True, init=False)
class _Doc:
    """One recognised document on its way through the passes (``__init__`` written out: a
    dataclass's generated one stays interpreted in a compiled build)."""

    source: Source
    spec: KindSpec
    raw: dict[str, Any]
    kind: str
    name: str
    namespace: str | None
    generated_name: bool  # named from metadata.generateName (see _Loader.name_generated)
    obj: Any  # the validated model, v1beta2-shaped (for a Job: the Workload built from it)
    created: datetime | None
    timing: Timing
    annotations: dict[str, str]
    labels: dict[str, str]
    members: list[tuple[str, Any]] | None  # a Deployment's (pod name, Workload) per replica
    pod_class_path: str | None  # where a Ray object names the PriorityClass it is given
    parsed: bool | None  # parsed already as it was read (see load_documents), and valid

    def __init__(self, source: Source, spec: KindSpec, raw: dict[str, Any], kind: str, name: str,
                 namespace: str | None, generated_name: bool = False) -> None:
        self.source, self.spec, self.raw, self.kind = source, spec, raw, kind
        self.name, self.namespace, self.generated_name = name, namespace, generated_name
        self.obj = self.created = self.members = self.pod_class_path = self.parsed = None
        self.timing = Timing()
        self.annotations = {}
        self.labels = {}

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace is not None else self.name

    def member(self, name: str, obj: Any) -> _Doc:
        """One replica of a Deployment or serving object: this document as the Pod ``name``
        (``copy.copy`` cannot make a compiled class with a written-out ``__init__``)."""
        member = _Doc(self.source, self.spec, self.raw, self.kind, name, self.namespace, self.generated_name)
        member.obj, member.created = obj, self.created
        member.timing = copy.copy(self.timing)
        member.annotations, member.labels = self.annotations, self.labels
        member.pod_class_path, member.parsed = self.pod_class_path, self.parsed
        return member


def _managed_by(doc: _Doc) -> str | None:
    """The job's managedBy as written (``spec.managedBy``, a Kubeflow job's ``spec.runPolicy.managedBy``),
    for the kinds that have one: MultiKueue checks it."""
    integration = registry.BY_KIND.get(doc.kind)
    return None if integration is None else integration.managed_by(doc.raw)


_READ: dict[str, Any] = {}  # the raw text of a document read whole into its model, no longer held
_BUILT = Timing()  # the timing of a Workload document once built into its SubmittedWorkload


def _metadata(raw: dict[str, Any]) -> dict[str, Any]:
    meta = raw.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _frameworks(docs: list[_Doc]) -> Frameworks:
    """The Configuration's ``integrations.frameworks`` (read before the documents it decides about are;
    a malformed list is the Configuration's own problem, reported when it is validated)."""
    for doc in docs:
        if doc.kind == "Configuration":
            integrations = doc.raw.get("integrations")
            frameworks = integrations.get("frameworks") if isinstance(integrations, dict) else None
            if isinstance(frameworks, list):
                listed = [f for f in frameworks if isinstance(f, str)]
                return registry.enabled(listed)
    return DEFAULT_FRAMEWORKS


def _scope(docs: list[_Doc]) -> managed.Scope:
    """The Configuration's ``managedJobsNamespaceSelector`` and the Namespaces' labels (as first
    declared); a malformed selector is the Configuration's own problem, reported when it is validated."""
    selector: model.LabelSelector | None = managed.DEFAULT_SELECTOR
    labels: dict[str, dict[str, str]] = {}
    for doc in docs:
        if doc.kind == "Configuration":
            selector, _ = namespace_selector(doc.raw.get("managedJobsNamespaceSelector"), doc.raw.get("namespace"))
        elif doc.kind == "Namespace" and doc.name and doc.name not in labels:
            found = _metadata(doc.raw).get("labels")
            labels[doc.name] = {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}
    return managed.Scope(selector, labels.get)


class _Loader:
    def __init__(self) -> None:
        self.frameworks = DEFAULT_FRAMEWORKS
        self.scope = managed.DEFAULT_SCOPE
        self.reader = DocumentReader()
        self.workloads = WorkloadReader()
        self.inputs = Inputs()
        self.problems: list[Problem] = []
        self.warnings: list[Problem] = []
        self._class_changes: list[tuple[float, int, str, str, int | None]] = []
        self.file_order: dict[str, int] = {}
        self.elsewhere_checks: set[str] = set()  # AdmissionChecks of other clusters (MultiKueue workers)
        # Equal label sets are one dict, read only (generated workloads of a template share theirs).
        self._labels: dict[tuple[tuple[str, str], ...], dict[str, str]] = {}
        self._floats: dict[float, Any] = {}

    def shared_float(self, value: float | None) -> Any:
        """One float object for each value the workloads' timings hold. Pure Python shares them
        anyway (a duration's text is parsed once); compiled (mypyc), a float is held unboxed and
        boxed anew where a workload stores it: 24 bytes and a block for each of its five timings,
        for each of a million workloads. ``-0.0`` keeps its own sign."""
        if value is None or (value == 0.0 and math.copysign(1.0, value) < 0):
            return value
        return self._floats.setdefault(value, value)

    # --- reporting --------------------------------------------------------------------------------

    def report(
        self, source: Source, kind: str, namespace: str | None, name: str, path: str, message: str
    ) -> None:
        # one problem is one line of output, whatever the underlying library wrote
        self.problems.append(Problem(source, kind, namespace, name, path, " ".join(message.split())))

    def doc_problems(self, doc: _Doc, errors: Errors) -> None:
        for path, message in errors:
            if doc.kind == "Job":
                path = job_path(path)  # a Pod's paths come back from the pod integration already mapped
            self.report(doc.source, doc.kind, doc.namespace, doc.name or "-", path, message)

    # --- pass 1: read and recognise ---------------------------------------------------------------

    def read(self, paths: list[str], config_path: str | None) -> list[_Doc]:
        docs: list[_Doc] = []
        batches = [([config_path], True)] if config_path is not None else []
        batches.append((paths, False))
        for batch, is_config_flag in batches:
            for item in expand_paths(batch):
                file = item.path if isinstance(item, ReadError) else item
                self.file_order.setdefault(file, len(self.file_order))
                text = item if isinstance(item, ReadError) else read_text(item)
                if isinstance(text, ReadError):
                    self.report(Source(file, 0), "File", None, file, "<file>", text.message)
                    continue
                raws = parse_file(file, text, self.reader)
                if is_config_flag and all(raw.error is None and raw.content is None for raw in raws):
                    message = "the --config file holds no document; it must hold a Kueue Configuration"
                    self.report(Source(file, 0), "File", None, file, "<file>", message)
                for raw in raws:
                    if raw.error is not None:
                        self.report(raw.source, "Document", None, "-", "<document>", raw.error)
                    elif raw.content is not None:
                        doc = self.recognise(raw.source, raw.content, is_config_flag)
                        if doc is not None:
                            docs.append(doc)
        return docs

    def recognise(self, source: Source, content: object, is_config_flag: bool) -> _Doc | None:
        if not isinstance(content, dict):
            message = "a document must be a mapping (a Kubernetes object)"
            self.report(source, "Document", None, "-", "<document>", message)
            return None
        api_version, kind = content.get("apiVersion"), content.get("kind")
        meta = _metadata(content)
        given = meta.get("name")
        name: str = given if isinstance(given, str) else ""
        shown = kind if isinstance(kind, str) and kind else "Object"
        for key, value in (("apiVersion", api_version), ("kind", kind)):
            if value is None or value == "":
                self.report(source, shown, None, name or "-", key, f"Required value: {key} must be set")
                return None
            if not isinstance(value, str):
                self.report(source, shown, None, name or "-", key, f"must be a string, got {value!r}")
                return None
        spec = REGISTRY.get((api_version, kind))  # type: ignore[arg-type]
        if spec is None:
            if api_version in API_VERSIONS:
                known = ", ".join(API_VERSIONS[api_version])  # type: ignore[index]
                message = f'unknown kind "{kind}" for apiVersion "{api_version}" (known kinds: {known})'
                self.report(source, shown, None, name or "-", "kind", message)
            else:
                message = f'unknown apiVersion "{api_version}" for kind "{kind}"'
                self.report(source, shown, None, name or "-", "apiVersion", message)
            return None
        namespace = None
        if spec.namespaced:
            ns = meta.get("namespace")
            namespace = ns if isinstance(ns, str) and ns else DEFAULT_NAMESPACE
        if spec.kind == "Configuration":
            name = name or "config"
        prefix = meta.get("generateName")
        # named once every document is read, so that a generated name can avoid every given one
        generated = not name and spec.kind in WORKLOAD_KINDS and isinstance(prefix, str) and bool(prefix)
        doc = _Doc(source, spec, content, spec.kind, name, namespace, generated)
        if is_config_flag and spec.kind != "Configuration":
            self.doc_problems(doc, [("kind", "the --config file must hold a Kueue Configuration")])
            return None
        return doc

    @staticmethod
    def name_generated(docs: list[_Doc]) -> None:
        """Name the documents that carry only ``metadata.generateName``, as the API server would but
        reproducibly: the 5 characters hash the document's content and how many identical documents
        came before it. So the same inputs always give the same names, copies of one document get
        different ones, and editing an unrelated document renames nothing. A name that a Job or
        Workload of the namespace already has (both become one engine workload) is drawn again."""
        pending = [doc for doc in docs if doc.generated_name]
        if not pending:
            return
        family = WORKLOAD_KINDS
        taken = {(d.namespace, d.name) for d in docs if d.kind in family and not d.generated_name}
        copies: dict[bytes, int] = {}
        for doc in pending:
            content = hashlib.sha256(_canonical(doc.raw).encode()).digest()
            copies[content] = occurrence = copies.get(content, 0) + 1
            prefix = _metadata(doc.raw)["generateName"]
            attempt = 0
            name = generated_name(prefix, b"%s:%d:%d" % (content, occurrence, attempt))
            while (doc.namespace, name) in taken:
                attempt += 1
                name = generated_name(prefix, b"%s:%d:%d" % (content, occurrence, attempt))
            taken.add((doc.namespace, name))
            doc.name = name

    # --- pass 2: parse, normalise, validate -------------------------------------------------------

    def is_ignored(self, doc: _Doc) -> bool:
        """A Job or Pod without the queue-name label, whose integration the Configuration does not
        enable (``integrations.frameworks``, upstream's names; default: batch/job only), or in a namespace
        ``managedJobsNamespaceSelector`` leaves out (default: kube-system and kueue-system), is not
        managed by Kueue: it is read nowhere."""
        framework = INTEGRATIONS.get(doc.kind)
        if framework is None:
            return False
        if not self.scope.selected(doc.namespace or DEFAULT_NAMESPACE):
            return True  # managedJobsNamespaceSelector leaves its namespace out, queue label or not
        reading = registry.BY_KIND[doc.kind].reading
        if reading is not None and reading.queued is not None and not reading.queued(doc.raw):
            return True  # not Kueue's at all (a RayJob that runs on an existing cluster)
        labels = _metadata(doc.raw).get("labels")
        return framework not in self.frameworks or not (isinstance(labels, dict) and labels.get(QUEUE_NAME_LABEL))

    def note_unmanaged(self, doc: _Doc) -> None:
        """Keep an ignored Job's labels and annotations: they may show it was meant to be queued."""
        meta = _metadata(doc.raw)

        def strings(value: object) -> dict[str, str]:
            if not isinstance(value, dict):
                return {}
            return {k: "" if v is None else str(v) for k, v in value.items() if isinstance(k, str)}

        framework = INTEGRATIONS.get(doc.kind, "batch/job")
        self.inputs.unmanaged_jobs.append(
            UnmanagedJob(doc.source, doc.namespace or DEFAULT_NAMESPACE, doc.name or "-",
                         strings(meta.get("labels")), strings(meta.get("annotations")), doc.kind, framework,
                         framework in self.frameworks, not self.scope.selected(doc.namespace or DEFAULT_NAMESPACE))
        )

    def parse_safely(self, doc: _Doc) -> bool:
        """``parse``, with an internal error reported as the document's problem."""
        try:
            return self.parse(doc)
        except Exception as exc:  # a bug must not hide the other documents' problems
            self.doc_problems(doc, [("<document>", f"internal error while reading this document: {exc!r}")])
            return False

    def parse(self, doc: _Doc) -> bool:
        """Validate one document; on success ``doc.obj`` holds its v1beta2-shaped model."""
        if doc.kind == "Workload" and _WORKLOAD_KEYS.issuperset(doc.raw) and doc.raw.get("status") is None:
            return self.parse_workload(doc)
        try:
            obj = doc.spec.model.model_validate(doc.raw)
        except ValidationError as exc:
            found = validation_errors(doc.spec.model, doc.raw, exc)
            if doc.kind != "Configuration" and not any(p.startswith("metadata") for p, _ in found):
                found += self.name_errors(doc, _metadata(doc.raw))
            self.doc_problems(doc, found)
            return False
        errors: Errors = []
        if (
            isinstance(obj, v1.ClusterQueue)
            and obj.spec.admission_checks
            and obj.spec.admission_checks_strategy
        ):
            errors.append(
                ("spec", "Either AdmissionChecks or AdmissionCheckStrategy can be set, but not both")
            )
        if isinstance(obj, v1.ClusterQueue | v1.Workload | v1.AdmissionCheck | v1.MultiKueueCluster):
            obj = obj.to_v1beta2()
        doc.obj = obj
        if doc.kind != "Configuration":
            errors += self.metadata_errors(doc, obj.metadata)  # type: ignore[attr-defined]
        errors += self.kind_errors(doc)
        self.doc_problems(doc, errors)
        return not errors

    def parse_workload(self, doc: _Doc) -> bool:
        """A Workload without status, read as metadata + spec so the spec is validated once per text."""
        raw = doc.raw
        errors: Errors = []
        meta = None
        if raw.get("metadata") is None:
            errors.append(("metadata", "Required value"))
        else:
            try:
                meta = ObjectMeta.model_validate(raw["metadata"])
            except ValidationError as exc:
                found = validation_errors(ObjectMeta, raw["metadata"], exc)
                errors += [(join_path("metadata", p), m) for p, m in found]
        spec, spec_errors = self.workloads.spec(doc.spec.api_version, raw.get("spec"))
        errors += spec_errors
        if meta is not None:
            errors += self.metadata_errors(doc, meta)
        elif not any(p.startswith("metadata") for p, _ in errors):
            errors += self.name_errors(doc, _metadata(raw))
        if spec is not None and meta is not None:
            doc.obj = WorkloadBody(spec)  # the metadata is read into the document's fields above
        self.doc_problems(doc, errors)
        if not errors:
            doc.raw = _READ  # read whole into doc.obj; no later pass reads a Workload's text
        return not errors

    def name_errors(self, doc: _Doc, meta: dict[str, Any]) -> Errors:
        """``metadata.name`` and ``metadata.namespace`` rules (also read from a raw document)."""
        if doc.generated_name:
            prefix = f'"{meta.get("generateName")}"'
            errors = [
                ("metadata.generateName", message.replace(f'"{doc.name}"', prefix))
                for _, message in validation.object_name(doc.name)
            ]
        else:
            errors = validation.object_name(meta.get("name"), dns_label=doc.kind == "Namespace")
        if doc.spec.namespaced:
            errors += validation.namespace_name(doc.namespace or "")
        elif meta.get("namespace"):
            errors.append(
                ("metadata.namespace", f"Forbidden: not allowed on this type ({doc.kind} is cluster-scoped)")
            )
        return errors

    def metadata_errors(self, doc: _Doc, meta: ObjectMeta) -> Errors:
        """Names, simulation annotations and the creation timestamp; fills the document's fields."""
        errors = self.name_errors(
            doc, {"name": meta.name, "namespace": meta.namespace, "generateName": meta.generate_name}
        )
        errors += validation.annotations_size(meta.annotations)
        doc.annotations = dict(meta.annotations or {})
        labels = dict(meta.labels or {})
        doc.labels = self._labels.setdefault(tuple(labels.items()), labels)
        doc.timing, timing_errors = read_timing(doc.annotations, doc.kind)
        errors += timing_errors
        if meta.creation_timestamp is not None:
            try:
                doc.created = creation_timestamp(meta.creation_timestamp)
            except ValueError as exc:
                errors.append(("metadata.creationTimestamp", f"Invalid value: {exc}"))
        return errors

    def kind_errors(self, doc: _Doc) -> Errors:
        checks: dict[str, Callable[[Any], Errors]] = {
            "ClusterQueue": validation.cluster_queue,
            "Cohort": validation.cohort,
            "LocalQueue": validation.local_queue,
            "ResourceFlavor": validation.resource_flavor,
            "AdmissionCheck": validation.admission_check,
            "MultiKueueConfig": validation.multikueue_config,
            "MultiKueueCluster": validation.multikueue_cluster,
            "PriorityClass": validation.priority_class,
            "Workload": validation.workload,
        }
        if doc.kind == "Pod":
            if not doc.name:
                return []
            workload, errors = self.workloads.from_pod(doc.raw)
            doc.obj = workload
            if not errors and doc.labels.get(POD_GROUP_LABEL):
                errors = pod_group.member_errors(doc.annotations)
            return errors
        if doc.kind == "Job":
            if not doc.name:  # already reported on metadata.name; the integration would only repeat it
                return []
            raw = doc.raw
            if doc.generated_name:  # the integration names the Workload after the Job's (generated) name
                raw = {**raw, "metadata": {**_metadata(raw), "name": doc.name}}
            workload, errors = self.workloads.from_job(raw)
            doc.obj = workload
            return errors
        if doc.kind in registry.BY_KIND:  # every other kind's Workloads come from its integration
            return self.integration_errors(doc)
        check = checks.get(doc.kind)
        return check(doc.obj) if check is not None else []

    def integration_errors(self, doc: _Doc) -> Errors:
        """A Deployment, StatefulSet, RayCluster or RayJob: its Workloads, built as the controller
        builds them (a Deployment's, one per replica, in ``doc.members``)."""
        if not doc.name:
            return []
        raw = doc.raw
        if doc.generated_name:  # the integration names the Workloads after the (generated) name
            raw = {**raw, "metadata": {**_metadata(raw), "name": doc.name}}
        reading = registry.BY_KIND[doc.kind].reading
        assert reading is not None, doc.kind
        if doc.timing.at is not None and reading.members:
            message = (f"a {doc.kind} cannot change while the clock runs (scaling is not simulated); "
                       "delete it with pykueue.dev/delete-at and create another one")
            return [(f"metadata.annotations[{AT}]", message)]
        built, errors = self.workloads.from_integration(doc.kind, raw)
        if errors:
            return errors
        if reading.members:
            doc.members = built
        else:
            doc.obj = built[0][1] if built else None
        if built and reading.priority_class_path is not None:
            doc.pod_class_path = reading.priority_class_path(raw)
        return []

    def expand_serving(self, docs: list[_Doc]) -> list[_Doc]:
        """A Deployment becomes one workload per replica, named as its Pod (``NAME-<i>``), each with
        the Deployment's timing; a Deployment or StatefulSet of ``replicas: 0`` queues nothing (warned)."""
        out: list[_Doc] = []
        deployments: dict[str, _Doc] = {}
        for doc in docs:
            if doc.kind not in SERVING_KINDS:
                out.append(doc)
                continue
            reading = registry.BY_KIND[doc.kind].reading
            members = reading is not None and reading.members
            if members:  # a copy would clash member by member: say it once
                first = deployments.setdefault(doc.key, doc)
                if first is not doc:
                    message = f"duplicate object: {doc.kind} {doc.key} is already defined at {first.source}"
                    self.doc_problems(doc, [("metadata.name", message)])
                    continue
            empty = doc.members == [] if members else doc.obj is None
            if empty:
                message = "replicas is 0: no Pod is created, so nothing is queued"  # a LWS: no group
                self.warnings.append(Problem(doc.source, doc.kind, doc.namespace, doc.name, "spec.replicas", message))
                continue
            if not members:  # one Workload for the whole object (a StatefulSet's pod group)
                out.append(doc)
                continue
            for pod_name, workload in doc.members or []:
                out.append(doc.member(pod_name, workload))
        return out

    # --- pass 3: the set as a whole, then conversion ----------------------------------------------

    def merge_pod_groups(self, docs: list[_Doc]) -> list[_Doc]:
        """The Pods of one group (``kueue.x-k8s.io/pod-group-name``) become one workload named as the
        group, in the place of its first Pod, once all ``pod-group-total-count`` of them exist (arrival:
        the last Pod's); an incomplete group never is, and ``validate`` warns."""
        groups: dict[tuple[str | None, str], list[_Doc]] = {}
        for doc in docs:
            if doc.kind == "Pod" and doc.timing.at is None and doc.labels.get(POD_GROUP_LABEL):
                groups.setdefault((doc.namespace, doc.labels[POD_GROUP_LABEL]), []).append(doc)
        if not groups:
            return docs
        first = {id(members[0]): key for key, members in groups.items()}
        out: list[_Doc] = []
        for doc in docs:
            key = first.get(id(doc))
            if key is None:
                if not (doc.kind == "Pod" and doc.timing.at is None and doc.labels.get(POD_GROUP_LABEL)):
                    out.append(doc)
                continue
            members = groups[key]
            merged, problem = pod_group.merge([(m.obj, m.raw.get("spec")) for m in members], key[1],
                                              int(members[0].annotations[pod_group.TOTAL_COUNT]))
            if merged is None:
                self.warnings.append(Problem(doc.source, "Pod", doc.namespace, key[1],
                                             f"metadata.labels[{POD_GROUP_LABEL}]", problem))
                continue
            doc.obj, doc.name = merged, key[1]
            doc.timing.arrival = max(m.timing.arrival for m in members)
            out.append(doc)
        return out

    def drop_duplicates(self, docs: list[_Doc]) -> list[_Doc]:
        """Keep the first of each object (and of each change time); a Job and a Workload of the same
        namespace and name would be one engine workload, so that is a conflict too."""
        kept: list[_Doc] = []
        seen: dict[tuple[str, str, float | None], _Doc] = {}
        workloads: dict[str, _Doc] = {}
        config: _Doc | None = None
        for doc in docs:
            if doc.kind == "Configuration":
                if config is not None:
                    self.doc_problems(
                        doc, [("<document>", f"a second Configuration (the first is at {config.source})")]
                    )
                    continue
                config = doc
            else:
                ident = (doc.kind, doc.key, doc.timing.at)
                first = seen.get(ident)
                if first is not None:
                    what = "duplicate object" if doc.timing.at is None else "a second change at the same time"
                    message = f"{what}: {doc.kind} {doc.key} is already defined at {first.source}"
                    self.doc_problems(doc, [("metadata.name", message)])
                    continue
                if doc.kind in WORKLOAD_KINDS and doc.timing.at is None:
                    other = workloads.get(doc.key)
                    if other is not None:
                        message = f"{doc.kind} {doc.key} would be the same workload as {other.kind} {doc.key} at {other.source}"
                        self.doc_problems(doc, [("metadata.name", message)])
                        continue
                    workloads[doc.key] = doc
                seen[ident] = doc
            kept.append(doc)
        return kept

    def check_cohort_depth(self, docs: list[_Doc]) -> None:
        """No cohort deeper than ``MAX_COHORT_DEPTH``, in the initial state or after any timed change
        of a Cohort (deletions are ignored: that can only overestimate the depth). Too deep at the
        start is reported on the cohort past the limit; too deep after a change, on that change."""
        cohorts = [d for d in docs if d.kind == "Cohort"]
        if len(cohorts) < MAX_COHORT_DEPTH:  # a chain needs a Cohort document per level but the root
            return
        parents: dict[str, str | None] = {}
        defined_by: dict[str, _Doc] = {}
        for doc in cohorts:
            if doc.timing.at is None:
                parents[doc.name] = doc.obj.spec.parent_name or None
                defined_by[doc.name] = doc
        for name, depth in _cohort_depths(parents).items():
            if depth == MAX_COHORT_DEPTH + 1 and name in defined_by:
                self.doc_problems(defined_by[name], [self._too_deep(parents[name], name, depth)])
        for change in sorted((d for d in cohorts if d.timing.at is not None), key=lambda d: d.timing.at or 0.0):
            parents[change.name] = change.obj.spec.parent_name or None
            depths = _cohort_depths(parents)
            deepest = max(depths, key=lambda n: depths[n])
            if depths[deepest] > MAX_COHORT_DEPTH:
                self.doc_problems(change, [self._too_deep(parents[change.name], deepest, depths[deepest])])

    @staticmethod
    def _too_deep(parent: str | None, cohort: str, depth: int) -> tuple[str, str]:
        message = (
            f'Invalid value: "{parent}": this puts cohort {cohort} {depth} levels deep; '
            f"pykueue supports cohort trees at most {MAX_COHORT_DEPTH} levels deep"
        )
        return "spec.parentName", message

    def check_admission_check_scripts(self, docs: list[_Doc]) -> None:
        """A script for a check that no AdmissionCheck defines is never played: warn."""
        defined = {d.name for d in docs if d.kind == "AdmissionCheck"} | self.elsewhere_checks
        for doc in docs:
            script = doc.annotations.get(ADMISSION_CHECKS) if doc.kind in WORKLOAD_KINDS else None
            if not script:
                continue
            for check in parse_admission_checks(script):
                if check not in defined:
                    message = f'no AdmissionCheck "{check}" among the inputs: its script is never played'
                    self.warnings.append(
                        Problem(doc.source, doc.kind, doc.namespace, doc.name,
                                f"metadata.annotations[{ADMISSION_CHECKS}]", message)
                    )

    def priority_classes(self, docs: list[_Doc]) -> PriorityClasses:
        classes = PriorityClasses(pod=dict(validation.SYSTEM_PRIORITY_CLASSES), workload={})
        for doc in docs:
            if doc.timing.at is not None:
                continue
            if doc.kind == "PriorityClass":
                classes.pod[doc.name] = doc.obj.value
                self.inputs.priority_classes[doc.name] = doc.obj.value
                if doc.obj.global_default and classes.default_pod_class is not None:
                    message = (
                        f'Forbidden: PriorityClass "{classes.default_pod_class}" is already marked as default; '
                        "only one default can exist"
                    )
                    self.doc_problems(doc, [("globalDefault", message)])
                elif doc.obj.global_default:
                    classes.default_pod_class = doc.name
            elif doc.kind == "WorkloadPriorityClass":
                classes.workload[doc.name] = doc.obj.value
                self.inputs.workload_priority_classes[doc.name] = doc.obj.value
        return classes

    def class_changes(self, docs: list[_Doc]) -> None:
        """Timed PriorityClass and WorkloadPriorityClass changes and deletions, in time order. A class
        value is read when a workload is created (upstream copies it into the Workload then), so a
        change applies to the workloads created after it and leaves existing ones alone."""
        changes = []
        for i, doc in enumerate(docs):
            if doc.kind not in ("PriorityClass", "WorkloadPriorityClass"):
                continue
            if doc.timing.at is not None:
                changes.append((doc.timing.at, i, doc.kind, doc.name, doc.obj.value))
            if doc.timing.delete_at is not None:
                changes.append((doc.timing.delete_at, i, doc.kind, doc.name, None))
        self._class_changes = sorted(changes, key=lambda c: (c[0], c[1]))

    def classes_at(self, classes: PriorityClasses, t: float) -> PriorityClasses:
        """The priority classes as they stand at virtual time ``t``."""
        applied = [c for c in self._class_changes if c[0] <= t]
        if not applied:
            return classes
        out = PriorityClasses(pod=dict(classes.pod), workload=dict(classes.workload),
                              default_pod_class=classes.default_pod_class)
        for _, _, kind, name, value in applied:
            table = out.pod if kind == "PriorityClass" else out.workload
            if value is None:
                table.pop(name, None)
            else:
                table[name] = value
        return out

    def build(self, docs: list[_Doc]) -> None:
        epoch = max((d.created for d in docs if d.created is not None), default=None)
        classes = self.priority_classes(docs)
        self.class_changes(docs)
        creation_times: dict[tuple[str, str], float] = {}
        declared: set[str] = set()
        used: list[str] = []
        for doc in docs:
            if doc.kind == "Configuration":
                self.build_config(doc)
                continue
            obj = self.convert(doc, epoch, classes, creation_times)
            if doc.kind == "Workload":
                doc.obj = None  # converted: its validated model is not read again (freed as it goes)
            if obj is None:
                continue
            if doc.namespace is not None:
                used.append(doc.namespace)
            at = doc.timing.at
            if at is not None:
                self.inputs.changes.append(Change(at, doc.kind, doc.key, obj, doc.source))
            else:
                if doc.kind == "Namespace":
                    declared.add(doc.name)
                if doc.kind not in WORKLOAD_KINDS:  # a SubmittedWorkload carries its own
                    self.inputs.sources[(doc.kind, doc.key)] = doc.source
                self.add(doc.kind, obj)
            if doc.timing.delete_at is not None:
                self.inputs.changes.append(
                    Change(doc.timing.delete_at, doc.kind, doc.key, None, doc.source, delete=True)
                )
            if doc.kind == "Workload":  # built: what it was read into is not read again (freed as it goes)
                doc.annotations = model.nothing()
                doc.timing = _BUILT
        for namespace in dict.fromkeys(used):  # used but never declared: exists with only its name label
            if namespace not in declared:
                declared.add(namespace)
                self.inputs.namespaces.append(convert.namespace(namespace, None))

    def add(self, kind: str, obj: object) -> None:
        lists: dict[str, list[Any]] = {
            "ResourceFlavor": self.inputs.resource_flavors,
            "ClusterQueue": self.inputs.cluster_queues,
            "Cohort": self.inputs.cohorts,
            "LocalQueue": self.inputs.local_queues,
            "Namespace": self.inputs.namespaces,
            "AdmissionCheck": self.inputs.admission_checks,
            **dict.fromkeys(WORKLOAD_KINDS, self.inputs.workloads),  # a Workload and every integration's kind
        }
        if kind in lists:
            lists[kind].append(obj)

    def convert(
        self,
        doc: _Doc,
        epoch: datetime | None,
        classes: PriorityClasses,
        creation_times: dict[tuple[str, str], float],
    ) -> object | None:
        obj = doc.obj
        if doc.kind == "ClusterQueue":
            return convert.cluster_queue(obj)
        if doc.kind == "Cohort":
            return convert.cohort(obj)
        if doc.kind == "LocalQueue":
            return convert.local_queue(obj, doc.namespace or DEFAULT_NAMESPACE)
        if doc.kind == "ResourceFlavor":
            return convert.resource_flavor(obj)
        if doc.kind == "AdmissionCheck":
            return convert.admission_check(obj)
        if doc.kind == "Namespace":
            return convert.namespace(doc.name, obj.metadata.labels)
        if doc.kind in ("PriorityClass", "WorkloadPriorityClass"):
            return obj.value if doc.timing.at is not None else None  # only their changes travel on
        if doc.kind in WORKLOAD_KINDS:
            return self.submitted(doc, epoch, classes, creation_times)
        return None

    def submitted(
        self,
        doc: _Doc,
        epoch: datetime | None,
        classes: PriorityClasses,
        creation_times: dict[tuple[str, str], float],
    ) -> SubmittedWorkload | None:
        """A Workload (or a Job's Workload) with its priority resolved and its place on the clock."""
        timing = doc.timing
        identity = (doc.kind, doc.key)
        if doc.created is not None and epoch is not None:
            creation = (doc.created - epoch).total_seconds()
        elif timing.at is not None:  # a change keeps the creation time of the object it replaces
            creation = creation_times.get(identity, timing.at)
        else:
            creation = timing.arrival
        created_at = timing.at if timing.at is not None else timing.arrival
        workload = self.workloads.to_engine(
            doc.obj,
            namespace=doc.namespace or DEFAULT_NAMESPACE,
            name=doc.name,
            kind=doc.kind,
            classes=self.classes_at(classes, created_at) if self._class_changes else classes,
            creation_time=creation,
            pod_class_path=doc.pod_class_path,
            annotations=doc.annotations,
        )
        if isinstance(workload, tuple):
            self.doc_problems(doc, [workload])
            return None
        creation_times.setdefault(identity, creation)
        share = self.shared_float
        return SubmittedWorkload(
            workload=workload,
            source=doc.source,
            arrival=share(timing.arrival),
            runtime=share(timing.runtime),
            ready_after=share(timing.ready_after),
            unready_after=share(timing.unready_after),
            unready_for=share(timing.unready_for),
            checks=timing.checks,
            annotations=_foreign(doc.annotations),
            labels=doc.labels,
            nominate=timing.nominate,
            managed_by=_managed_by(doc),
            expected_runtime=timing.expected_runtime,
        )

    def build_config(self, doc: _Doc) -> None:
        read = config_v1beta1 if doc.spec.api_version == CONFIG_V1BETA1 else config_v1beta2
        config, errors = read(doc.obj)
        self.doc_problems(doc, errors)
        if not errors:
            self.inputs.config = config

    # --- all together ------------------------------------------------------------------------------

    def sorted_problems(self) -> list[Problem]:
        """By file (in reading order) and document number; a document's own problems in finding order."""
        return self._sorted(self.problems)

    def sorted_warnings(self) -> list[Problem]:
        return self._sorted(self.warnings)

    def _sorted(self, found: list[Problem]) -> list[Problem]:
        order = self.file_order
        return sorted(found, key=lambda p: (order.get(p.source.file, len(order)), p.source.doc))

    def run(self, docs: list[_Doc]) -> None:
        self.frameworks = _frameworks(docs)
        self.scope = _scope(docs)
        self.name_generated(docs)
        valid = []
        for doc in docs:
            if self.is_ignored(doc):
                self.note_unmanaged(doc)
                continue
            if doc.parsed if doc.parsed is not None else self.parse_safely(doc):
                valid.append(doc)
        kept = self.drop_duplicates(self.merge_pod_groups(self.expand_serving(valid)))
        self.check_cohort_depth(kept)
        self.check_admission_check_scripts(kept)
        self.build(kept)
        self.inputs.files = list(self.file_order)


def _foreign(annotations: dict[str, str]) -> dict[str, str]:
    """The annotations other than the simulation's own, which are read into a SubmittedWorkload's
    fields (a million generated Workloads held their arrival and runtime twice)."""
    if not any(key.startswith(TIMING_PREFIX) for key in annotations):
        return annotations or model.nothing()
    return {key: value for key, value in annotations.items() if not key.startswith(TIMING_PREFIX)} or model.nothing()


def _canonical(value: object) -> str:
    """A text that is the same for equal YAML content in every run (``repr`` of a set is not:
    string hashing is randomised per process)."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{_canonical(k)}:{_canonical(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(_canonical(v) for v in value) + "]"
    if isinstance(value, set | frozenset):
        return "{" + ",".join(sorted(_canonical(v) for v in value)) + "}"
    return repr(value)


def _cohort_depths(parents: dict[str, str | None]) -> dict[str, int]:
    """Levels from the root to each cohort (a root is 1), without recursion. A cohort whose ancestry
    runs into a cycle is cut loose by the engine (it is a root then), so it counts 1."""
    depth: dict[str, int] = {}
    cyclic: set[str] = set()
    for start in parents:
        chain: list[str] = []
        on_chain: set[str] = set()
        node: str | None = start
        while node is not None and node not in depth and node not in on_chain:
            chain.append(node)
            on_chain.add(node)
            node = parents.get(node)
        if node is not None and (node in on_chain or node in cyclic):  # runs into a cycle: cut loose
            cyclic.update(chain)
            for name in chain:
                depth[name] = 1
            continue
        base = depth[node] if node is not None else 0
        for name in reversed(chain):
            base += 1
            depth[name] = base
    return depth


@contextmanager
def _bulk_allocation() -> Iterator[None]:
    """Pause the cyclic garbage collector while reading: loading allocates hundreds of thousands of
    long-lived objects and few cycles, and repeated full collections would cost about half the time."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def load_paths(
    paths: Sequence[str | os.PathLike[str]], config_path: str | os.PathLike[str] | None = None
) -> tuple[Inputs, list[Problem]]:
    """Read YAML files and directories (and ``--config``) into ``Inputs``; never raises on bad input.

    Problems come sorted by file (in reading order) and document number, each document's in the order
    found; the caller prints them and exits 2 when there are any.
    """
    loader = _Loader()
    with _bulk_allocation():
        docs = loader.read(
            [os.fspath(p) for p in paths], None if config_path is None else os.fspath(config_path)
        )
        loader.run(docs)
    loader.inputs.warnings = loader.sorted_warnings()
    return loader.inputs, loader.sorted_problems()


def load_documents(
    documents: Iterable[object], source: str, config_path: str | None = None, *, consume: bool = False
) -> tuple[Inputs, list[Problem]]:
    """Like ``load_paths`` for manifests already in memory (e.g. built by the perf generator), or made
    as they are read (an iterator).

    Document ``i`` (1-based) is reported as ``SOURCE:i``. Manifests that share one ``spec`` object are
    validated and converted once, which keeps tens of thousands of generated Workloads fast. With
    ``consume`` a list is emptied as it is read, and a Workload (which no other document changes how
    it is read) is read as it comes, so that its manifest is freed at once (when the caller holds it
    nowhere else): a million generated Workloads are 2 GB as dicts.
    """
    loader = _Loader()
    with _bulk_allocation():
        docs = loader.read([], None if config_path is None else os.fspath(config_path))
        loader.file_order.setdefault(source, len(loader.file_order))
        as_list = documents if consume and isinstance(documents, list) else None
        for number, content in enumerate(documents, start=1):
            if as_list is not None:
                as_list[number - 1] = None
            if content is not None:
                doc = loader.recognise(Source(source, number), content, False)
                if doc is not None:
                    if consume and doc.kind == "Workload" and not doc.generated_name:
                        doc.parsed = loader.parse_safely(doc)
                    docs.append(doc)
        if as_list is not None:
            as_list.clear()
        content = None
        loader.run(docs)
    loader.inputs.warnings = loader.sorted_warnings()
    return loader.inputs, loader.sorted_problems()


def read_workload(raw: dict[str, Any]) -> Any:
    """One Workload manifest (status included) as its v1beta2 model, or None when it does not parse:
    what the validating webhook compares on an update (``validation.workload_update``)."""
    try:
        if raw.get("apiVersion") == KUEUE_V1BETA1:
            return v1.Workload.model_validate(raw).to_v1beta2()
        return v2.Workload.model_validate(raw)
    except ValidationError:
        return None
