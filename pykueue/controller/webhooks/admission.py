"""The admission webhooks' decisions, as pure functions of an AdmissionReview's ``request``.

Validation runs the API layer itself, ``load_documents`` on the one object: the same parsing and the same
rules (``pykueue.api.validation``) as ``pykueue validate``, so a rule has one implementation and one
message. A Workload update is also held to upstream's ``ValidateWorkloadUpdate`` against the object it
replaces (``update_problems``: pod sets fixed while quota is reserved, reclaimable pods never fewer, the
admission never changed in place), after the new object's own problems as upstream lists them. A refusal lists each problem as ``<field path>: <message>``, which is what ``validate`` prints
after the object's name, joined the way upstream's ``field.ErrorList`` aggregate joins them (one error
alone, several as ``[a, b]``); kubectl shows it after ``admission webhook "..." denied the request:``.

The job kinds' webhooks are their integrations' (``Integration.webhooks``: ``jobs/<kind>/webhook.py``,
upstream's ``pkg/controller/jobs/<kind>/*_webhook.go``), found through the registry: this module names
no kind. It answers the AdmissionReview, fills in the object's namespace, hands each kind what the
Configuration and the webhook's caches say (``jobs.hooks.HookContext``), and lets an object of an
integration that is off through as sent (upstream's no-op webhook).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

from pykueue.api import validation
from pykueue.api.loader import load_documents, read_workload
from pykueue.controller.core.translate import clean
from pykueue.jobs import managed, registry
from pykueue.jobs.hooks import HookContext, no_default_queue
from pykueue.jobs.registry import enabled

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


def _pod_marks(pod: dict[str, Any]) -> dict[str, str]:
    """Every integration's labels for a Pod it controls that only the Pod webhook adds."""
    marks: dict[str, str] = {}
    for integration in registry.INTEGRATIONS:
        if integration.pod_marks is not None:
            marks.update(integration.pod_marks(pod))
    return marks


def context(frameworks: tuple[str, ...], manage_without_queue_name: bool = False,
            default_queue_exists: Callable[[str], bool] = no_default_queue,
            scope: managed.Scope = managed.DEFAULT_SCOPE,
            dispatches: Callable[[str, str], bool] | None = None) -> HookContext:
    """What every kind's webhooks are told, from the Configuration and the webhook's caches."""
    return HookContext(manage_without_queue_name, default_queue_exists, scope, enabled(frameworks), dispatches,
                       _pod_marks)


def _with_namespace(request: dict[str, Any], obj: dict[str, Any]) -> dict[str, Any]:
    """The object as sent, its namespace the request's where the object names none (a create's)."""
    meta = obj.get("metadata") or {}
    return {**obj, "metadata": {**meta, "namespace": request.get("namespace") or meta.get("namespace")}}


def validator_for_jobs(kind: str, frameworks: tuple[str, ...],
                       default_queue_exists: Callable[[str], bool] = no_default_queue,
                       manage_without_queue_name: bool = False):
    """The validating handler for a job kind: its integration's rules (``Integration.webhooks``) while it
    is on (a Pod's while any integration that queues Pods is: the pod framework is implied by them),
    else one that allows everything."""
    integration = registry.BY_KIND.get(kind)
    if integration is None or integration.webhooks is None or integration.framework not in enabled(frameworks):
        return lambda req: response(req, True)
    hooks, ctx = integration.webhooks, context(frameworks, manage_without_queue_name, default_queue_exists)
    return lambda req: _refusals(req, lambda obj: hooks.validate_create(obj, ctx),
                                 lambda old, new: hooks.validate_update(old, new, ctx))


def mutator(kind: str, frameworks: tuple[str, ...], manage_without_queue_name: bool,
            default_queue_exists: Callable[[str], bool] = no_default_queue,
            scope: managed.Scope = managed.DEFAULT_SCOPE,
            dispatches: Callable[[str, str], bool] | None = None):
    """The mutating handler for ``kind``: its integration's ``Default`` (``Integration.webhooks``) for the
    operations its hook is sent, the object's namespace filled in; one that lets everything through when
    its integration is off (a Pod's runs regardless: one its parent marked is gated whatever the
    frameworks). ``scope``: managedJobsNamespaceSelector and the namespaces' labels;
    ``dispatches(namespace, queue)``: whether that LocalQueue's ClusterQueue has a MultiKueue check
    (``spec.managedBy`` defaulting)."""
    integration = registry.BY_KIND.get(kind)
    hooks = integration.webhooks if integration is not None else None
    if integration is None or hooks is None or hooks.default is None or (
            integration.framework not in frameworks and not integration.defaults_off):
        return lambda req: response(req, True)
    default, operations = hooks.default, integration.mutates_on
    ctx = context(frameworks, manage_without_queue_name, default_queue_exists, scope, dispatches)

    def mutate(request: dict[str, Any]) -> dict[str, Any]:
        obj = request.get("object")
        if request.get("operation") not in operations or not isinstance(obj, dict):
            return response(request, True)
        return response(request, True, patch=default(_with_namespace(request, obj), ctx) or None)
    return mutate
