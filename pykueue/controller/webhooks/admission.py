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
are ``pykueue.jobs.pod.groups``'s). The RayCluster and RayJob webhooks suspend the ones Kueue manages, as the
Job webhook does (not a RayJob's own cluster: the RayJob is queued instead; ``pykueue.jobs.ray.generic``).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

from pykueue.api import validation
from pykueue.api.loader import load_documents, read_workload
from pykueue.controller.translate import clean
from pykueue.controller.webhooks import managed_by
from pykueue.controller.webhooks.default_queues import DEFAULT_QUEUE
from pykueue.jobs import batch, managed, registry, slicing
from pykueue.jobs.deployment import webhook as deployment_webhook
from pykueue.jobs.integration import Frameworks
from pykueue.jobs.job import webhook as job_update
from pykueue.jobs.jobset import workload as jobset
from pykueue.jobs.leaderworkerset import workload as leaderworkerset
from pykueue.jobs.pod import groups as pods
from pykueue.jobs.pod import serving
from pykueue.jobs.pod import webhook as pod_update
from pykueue.jobs.ray import generic as ray_live
from pykueue.jobs.ray import webhook as ray_update
from pykueue.jobs.ray import workload as ray
from pykueue.jobs.registry import enabled
from pykueue.jobs.statefulset import webhook as statefulset_webhook
from pykueue.jobs.statefulset import workload as statefulset

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
    while any integration that queues Pods is: the pod framework is implied by them), else one that
    allows everything. The kind's integration is found in the registry; its rules by its framework."""
    integration = registry.BY_KIND.get(kind)
    if integration is None or integration.framework not in enabled(frameworks):
        return lambda req: response(req, True)
    exists, manage = default_queue_exists, manage_without_queue_name
    if integration.framework == "batch/job":
        return lambda req: validate_job(req, exists)
    rules: dict[str, tuple[Callable[[dict[str, Any]], Any], Callable[[dict[str, Any], dict[str, Any]], Any]]] = {
        "pod": (pod_update.validate_pod, lambda old, new: pod_update.validate_pod_update(old, new, exists)),
        "deployment": (serving.validate_create, deployment_webhook.validate_deployment_update),
        "statefulset": (serving.validate_create, statefulset_webhook.validate_statefulset_update),
        "jobset.x-k8s.io/jobset": (jobset.validate_create, lambda old, new: jobset.validate_update(old, new, exists)),
        "leaderworkerset.x-k8s.io/leaderworkerset": (leaderworkerset.validate_create, lambda old, new: (
            leaderworkerset.validate_update(old, new, managed=bool(batch.queue_name(new)) or manage))),
        **dict.fromkeys(ray_live.KINDS, (lambda obj: ray_update.validate_create(obj, manage),
                                         lambda old, new: ray_update.validate_update(old, new, manage, exists))),
    }
    create, update = rules[integration.framework]
    return lambda req: _refusals(req, create, update)


def should_suspend(job: dict[str, Any], manage_without_queue_name: bool, namespace: str = "",
                   scope: managed.Scope = managed.DEFAULT_SCOPE) -> bool:
    """Whether a job no managed ancestor owns is created suspended (upstream's WorkloadShouldBeSuspended):
    it names a queue, or every job is Kueue's and its namespace is selected."""
    return managed.suspended_on_create(batch.queue_name(job), namespace, manage_without_queue_name, scope)


def _namespace(request: dict[str, Any], obj: dict[str, Any]) -> str:
    return request.get("namespace") or (obj.get("metadata") or {}).get("namespace") or ""


