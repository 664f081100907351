"""What upstream's RayCluster (``vraycluster``), RayJob (``vrayjob``) and RayService (``vrayservice``)
webhooks refuse.

Only objects Kueue queues are checked (a queue label, or every object with
``manageJobsWithoutQueueName``). A RayJob either brings its own cluster (``rayClusterSpec``) or
selects an existing one (``clusterSelector``: then it is not Kueue's and nothing more is checked),
never both and never neither; its cluster is deleted when the job finishes. A RayService's
cluster spec (``spec.rayClusterConfig``) is held to a RayCluster's rules, reported at
``spec.rayClusterSpec`` as upstream's webhook names it. Every kind's cluster
autoscales only as an elastic job, has at most seven worker groups and none named ``head``. Then the
rules every integration shares (``generic_update``), suspended meaning ``spec.suspend: true`` (a
RayService's ``spec.rayClusterConfig.suspend``); an update
is held to them and to the create rules of the new object.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pykueue.jobs import generic_update, hooks, slicing
from pykueue.jobs.framework.validation import JobConversionError
from pykueue.jobs.framework.workload import queue_name
from pykueue.jobs.hooks import HookContext
from pykueue.jobs.ray import generic as ray_live
from pykueue.jobs.ray import workload as ray
from pykueue.jobs.slicing import SCHEDULING_GATE


def _managed(obj: Mapping[str, Any], manage_without_queue_name: bool) -> bool:
    return manage_without_queue_name or queue_name(obj) is not None


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _job_rules(job: Mapping[str, Any]) -> tuple[list[JobConversionError], bool]:
    """The RayJob's own rules, and whether upstream stops there (its early returns)."""
    spec = _spec(job)
    selector, cluster = spec.get("clusterSelector"), spec.get("rayClusterSpec")
    if selector and cluster is not None:
        return [JobConversionError("spec.clusterSelector", f"Invalid value: {_go_map(selector)}: a kueue managed job "
                                                           "should not use an existing cluster")], True
    if selector:
        return [], True  # an existing cluster: not Kueue's to check
    if not isinstance(cluster, Mapping):
        return [JobConversionError("spec.rayClusterSpec", "Required value: rayClusterSpec is required for "
                                                          "Kueue-managed jobs that don't use clusterSelector")], True
    errors: list[JobConversionError] = []
    if spec.get("shutdownAfterJobFinishes") is not True:
        errors.append(JobConversionError("spec.shutdownAfterJobFinishes", "Invalid value: false: a kueue managed job "
                                                                          "should delete the cluster after finishing"))
    errors += ray.kueue_cluster_rules(cluster, "spec.rayClusterSpec", generic_update.elastic(job))
    return errors, False


def _go_map(value: object) -> str:
    """How field.Invalid prints a map[string]string: ``map[k:v ...]``, keys sorted."""
    if not isinstance(value, Mapping):
        return str(value)
    return "map[" + " ".join(f"{k}:{value[k]}" for k in sorted(value)) + "]"


def validate_create(obj: Mapping[str, Any], manage_without_queue_name: bool) -> list[JobConversionError]:
    """``validateCreate`` of the webhook for ``obj``'s kind."""
    errors: list[JobConversionError] = []
    if _managed(obj, manage_without_queue_name):
        if obj.get("kind") == "RayJob":
            found, stop = _job_rules(obj)
            if stop:
                return found
            errors += found
        elif obj.get("kind") == ray.RAY_SERVICE:
            cluster = _spec(obj).get(ray.SERVICE_CLUSTER_FIELD)
            if isinstance(cluster, Mapping):  # upstream's path names Go's field
                errors += ray.kueue_cluster_rules(cluster, "spec.rayClusterSpec", generic_update.elastic(obj))
        else:
            errors += ray.kueue_cluster_rules(_spec(obj), "spec", generic_update.elastic(obj))
    return errors + generic_update.on_create(obj)


def _suspended(obj: Mapping[str, Any]) -> bool:
    spec = _spec(obj)
    if obj.get("kind") == ray.RAY_SERVICE:
        cluster = spec.get(ray.SERVICE_CLUSTER_FIELD)
        return isinstance(cluster, Mapping) and cluster.get("suspend") is True
    return spec.get("suspend") is True


