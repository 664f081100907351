"""What every job kind's webhooks share (upstream's ``jobframework`` defaults: ApplyDefaultLocalQueue,
ApplyDefaultForSuspend, ApplyDefaultForManagedBy), and what they are told (``HookContext``).

A kind's own rules are its package's (``jobs/<kind>/webhook.py``), declared in its ``Integration`` record
as ``Webhooks``; the controller's admission webhook (``controller/webhooks/admission.py``) dispatches to
them through the registry and names no kind. Pure: JSON patch operations in, refusals out."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pykueue.engine.multikueue import CONTROLLER_NAME
from pykueue.jobs import managed
from pykueue.jobs.framework.workload import QUEUE_NAME_LABEL, is_managed, queue_name
from pykueue.jobs.integration import Frameworks

Op = dict[str, Any]
DEFAULT_QUEUE = "default"  # upstream's constants.DefaultLocalQueueName


def no_default_queue(_namespace: str) -> bool:
    """No namespace has a default LocalQueue (a webhook that does not watch them)."""
    return False


def no_marks(_pod: Mapping[str, Any]) -> dict[str, str]:
    return {}


@dataclass(frozen=True, slots=True)
class HookContext:
    """What the webhooks know beyond the object (upstream's webhook fields): manageJobsWithoutQueueName,
    managedJobsNamespaceSelector with the namespaces' labels (``scope``), the integrations that are on,
    whether a namespace has a LocalQueue named ``default``, ``dispatches(namespace, queue)``: whether that
    LocalQueue's ClusterQueue has a MultiKueue check (None: managedBy is never defaulted), and
    ``pod_marks``: the labels a parent's integration names for its Pods, which only the Pod webhook can
    add (a StatefulSet's group is named after its UID)."""

    manage_without_queue_name: bool = False
    default_queue_exists: Callable[[str], bool] = no_default_queue
    scope: managed.Scope = managed.DEFAULT_SCOPE
    frameworks: Frameworks = field(default_factory=lambda: Frameworks((), ()))
    dispatches: Callable[[str, str], bool] | None = None
    pod_marks: Callable[[Mapping[str, Any]], dict[str, str]] = no_marks

    def suspends(self, obj: Mapping[str, Any], namespace: str) -> bool:
        """Upstream's WorkloadShouldBeSuspended for a job no managed ancestor owns: it names a queue, or
        every job is Kueue's and its namespace is selected."""
        return managed.suspended_on_create(queue_name(obj), namespace, self.manage_without_queue_name, self.scope)

    def owned(self, obj: Mapping[str, Any]) -> bool:
        """Whether a job of an integration that is on owns ``obj`` (it is queued with that one)."""
        return managed.managed_owner(obj, self.frameworks) is not None


def namespace_of(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("namespace") or "")


def default_queue(obj: dict[str, Any], ctx: HookContext, owned: bool) -> tuple[dict[str, Any], list[Op]]:
    """Upstream's ApplyDefaultLocalQueue: an object without a queue label in a namespace with a LocalQueue
    named ``default``, and no job Kueue manages owning it, is put in that queue. The object as labelled,
    and the JSON patch ops that label it."""
    if is_managed(obj) or owned or not ctx.default_queue_exists(namespace_of(obj)):
        return obj, []
    labels = (obj.get("metadata") or {}).get("labels")
    if isinstance(labels, dict):
        ops = [{"op": "add", "path": "/metadata/labels/kueue.x-k8s.io~1queue-name", "value": DEFAULT_QUEUE}]
    else:
        ops = [{"op": "add", "path": "/metadata/labels", "value": {QUEUE_NAME_LABEL: DEFAULT_QUEUE}}]
    labelled = {**obj, "metadata": {**(obj.get("metadata") or {}),
                                    "labels": {**(labels or {}), QUEUE_NAME_LABEL: DEFAULT_QUEUE}}}
    return labelled, ops


def _under(spec: Mapping[str, Any], under: tuple[str, ...]) -> Mapping[str, Any]:
    """The object beneath ``spec`` at ``under`` (a Kubeflow job's ``runPolicy``), empty when missing."""
    node: Mapping[str, Any] = spec
    for key in under:
        child = node.get(key)
        node = child if isinstance(child, Mapping) else {}
    return node


def set_op(spec: Mapping[str, Any], under: tuple[str, ...], key: str, value: Any, op: str = "add") -> Op:
    """The JSON patch op that sets ``spec.<under...>.<key>``; a missing object on the way is added
    holding the rest (a job written without ``runPolicy``)."""
    node: Mapping[str, Any] = spec
    path = "/spec"
    for i, step in enumerate(under):
        child = node.get(step)
        if not isinstance(child, Mapping):
            nested: Any = {key: value}
            for outer in reversed(under[i + 1:]):
                nested = {outer: nested}
            return {"op": "add", "path": f"{path}/{step}", "value": nested}
        node, path = child, f"{path}/{step}"
    return {"op": op if key in node else "add", "path": f"{path}/{key}", "value": value}


def _with(spec: Mapping[str, Any], under: tuple[str, ...], key: str, value: Any) -> dict[str, Any]:
    """``spec`` as ``set_op`` leaves it (copied along the path), so that a later op sees the change."""
    out = dict(spec)
    if not under:
        out[key] = value
        return out
    child = out.get(under[0])
    out[under[0]] = _with(child if isinstance(child, Mapping) else {}, under[1:], key, value)
    return out


def managed_by_ops(obj: Mapping[str, Any], own_controller: str | None, ctx: HookContext,
                   under: tuple[str, ...] = ()) -> list[Op]:
    """Upstream's ApplyDefaultForManagedBy: the JSON patch that sets ``spec.managedBy`` (beneath
    ``spec.<under>``: a Kubeflow job's ``spec.runPolicy.managedBy``) to MultiKueue's, or none. Only a job
    queued where MultiKueue dispatches, with no ``managedBy`` or its kind's own controller
    (``own_controller``) there, is changed."""
    spec = obj.get("spec")
    queue = queue_name(obj)
    if ctx.dispatches is None or not isinstance(spec, dict) or not queue:
        return []
    if _under(spec, under).get("managedBy") not in (None, own_controller):
        return []
    if not ctx.dispatches(namespace_of(obj), queue):
        return []
    return [set_op(spec, under, "managedBy", CONTROLLER_NAME, "replace")]


def suspend_default(obj: dict[str, Any], ctx: HookContext, own_controller: str | None,
                    gate_ops: Callable[[dict[str, Any]], list[Op]] | None = None,
                    under: tuple[str, ...] = ()) -> list[Op]:
    """The job framework's ``Default`` as the Job's and the JobSet's webhooks apply it: LocalQueueDefaulting,
    then ``spec.suspend: true`` (beneath ``spec.<under>``: a Kubeflow job's ``spec.runPolicy.suspend``) on
    one Kueue manages that would start right away, ``gate_ops`` (an elastic Job's pods wait for their
    slice's admission), and managedBy for MultiKueue (beside ``suspend``). One a managed job owns is left
    to that one."""
    if not isinstance(obj.get("spec"), dict):
        return []
    owned = ctx.owned(obj)
    obj, patch = default_queue(obj, ctx, owned)
    suspends = not owned and ctx.suspends(obj, namespace_of(obj))
    if _under(obj["spec"], under).get("suspend") is not True and suspends:
        patch.append(set_op(obj["spec"], under, "suspend", True))
        obj = {**obj, "spec": _with(obj["spec"], under, "suspend", True)}
    if gate_ops is not None and suspends:
        patch += gate_ops(obj)
    return patch + managed_by_ops(obj, own_controller, ctx, under)


def owner_default(obj: dict[str, Any], ctx: HookContext, template: Callable[[dict[str, Any]], list[Op]]) -> list[Op]:
    """A kind that queues its Pods (a Deployment, a StatefulSet, a LeaderWorkerSet): LocalQueueDefaulting
    on the object, then ``template``'s ops, which mark its pod templates; nothing for one a managed job
    owns."""
    if ctx.owned(obj):
        return []
    labelled, ops = default_queue(obj, ctx, False)
    return ops + template(labelled)
