"""Workloads and the Jobs that become Workloads: validated once per distinct spec, converted once.

Generated inputs hold thousands of Workloads whose specs are identical; ``fastyaml`` hands out one object
for identical text, and equal specs built in memory are recognised by content, so each distinct spec is
validated, normalised and converted to engine pod sets once and shared (engine objects are frozen).
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from pykueue.api import convert, validation
from pykueue.api.kinds import KUEUE_V1BETA1
from pykueue.api.models import kueue_v1beta1 as v1
from pykueue.api.models import kueue_v1beta2 as v2
from pykueue.api.models.base import validation_errors
from pykueue.api.priority import PriorityClasses, Resolved, resolve
from pykueue.engine import model

Errors = list[tuple[str, str]]
WORKLOAD_PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"


def join_path(prefix: str, path: str) -> str:
    """``spec`` + ``podSets[0].count`` -> ``spec.podSets[0].count`` (``<document>`` is the prefix itself)."""
    if path == "<document>":
        return prefix
    return prefix + path if path.startswith("[") else f"{prefix}.{path}"


def job_path(path: str) -> str:
    """A path inside the Workload built from a Job, pointed back at the Job's own fields."""
    if path.startswith("spec.podSets[0].template"):
        return "spec.template" + path.removeprefix("spec.podSets[0].template")
    return path


def pod_path(path: str) -> str:
    """A path inside the Workload built from a Pod, pointed back at the Pod's own fields."""
    if path.startswith("spec.podSets[0].template.spec"):
        return "spec" + path.removeprefix("spec.podSets[0].template.spec")
    return path


MAX_KEPT_TEXT = 4096  # characters of a spec's repr the cache keeps as its key; longer ones as a digest