def validate_update(old: Mapping[str, Any], new: Mapping[str, Any], manage_without_queue_name: bool,
                    default_queue_exists: Callable[[str], bool]) -> list[JobConversionError]:
    """``ValidateUpdate``: nothing for an object Kueue does not queue; else the shared update rules,
    then the new object's create rules."""
    if not _managed(new, manage_without_queue_name):
        return []
    errors = generic_update.on_update(old, new, suspended=_suspended(new), was_suspended=_suspended(old),
                                      default_queue_exists=default_queue_exists)
    return errors + validate_create(new, manage_without_queue_name)


def ray_gate_ops(cluster: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The RayCluster webhook's default for an elastic cluster: each worker group's pods wait at the gate
    until the slice that counts them is admitted (the head runs under the first slice)."""
    ops: list[dict[str, Any]] = []
    for i, group in enumerate((cluster.get("spec") or {}).get("workerGroupSpecs") or []):
        spec = ((group or {}).get("template") or {}).get("spec")
        if not isinstance(spec, dict):
            continue
        path = f"/spec/workerGroupSpecs/{i}/template/spec/schedulingGates"
        gates = spec.get("schedulingGates")
        if not gates:
            ops.append({"op": "add", "path": path, "value": [{"name": SCHEDULING_GATE}]})
        elif not any(isinstance(g, dict) and g.get("name") == SCHEDULING_GATE for g in gates):
            ops.append({"op": "add", "path": f"{path}/-", "value": {"name": SCHEDULING_GATE}})
    return ops


KUBERAY = "ray.io/kuberay-operator"  # a RayJob's and a RayCluster's own controller (spec.managedBy)


def default(obj: dict[str, Any], ctx: HookContext) -> list[dict[str, Any]]:
    """A RayCluster's, RayJob's or RayService's ``Default``: LocalQueueDefaulting as for a Job, then
    ``spec.suspend: true`` (a RayService's ``spec.rayClusterConfig.suspend``) on one Kueue manages, created
    to start right away (not a RayJob's or RayService's own cluster: its owner is queued); an elastic
    RayCluster's workers gated; ``spec.managedBy`` defaulted for MultiKueue as a Job's is (KubeRay's
    operator the own controller), not for a RayService: MultiKueue does not dispatch those."""
    if not isinstance(obj.get("spec"), dict):
        return []
    manage = ctx.manage_without_queue_name
    owned = ray_live.owned_by_ray_job(obj) or ctx.owned(obj)
    obj, patch = hooks.default_queue(obj, ctx, owned)
    service = obj.get("kind") == ray_live.RAY_SERVICE
    if service and not isinstance(obj["spec"].get(ray.SERVICE_CLUSTER_FIELD), dict):
        return patch  # the API server refuses it (a required field)
    suspends = not owned and ctx.suspends(obj, hooks.namespace_of(obj))
    if ray_live.suspend_holder(obj).get("suspend") is not True and ray_live.is_managed(obj, manage) and suspends:
        patch.append({"op": "add", "path": "/spec/rayClusterConfig/suspend" if service else "/spec/suspend",
                      "value": True})
    if obj.get("kind") == ray_live.RAY_CLUSTER and slicing.enabled(obj) and (
            ray_live.owning_ray_job(obj) is not None or suspends):
        # its workers wait for their slice's admission: its own, or (KubeRay copies a RayJob's annotations
        # onto the cluster it makes) the elastic RayJob's
        patch += ray_gate_ops(obj)
    if not service:  # MultiKueue has no RayService adapter here
        patch += hooks.managed_by_ops(obj, KUBERAY, ctx)
    return patch


def hook_create(obj: Mapping[str, Any], ctx: HookContext) -> list[JobConversionError]:
    return validate_create(obj, ctx.manage_without_queue_name)


def hook_update(old: Mapping[str, Any], new: Mapping[str, Any], ctx: HookContext) -> list[JobConversionError]:
    return validate_update(old, new, ctx.manage_without_queue_name, ctx.default_queue_exists)
