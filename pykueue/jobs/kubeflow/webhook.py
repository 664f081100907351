"""A Kubeflow job's webhooks (upstream's ``pkg/controller/jobs/kubeflow/jobs/<kind>/<kind>_webhook.go``
and ``mpijob_webhook.go``, the job framework's base webhook): the mutating one is the framework's
``Default`` with ``suspend`` and ``managedBy`` in ``spec.runPolicy`` (LocalQueueDefaulting, suspend
one Kueue manages, managedBy for MultiKueue where its kind's own operator or nothing is named); the
validating one is the rules every integration shares (``generic_update``), suspended meaning
``spec.runPolicy.suspend``, then the kind's ``ValidateOnCreate`` (valid topology requests), on create
and on update."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pykueue.jobs import generic_update, hooks
from pykueue.jobs.framework.validation import JobConversionError
from pykueue.jobs.hooks import HookContext
from pykueue.jobs.kubeflow import workload
from pykueue.jobs.kubeflow.kind import TrainingKind
from pykueue.jobs.multikueue import Obj

RUN_POLICY = ("runPolicy",)
Errors = list[JobConversionError]


def default(kind: TrainingKind) -> Callable[[Obj, HookContext], list[dict[str, Any]]]:
    def hook(obj: Obj, ctx: HookContext) -> list[dict[str, Any]]:
        return hooks.suspend_default(obj, ctx, kind.own_controller, under=RUN_POLICY)
    return hook


def validate_create(kind: TrainingKind) -> Callable[[Mapping[str, Any], HookContext], Errors]:
    def hook(obj: Mapping[str, Any], _ctx: HookContext) -> Errors:
        return generic_update.on_create(obj) + workload.topology_errors(kind, obj)
    return hook


def validate_update(kind: TrainingKind) -> Callable[[Mapping[str, Any], Mapping[str, Any], HookContext], Errors]:
    def hook(old: Mapping[str, Any], new: Mapping[str, Any], ctx: HookContext) -> Errors:
        errors = generic_update.on_update(old, new, suspended=workload.suspended(new),
                                          was_suspended=workload.suspended(old),
                                          default_queue_exists=ctx.default_queue_exists)
        return errors + generic_update.on_create(new) + workload.topology_errors(kind, new)
    return hook