def _default_queue(obj: dict[str, Any], namespace: str, default_queue_exists: Callable[[str], bool],
                   owned: bool) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Upstream's ApplyDefaultLocalQueue: an object without a queue label in a namespace with a LocalQueue
    named ``default``, and no job Kueue manages owning it, is put in that queue. The object as labelled,
    and the JSON patch ops that label it."""
    if batch.is_managed(obj) or owned or not default_queue_exists(namespace):
        return obj, []
    labels = (obj.get("metadata") or {}).get("labels")
    if isinstance(labels, dict):
        ops = [{"op": "add", "path": "/metadata/labels/kueue.x-k8s.io~1queue-name", "value": DEFAULT_QUEUE}]
    else:
        ops = [{"op": "add", "path": "/metadata/labels", "value": {batch.QUEUE_NAME_LABEL: DEFAULT_QUEUE}}]
    labelled = {**obj, "metadata": {**(obj.get("metadata") or {}),
                                    "labels": {**(labels or {}), batch.QUEUE_NAME_LABEL: DEFAULT_QUEUE}}}
    return labelled, ops


def _own_controller(obj: dict[str, Any]) -> str | None:
    """The object's kind's own controller, which a MultiKueue managedBy default replaces."""
    integration = registry.BY_KIND.get(str(obj.get("kind") or ""))
    return integration.own_controller if integration is not None else None


def mutate_job(request: dict[str, Any], manage_without_queue_name: bool,
               default_queue_exists: Callable[[str], bool] = no_default_queue,
               scope: managed.Scope = managed.DEFAULT_SCOPE,
               frameworks: Frameworks = registry.ALL,
               dispatches: Callable[[str, str], bool] | None = None) -> dict[str, Any]:
    """Upstream's Job ``Default`` (a JobSet's too): a Job without a queue label in a namespace with a
    LocalQueue named ``default`` is put in it (LocalQueueDefaulting), then a Job Kueue manages that would
    start right away gets ``spec.suspend: true``; a Job a managed job owns (``frameworks``: the
    integrations that are on) is left to that one; anything else as sent. With ``dispatches``, a Job
    queued where MultiKueue dispatches gets ``spec.managedBy`` (``managed_by``) unless another
    controller than its kind's own (``Integration.own_controller``) is named there."""
    job = request.get("object")
    if request.get("operation") != "CREATE" or not isinstance(job, dict):
        return response(request, True)
    spec = job.get("spec") if isinstance(job.get("spec"), dict) else None
    if spec is None:
        return response(request, True)
    namespace = _namespace(request, job)
    owned = managed.managed_owner(job, frameworks) is not None
    job, patch = _default_queue(job, namespace, default_queue_exists, owned)
    if spec.get("suspend") is not True and not owned and should_suspend(job, manage_without_queue_name, namespace,
                                                                         scope):
        patch.append({"op": "add", "path": "/spec/suspend", "value": True})
    if slicing.enabled(job) and not owned and should_suspend(job, manage_without_queue_name, namespace, scope):
        patch += job_update.template_gate_ops(job)  # its pods wait for their slice's admission
    if dispatches is not None:
        patch += managed_by.managed_by_ops(job, namespace, _own_controller(job), dispatches)
    return response(request, True, patch=patch or None)


def mutate_ray(request: dict[str, Any], manage_without_queue_name: bool,
               default_queue_exists: Callable[[str], bool] = no_default_queue,
               scope: managed.Scope = managed.DEFAULT_SCOPE,
               frameworks: Frameworks = registry.ALL,
               dispatches: Callable[[str, str], bool] | None = None) -> dict[str, Any]:
    """A RayCluster, RayJob or RayService: LocalQueueDefaulting as for a Job, then ``spec.suspend: true``
    (a RayService's ``spec.rayClusterConfig.suspend``) on one Kueue manages, created to start right away
    (not a RayJob's or RayService's own cluster: its owner is queued);
    ``spec.managedBy`` defaulted for MultiKueue as a Job's is (KubeRay's operator the own controller), not
    for a RayService: MultiKueue does not dispatch those."""
    obj = request.get("object")
    if request.get("operation") != "CREATE" or not isinstance(obj, dict) or not isinstance(obj.get("spec"), dict):
        return response(request, True)
    namespace = _namespace(request, obj)
    owned = ray_live.owned_by_ray_job(obj) or managed.managed_owner(obj, frameworks) is not None
    obj, patch = _default_queue(obj, namespace, default_queue_exists, owned)
    service = obj.get("kind") == ray_live.RAY_SERVICE
    if service and not isinstance(obj["spec"].get(ray.SERVICE_CLUSTER_FIELD), dict):
        return response(request, True, patch=patch or None)  # the API server refuses it (a required field)
    if (ray_live.suspend_holder(obj).get("suspend") is not True and ray_live.is_managed(obj, manage_without_queue_name)
            and not owned and should_suspend(obj, manage_without_queue_name, namespace, scope)):
        patch.append({"op": "add", "path": "/spec/rayClusterConfig/suspend" if service else "/spec/suspend",
                      "value": True})
    if obj.get("kind") == "RayCluster" and slicing.enabled(obj) and (
            ray_live.owning_ray_job(obj) is not None
            or (not owned and should_suspend(obj, manage_without_queue_name, namespace, scope))):
        # its workers wait for their slice's admission: its own, or (KubeRay copies a RayJob's annotations
        # onto the cluster it makes) the elastic RayJob's
        patch += ray_update.ray_gate_ops(obj)
    if dispatches is not None and not service:  # MultiKueue has no RayService adapter here
        patch += managed_by.managed_by_ops(obj, namespace, _own_controller(obj), dispatches)
    return response(request, True, patch=patch or None)


