"""The admission webhooks' decisions, as pure functions of an AdmissionReview's ``request``.

Validation runs the API layer itself, ``load_documents`` on the one object: the same parsing and the same
rules (``pykueue.api.validation``) as ``pykueue validate``, so a rule has one implementation and one
message. A Workload update is also held to upstream's ``ValidateWorkloadUpdate`` against the object it
replaces (``update_problems``: pod sets fixed while quota is reserved, reclaimable pods never fewer, the
admission never changed in place), after the new object's own problems as upstream lists them. A refusal lists each problem as ``<field path>: <message>``, which is what ``validate`` prints
after the object's name, joined the way upstream's ``field.ErrorList`` aggregate joins them (one error
alone, several as ``[a, b]``); kubectl shows it after ``admission webhook "..." denied the request:``.

The Job webhook is upstream's ``Default``: a Job Kueue manages (it names a LocalQueue in the
``kueue.x-k8s.io/queue-name`` label, or every Job with ``manageJobsWithoutQueueName``) is created
suspended, so no pod starts before its Workload is admitted. The Pod webhook gates a Pod Kueue manages,
and the Deployment and StatefulSet webhooks label their pod templates so that their Pods are (the rules
are ``pykueue.jobs.pods``'s). The RayCluster and RayJob webhooks suspend the ones Kueue manages, as the
Job webhook does (not a RayJob's own cluster: the RayJob is queued instead; ``pykueue.jobs.ray_live``).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

from pykueue.api import validation
from pykueue.api.loader import load_documents, read_workload
from pykueue.controller.translate import clean
from pykueue.controller.webhooks import names
from pykueue.controller.webhooks.default_queues import DEFAULT_QUEUE
from pykueue.jobs import batch, job_update, pod_update, pods, ray_live, ray_update, serving_update

KEEP_STATUS = ("Workload",)  # the kinds whose status carries what validation checks (the admission)


def response(request: dict[str, Any], allowed: bool, message: str = "", patch: list[dict[str, Any]] | None = None,
             code: int = 403) -> dict[str, Any]:
    """An AdmissionReview ``response``; a refusal as controller-runtime's ``Denied`` (403, Forbidden)."""
    out: dict[str, Any] = {"uid": request.get("uid", ""), "allowed": allowed}
    if not allowed:
        reason = "Forbidden" if code == 403 else "InternalError"
        out["status"] = {"code": code, "reason": reason, "message": message}
    if patch:
        out["patchType"] = "JSONPatch"
        out["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
    return out


def aggregate(messages: list[str]) -> str:
    """apimachinery's ``NewAggregate(...).Error()``: duplicates dropped, one as is, several in brackets."""
    unique = list(dict.fromkeys(messages))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


def problems(obj: dict[str, Any], namespace: str | None = None) -> list[str]:
    """What ``pykueue validate`` reports for ``obj``, one ``<path>: <message>`` per problem."""
    doc = clean(obj, keep_status=obj.get("kind") in KEEP_STATUS)
    if namespace and not doc["metadata"].get("namespace"):
        doc["metadata"]["namespace"] = namespace
    _, found = load_documents([doc], "admission")
    return [f"{p.path}: {p.message}" for p in found]


def update_problems(obj: dict[str, Any], old: object) -> list[str]:
    """Upstream's update rules for a Workload replacing ``old``, one ``<path>: <message>`` each; nothing
    when either object does not parse (the new one's problems are then reported by ``problems``)."""
    if obj.get("kind") != "Workload" or not isinstance(old, dict):
        return []
    new_wl, old_wl = read_workload(clean(obj, keep_status=True)), read_workload(clean(old, keep_status=True))
    if new_wl is None or old_wl is None:
        return []
    return [f"{path}: {message}" for path, message in validation.workload_update(new_wl, old_wl)]


def validate(request: dict[str, Any]) -> dict[str, Any]:
    """Allow the object when the API layer finds nothing wrong with it (nor, on an update, with the change)."""
    obj = request.get("object")
    if request.get("operation") == "DELETE" or not isinstance(obj, dict):
        return response(request, True)
    if (obj.get("metadata") or {}).get("deletionTimestamp"):
        return response(request, True)  # going away: never block the removal of its finalizers
    found = problems(obj, request.get("namespace"))
    if request.get("operation") == "UPDATE":
        found += update_problems(obj, request.get("oldObject"))
    return response(request, not found, aggregate(found) if found else "")


def _refusals(request: dict[str, Any], on_create, on_update) -> dict[str, Any]:
    """A job kind's validating webhook: ``on_create(obj)`` for a create, ``on_update(old, new)`` for an
    update, each a list of ``JobConversionError``; an object being deleted always passes."""
    obj, old = request.get("object"), request.get("oldObject")
    if request.get("operation") not in ("CREATE", "UPDATE") or not isinstance(obj, dict):
        return response(request, True)
    if (obj.get("metadata") or {}).get("deletionTimestamp"):
        return response(request, True)  # going away: never block the removal of its finalizers
    if request.get("operation") == "UPDATE" and isinstance(old, dict):
        found = on_update(old, obj)
    else:
        found = on_create(obj)
    messages = [f"{e.path}: {e.message}" for e in found]
    return response(request, not messages, aggregate(messages) if messages else "")


def validate_job(request: dict[str, Any], default_queue_exists: Callable[[str], bool]) -> dict[str, Any]:
    """Upstream's Job webhook (``vjob``) for every Job it is sent: on create the Job's own rules
    (``batch.validate_job``), on update also what may not change while it runs (``job_update``)."""
    return _refusals(request, batch.validate_job,
                     lambda old, new: job_update.validate_job_update(old, new, default_queue_exists))


def no_default_queue(_namespace: str) -> bool:
    """No namespace has a default LocalQueue (a webhook that does not watch them)."""
    return False


def validator_for_jobs(kind: str, frameworks: tuple[str, ...],
                       default_queue_exists: Callable[[str], bool] = no_default_queue,
                       manage_without_queue_name: bool = False):
    """The validating handler for a job kind: upstream's rules while its integration is on (a Pod's
    while any integration that queues Pods is), else one that allows everything."""
    on = set(frameworks)
    if kind == "Job" and "batch/job" in on:
        return lambda req: validate_job(req, default_queue_exists)
    if kind == "Pod" and on & set(names.POD_FRAMEWORKS):
        return lambda req: _refusals(req, pod_update.validate_pod,
                                     lambda old, new: pod_update.validate_pod_update(old, new, default_queue_exists))
    if kind == "Deployment" and "deployment" in on:
        return lambda req: _refusals(req, serving_update.validate_create, serving_update.validate_deployment_update)
    if kind == "StatefulSet" and "statefulset" in on:
        return lambda req: _refusals(req, serving_update.validate_create, serving_update.validate_statefulset_update)
    if kind in ray_live.KINDS.values() and {f for f, k in ray_live.KINDS.items() if k == kind} & on:
        return lambda req: _refusals(
            req, lambda obj: ray_update.validate_create(obj, manage_without_queue_name),
            lambda old, new: ray_update.validate_update(old, new, manage_without_queue_name, default_queue_exists))
    return lambda req: response(req, True)


def should_suspend(job: dict[str, Any], manage_without_queue_name: bool) -> bool:
    """Whether Kueue manages this Job: the rule the Job side of the controller (``JobSync``) follows."""
    return batch.is_managed(job) or manage_without_queue_name


# Owners whose Jobs are their children, queued with them and never by themselves (IsOwnerManagedByKueue).
_INTEGRATION_OWNERS = frozenset({("batch", "Job"), ("ray.io", "RayJob"), ("ray.io", "RayCluster")})


def _owned_by_an_integration(obj: dict[str, Any]) -> bool:
    for owner in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if isinstance(owner, dict) and owner.get("controller"):
            group = str(owner.get("apiVersion") or "").rpartition("/")[0]
            return (group, owner.get("kind")) in _INTEGRATION_OWNERS
    return False


def mutate_job(request: dict[str, Any], manage_without_queue_name: bool,
               default_queue_exists: Callable[[str], bool] = no_default_queue) -> dict[str, Any]:
    """Upstream's Job ``Default``: a Job without a queue label in a namespace with a LocalQueue named
    ``default`` is put in it (LocalQueueDefaulting; not a Job an integration's object owns), then a
    managed Job that would start right away gets ``spec.suspend: true``; anything else as sent."""
    job = request.get("object")
    if request.get("operation") != "CREATE" or not isinstance(job, dict):
        return response(request, True)
    spec = job.get("spec") if isinstance(job.get("spec"), dict) else None
    if spec is None:
        return response(request, True)
    patch: list[dict[str, Any]] = []
    namespace = request.get("namespace") or (job.get("metadata") or {}).get("namespace") or ""
    if (not batch.is_managed(job) and default_queue_exists(namespace) and not _owned_by_an_integration(job)):
        labels = (job.get("metadata") or {}).get("labels")
        if isinstance(labels, dict):
            patch.append({"op": "add", "path": "/metadata/labels/kueue.x-k8s.io~1queue-name", "value": DEFAULT_QUEUE})
        else:
            patch.append({"op": "add", "path": "/metadata/labels", "value": {batch.QUEUE_NAME_LABEL: DEFAULT_QUEUE}})
        job = {**job, "metadata": {**(job.get("metadata") or {}),
                                   "labels": {**(labels or {}), batch.QUEUE_NAME_LABEL: DEFAULT_QUEUE}}}
    if spec.get("suspend") is not True and should_suspend(job, manage_without_queue_name):
        patch.append({"op": "add", "path": "/spec/suspend", "value": True})
    return response(request, True, patch=patch or None)


def mutate_ray(request: dict[str, Any], manage_without_queue_name: bool) -> dict[str, Any]:
    """``spec.suspend: true`` on a RayCluster or RayJob Kueue manages, created to start right away."""
    obj = request.get("object")
    if request.get("operation") != "CREATE" or not isinstance(obj, dict) or not isinstance(obj.get("spec"), dict):
        return response(request, True)
    if obj["spec"].get("suspend") is True or not ray_live.is_managed(obj, manage_without_queue_name):
        return response(request, True)
    return response(request, True, patch=[{"op": "add", "path": "/spec/suspend", "value": True}])


def _patched(request: dict[str, Any], build) -> dict[str, Any]:
    obj = request.get("object")
    if not isinstance(obj, dict):
        return response(request, True)
    obj = {**obj, "metadata": {**(obj.get("metadata") or {}), "namespace": request.get("namespace")
                               or (obj.get("metadata") or {}).get("namespace")}}
    ops = build(obj)
    return response(request, True, patch=ops or None)


def mutator(kind: str, frameworks: tuple[str, ...], manage_without_queue_name: bool,
            default_queue_exists: Callable[[str], bool] = no_default_queue):
    """The mutating handler for ``kind``; one that lets everything through when its integration is off."""
    def allow(request: dict[str, Any]) -> dict[str, Any]:
        return response(request, True)

    if kind == "Job":
        if "batch/job" not in frameworks:
            return allow
        return lambda req: mutate_job(req, manage_without_queue_name, default_queue_exists)
    if kind == "Pod":
        def pod(req: dict[str, Any]) -> dict[str, Any]:
            if req.get("operation") != "CREATE":
                return allow(req)
            return _patched(req, lambda obj: pods.pod_defaults(obj, frameworks, manage_without_queue_name))
        return pod
    if kind == "Deployment" and "deployment" in frameworks:
        return lambda req: _patched(req, lambda obj: pods.deployment_defaults(obj, manage_without_queue_name))
    if kind == "StatefulSet" and "statefulset" in frameworks:
        return lambda req: _patched(req, lambda obj: pods.statefulset_defaults(obj, manage_without_queue_name))
    if kind in ray_live.KINDS.values() and {f for f, k in ray_live.KINDS.items() if k == kind} & set(frameworks):
        return lambda req: mutate_ray(req, manage_without_queue_name)
    return allow