class WorkloadReader:
    """Caches keyed by object identity; each entry keeps its key object alive so ids stay unique."""

    def __init__(self) -> None:
        self._specs: dict[int, tuple[object, str, v2.WorkloadSpec | None, Errors]] = {}
        self._specs_by_text: dict[tuple[str, str | bytes], tuple[v2.WorkloadSpec | None, Errors]] = {}
        self._pod_sets: dict[int, tuple[v2.WorkloadSpec, tuple[model.PodSet, ...]]] = {}

    def spec(self, api_version: str, raw: object) -> tuple[v2.WorkloadSpec | None, Errors]:
        """The validated spec in v1beta2 shape, or ``None``, and its problems (paths from the object)."""
        if raw is None:
            return None, [("spec", "Required value")]
        cached = self._specs.get(id(raw))
        if cached is not None and cached[0] is raw and cached[1] == api_version:
            return cached[2], cached[3]
        # equal content in a different object (manifests built in memory): the repr of JSON-like data
        # is a faithful fingerprint, far cheaper than validating again. The cache keeps a long one only
        # as its 16-byte digest (the text's size is the sender's; the document limits bound it while
        # it lives), a short one as it is (hashing every small spec would cost more than it saves).
        text = repr(raw)
        text_key = (api_version, text if len(text) <= MAX_KEPT_TEXT
                    else hashlib.blake2b(text.encode(), digest_size=16).digest())
        by_text = self._specs_by_text.get(text_key)
        if by_text is not None:
            self._specs[id(raw)] = (raw, api_version, *by_text)
            return by_text
        model_cls = v1.WorkloadSpec if api_version == KUEUE_V1BETA1 else v2.WorkloadSpec
        spec: v2.WorkloadSpec | None = None
        try:
            parsed = model_cls.model_validate(raw)
        except ValidationError as exc:
            errors = [(join_path("spec", p), m) for p, m in validation_errors(model_cls, raw, exc)]
        else:
            spec = parsed.to_v1beta2() if isinstance(parsed, v1.WorkloadSpec) else parsed
            errors = validation.workload_spec(spec)
        self._specs[id(raw)] = (raw, api_version, spec, errors)
        self._specs_by_text[text_key] = (spec, errors)
        return spec, errors

    def from_job(self, job: dict[str, Any]) -> tuple[v2.Workload | None, Errors]:
        """The Workload the batch/v1 Job integration builds, checked like any Workload."""
        try:
            from pykueue.jobs.job.workload import workload_from_job
        except ImportError as exc:
            return None, [("<document>", f"the batch/v1 Job integration is not available: {exc}")]
        try:
            # the document may share objects with others (see fastyaml): the integration gets a copy
            built = workload_from_job(copy.deepcopy(job))
        except Exception as exc:  # the integration rejecting the Job is an input problem
            return None, [("spec", str(exc) or type(exc).__name__)]
        if not isinstance(built, dict):
            return None, [("<document>", "the Job integration did not produce a Workload")]
        built = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", **built}
        try:
            workload = v2.Workload.model_validate(built)
        except ValidationError as exc:
            return None, validation_errors(v2.Workload, built, exc)
        errors = validation.workload(workload) + validation.job_pod_template(workload.spec)
        return (None if errors else workload), errors

    def from_pod(self, pod: dict[str, Any]) -> tuple[v2.Workload | None, Errors]:
        """The Workload the pod integration builds for a plain Pod, checked like any Workload."""
        from pykueue.jobs.pod.workload import workload_from_pod

        try:
            built = workload_from_pod(copy.deepcopy(pod))
        except Exception as exc:  # the integration rejecting the Pod is an input problem
            return None, [("spec", str(exc) or type(exc).__name__)]
        try:
            workload = v2.Workload.model_validate(built)
        except ValidationError as exc:
            return None, [(pod_path(p), m) for p, m in validation_errors(v2.Workload, built, exc)]
        errors = validation.workload(workload) + validation.job_pod_template(workload.spec)
        return (None if errors else workload), [(pod_path(p), m) for p, m in errors]

    def from_integration(self, kind: str, obj: dict[str, Any]) -> tuple[list[tuple[str, v2.Workload]], Errors]:
        """The Workloads the controller creates for a Deployment (one per replica, named as its Pod),
        a StatefulSet (one pod group, ``replicas: 0`` none), a RayCluster, RayJob or RayService (one each, named
        as the object), checked like any Workload; problems carry the object's own field paths."""
        from pykueue.jobs.framework.validation import JobConversionError
        from pykueue.jobs.registry import BY_KIND

        reading = BY_KIND[kind].reading
        assert reading is not None, kind  # the Job and the Pod are read by from_job and from_pod
        obj = copy.deepcopy(obj)  # the document may share objects with others (see fastyaml)
        problems = reading.validate(obj)
        if problems:  # every one of them, as the API server and the webhook would list them
            return [], [(p.path, p.message) for p in problems]
        try:
            built = reading.workloads(obj)
            paths = reading.template_paths(obj)
        except JobConversionError as exc:
            return [], [(exc.path, exc.message)]

        def object_path(path: str) -> str:
            for i, template_path in enumerate(paths):
                prefix = f"spec.podSets[{i}].template"
                if path.startswith(prefix):
                    return template_path + path.removeprefix(prefix)
            return path

        out: list[tuple[str, v2.Workload]] = []
        for member, manifest in built:
            try:
                workload = v2.Workload.model_validate(manifest)
            except ValidationError as exc:
                return [], [(object_path(p), m) for p, m in validation_errors(v2.Workload, manifest, exc)]
            if not out:  # replicas share one template: the first one's problems are everyone's
                errors = validation.workload(workload) + validation.job_pod_template(workload.spec)
                if errors:
                    return [], [(object_path(p), m) for p, m in errors]
            out.append((member, workload))
        return out, []

    def pod_sets(self, spec: v2.WorkloadSpec) -> tuple[model.PodSet, ...]:
        cached = self._pod_sets.get(id(spec))
        if cached is None or cached[0] is not spec:
            cached = (spec, tuple(convert.pod_set(ps) for ps in spec.pod_sets))
            self._pod_sets[id(spec)] = cached
        return cached[1]

    def to_engine(
        self,
        workload: v2.Workload | convert.WorkloadBody,
        *,
        namespace: str,
        name: str,
        kind: str,
        classes: PriorityClasses,
        creation_time: float,
        pod_class_path: str | None = None,
        annotations: Mapping[str, str] | None = None,
    ) -> model.Workload | tuple[str, str]:
        """The engine Workload, or ``(path, message)`` when its priority class does not exist
        (``pod_class_path``: where the object names its pod PriorityClass, when not in the usual place)."""
        from_job = kind != "Workload"  # an integration's: priority as the Job integration reads it
        ref = workload.spec.priority_class_ref
        resolved = resolve(workload.spec.priority, ref, classes, from_job=from_job)
        if not isinstance(resolved, Resolved):
            path = "spec.priorityClassRef.name"
            if from_job:
                pod_class = ref is not None and ref.group == "scheduling.k8s.io"
                label = f"metadata.labels[{WORKLOAD_PRIORITY_CLASS_LABEL}]"
                if pod_class:
                    path = pod_class_path or (
                        "spec.priorityClassName" if kind == "Pod" else "spec.template.spec.priorityClassName")
                else:
                    path = label
            return path, resolved
        return convert.workload(
            workload,
            pod_sets=self.pod_sets(workload.spec),
            namespace=namespace,
            name=name,
            kind=kind,
            priority=resolved.priority,
            priority_class_name=resolved.class_name,
            priority_class_source=resolved.source,
            creation_time=creation_time,
            annotations=annotations,
        )