def _pod_ops(pod: dict[str, Any], frameworks: Frameworks, manage_without_queue_name: bool,
             default_queue_exists: Callable[[str], bool], scope: managed.Scope) -> list[dict[str, Any]]:
    """Upstream's Pod ``Default``: LocalQueueDefaulting for a Pod the webhook would gate with the label
    (its namespace selected, no managed owner, not handed over by its Deployment or StatefulSet), then
    the gate, label and finalizer."""
    namespace = (pod.get("metadata") or {}).get("namespace") or ""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    ops: list[dict[str, Any]] = []
    if pods.SUSPENDED_BY_PARENT not in annotations:
        labelled, label_ops = _default_queue(pod, namespace, default_queue_exists, False)
        if label_ops and pods.manages_pod(labelled, frameworks, manage_without_queue_name, scope):
            pod, ops = labelled, label_ops
    return ops + pods.pod_defaults(pod, frameworks, manage_without_queue_name, scope, statefulset.pod_marks)


def _owner_ops(obj: dict[str, Any], build: Callable[[dict[str, Any]], list[dict[str, Any]]],
               default_queue_exists: Callable[[str], bool], frameworks: Frameworks) -> list[dict[str, Any]]:
    """A Deployment or StatefulSet: LocalQueueDefaulting on the object, then its pod template's ops."""
    namespace = (obj.get("metadata") or {}).get("namespace") or ""
    owned = managed.managed_owner(obj, frameworks) is not None
    labelled, ops = _default_queue(obj, namespace, default_queue_exists, owned)
    return ops + build(labelled) if not owned else []


def _patched(request: dict[str, Any], build) -> dict[str, Any]:
    obj = request.get("object")
    if not isinstance(obj, dict):
        return response(request, True)
    obj = {**obj, "metadata": {**(obj.get("metadata") or {}), "namespace": request.get("namespace")
                               or (obj.get("metadata") or {}).get("namespace")}}
    ops = build(obj)
    return response(request, True, patch=ops or None)


def mutator(kind: str, frameworks: tuple[str, ...], manage_without_queue_name: bool,
            default_queue_exists: Callable[[str], bool] = no_default_queue,
            scope: managed.Scope = managed.DEFAULT_SCOPE,
            dispatches: Callable[[str, str], bool] | None = None):
    """The mutating handler for ``kind``; one that lets everything through when its integration is off.
    ``scope``: managedJobsNamespaceSelector and the namespaces' labels; ``dispatches(namespace, queue)``:
    whether that LocalQueue's ClusterQueue has a MultiKueue check (``spec.managedBy`` defaulting)."""
    def allow(request: dict[str, Any]) -> dict[str, Any]:
        return response(request, True)

    on = enabled(frameworks)
    manage, exists = manage_without_queue_name, default_queue_exists
    integration = registry.BY_KIND.get(kind)
    if integration is not None and integration.framework == "pod":
        # every Pod is looked at (a Deployment's, a StatefulSet's or an LWS's are gated while theirs is on)
        def pod(req: dict[str, Any]) -> dict[str, Any]:
            if req.get("operation") != "CREATE":
                return allow(req)
            return _patched(req, lambda obj: _pod_ops(obj, on, manage, exists, scope))
        return pod
    if integration is None or integration.framework not in frameworks:
        return allow

    def owner(defaults: Callable[[dict[str, Any]], Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
        return lambda req: _patched(req, lambda obj: _owner_ops(obj, defaults, exists, on))

    handlers: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
        "batch/job": lambda req: mutate_job(req, manage, exists, scope, on, dispatches),
        "deployment": owner(lambda o: deployment_webhook.deployment_defaults(o, manage, scope)),
        "statefulset": owner(lambda o: statefulset_webhook.statefulset_defaults(o, manage, scope)),
        # upstream's JobSet Default is the Job's: LocalQueueDefaulting, suspend one Kueue manages, managedBy
        "jobset.x-k8s.io/jobset": lambda req: mutate_job(req, manage, exists, scope, on, dispatches),
        # LocalQueueDefaulting, then both pod templates of one Kueue manages are marked
        "leaderworkerset.x-k8s.io/leaderworkerset": owner(lambda o: leaderworkerset.defaults(
            o, managed.suspended_on_create(batch.queue_name(o), (o.get("metadata") or {}).get("namespace") or "",
                                           manage, scope))),
        **dict.fromkeys(ray_live.KINDS, lambda req: mutate_ray(req, manage, exists, scope, on, dispatches)),
    }
    return handlers[integration.framework]
