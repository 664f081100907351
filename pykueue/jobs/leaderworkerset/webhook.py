"""Upstream's LeaderWorkerSet webhooks (``pkg/controller/jobs/leaderworkerset/leaderworkerset_webhook.go``):
the mutating one is LocalQueueDefaulting, then both pod templates of one Kueue manages are marked; the
validating one's rules are ``workload.py``'s, shared with the simulator."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pykueue.jobs import hooks
from pykueue.jobs.framework.validation import JobConversionError
from pykueue.jobs.framework.workload import queue_name
from pykueue.jobs.hooks import HookContext
from pykueue.jobs.leaderworkerset import workload


def default(obj: dict[str, Any], ctx: HookContext) -> list[dict[str, Any]]:
    return hooks.owner_default(obj, ctx, lambda labelled: workload.defaults(
        labelled, ctx.suspends(labelled, hooks.namespace_of(labelled))))


def validate_create(obj: Mapping[str, Any], _ctx: HookContext) -> list[JobConversionError]:
    return workload.validate_create(obj)


def validate_update(old: Mapping[str, Any], new: Mapping[str, Any], ctx: HookContext) -> list[JobConversionError]:
    return workload.validate_update(old, new, managed=bool(queue_name(new)) or ctx.manage_without_queue_name)
