"""Upstream's JobSet webhooks (``pkg/controller/jobs/jobset/jobset_webhook.go``): the mutating one is the
job framework's ``Default`` (LocalQueueDefaulting, suspend one Kueue manages, managedBy for MultiKueue);
the validating one's rules are ``workload.py``'s, shared with the simulator."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pykueue.jobs import hooks
from pykueue.jobs.framework.validation import JobConversionError
from pykueue.jobs.hooks import HookContext
from pykueue.jobs.jobset import workload

OWN_CONTROLLER = "jobset.sigs.k8s.io/jobset-controller"  # spec.managedBy's value for JobSet's controller


def default(obj: dict[str, Any], ctx: HookContext) -> list[dict[str, Any]]:
    return hooks.suspend_default(obj, ctx, OWN_CONTROLLER)


def validate_create(obj: Mapping[str, Any], _ctx: HookContext) -> list[JobConversionError]:
    return workload.validate_create(obj)


def validate_update(old: Mapping[str, Any], new: Mapping[str, Any], ctx: HookContext) -> list[JobConversionError]:
    return workload.validate_update(old, new, ctx.default_queue_exists)
