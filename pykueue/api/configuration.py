"""Kueue's ``Configuration`` -> ``model.Config``, with upstream's defaults and validation.

v1beta1 turns features on with ``enable: true``; v1beta2 (Kueue v0.15+) by the section being present.
Defaults as of v0.18: ``waitForPodsReady.timeout`` 5m in v1beta1 (required in v1beta2);
``blockAdmission`` true in v1beta1 and false in v1beta2; ``recoveryTimeout`` falls back to ``timeout``
(``0s`` turns it off); requeuing by ``Eviction`` time with a 60s base and a 3600s cap; fair sharing uses
both preemption strategies in v1beta1 when none are listed.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from pydantic import ValidationError

from pykueue.api import convert, names, validation
from pykueue.api.durations import parse_duration
from pykueue.api.models.config import ConfigurationV1beta1, ConfigurationV1beta2, RequeuingStrategy
from pykueue.api.models.pod import LabelSelector
from pykueue.engine import model
from pykueue.jobs import managed, registry

Errors = list[tuple[str, str]]

DEFAULT_PODS_READY_TIMEOUT = 300.0
VALID_STRATEGY_SETS = (
    ("LessThanOrEqualToFinalShare",),
    ("LessThanInitialShare",),
    ("LessThanOrEqualToFinalShare", "LessThanInitialShare"),
)


def _duration(value: object, path: str, errors: Errors) -> float | None:
    try:
        seconds = parse_duration(value)  # type: ignore[arg-type]
    except ValueError as exc:
        errors.append((path, str(exc)))
        return None
    if seconds < 0:
        errors.append((path, f"Invalid value: {value!r}: must be greater than or equal to 0"))
        return None
    return seconds


def _duration_or(value: object, path: str, errors: Errors, default: float) -> float:
    seconds = _duration(value, path, errors)
    return default if seconds is None else seconds


def _requeuing(strategy: RequeuingStrategy | None, path: str, errors: Errors) -> model.RequeuingStrategy:
    strategy = strategy or RequeuingStrategy.model_construct()
    base = strategy.backoff_base_seconds
    cap = strategy.backoff_max_seconds
    limit = strategy.backoff_limit_count
    for field, value in (
        ("backoffLimitCount", limit),
        ("backoffBaseSeconds", base),
        ("backoffMaxSeconds", cap),
    ):
        if value is not None and value < 0:
            errors.append((f"{path}.{field}", f"Invalid value: {value}: must be greater than or equal to 0"))
    return model.RequeuingStrategy(
        timestamp=strategy.timestamp or "Eviction",
        backoff_limit_count=limit,
        backoff_base_seconds=60 if base is None else base,
        backoff_max_seconds=3600 if cap is None else cap,
    )


def _strategies(strategies: list[str] | None, path: str, errors: Errors) -> tuple[str, ...]:
    if not strategies:
        return model.FairSharing().preemption_strategies
    chosen = tuple(strategies)
    if chosen not in VALID_STRATEGY_SETS:
        listed = ", ".join(f'"{",".join(s)}"' for s in VALID_STRATEGY_SETS)
        errors.append((path, f'Unsupported value: "{",".join(chosen)}": supported values: {listed}'))
    return chosen


def _wait_for_pods_ready(w: Any, default_timeout: float | None, block_default: bool, errors: Errors) -> model.WaitForPodsReady:
    """The enabled waitForPodsReady section; the versions differ only in their defaults."""
    path = "waitForPodsReady"
    timeout = default_timeout or 0.0
    if w.timeout is not None:
        timeout = _duration(w.timeout, f"{path}.timeout", errors) or 0.0
    recovery: float | None = timeout
    if w.recovery_timeout is not None:
        recovery = _duration(w.recovery_timeout, f"{path}.recoveryTimeout", errors)
    return model.WaitForPodsReady(
        enable=True,
        timeout_seconds=timeout,
        recovery_timeout_seconds=recovery or None,
        block_admission=block_default if w.block_admission is None else bool(w.block_admission),
        requeuing=_requeuing(w.requeuing_strategy, f"{path}.requeuingStrategy", errors),
    )


def _frameworks(integrations: object, errors: Errors) -> tuple[str, ...]:
    """``integrations.frameworks``; a name no Kueue integration has is refused as upstream's validation
    refuses it (NotSupported, naming the supported values)."""
    frameworks = integrations.get("frameworks") if isinstance(integrations, dict) else None
    if not isinstance(frameworks, list):
        return model.Config().frameworks
    known = (*registry.FRAMEWORKS, *registry.NOT_INTEGRATED)
    for i, name in enumerate(frameworks):
        if name not in known:
            listed = ", ".join(f'"{k}"' for k in known)
            errors.append((f"integrations.frameworks[{i}]",
                           f"Unsupported value: {json.dumps(name)}: supported values: {listed}"))
    return tuple(f for f in frameworks if isinstance(f, str) and f in known)


def _metrics(metrics: object, gates: dict[str, bool] | None, errors: Errors) -> model.Metrics:
    """``metrics.enableClusterQueueResources`` and the ``LocalQueueMetrics`` feature gate."""
    if metrics is not None and not isinstance(metrics, dict):
        errors.append(("metrics", f"Invalid value: {metrics!r}: must be an object"))
    resources = metrics.get("enableClusterQueueResources") if isinstance(metrics, dict) else None
    if resources is not None and not isinstance(resources, bool):
        errors.append(("metrics.enableClusterQueueResources", f"Invalid value: {resources!r}: must be a boolean"))
        resources = None
    local = (gates or {}).get("LocalQueueMetrics")
    return model.Metrics(cluster_queue_resources=bool(resources),
                         local_queues=model.Metrics().local_queues if local is None else local)


def namespace_selector(raw: object, namespace: object) -> tuple[model.LabelSelector | None, Errors]:
    """``managedJobsNamespaceSelector`` (upstream's default: all but kube-system and the controller's
    namespace, which no selector may match); the default stands in for one that is not valid."""
    path = "managedJobsNamespaceSelector"
    errors: Errors = []
    namespace = namespace if isinstance(namespace, str) and namespace else managed.CONTROLLER_NAMESPACE
    selector = managed.default_selector(namespace)
    if raw is None:
        return selector, errors
    try:
        parsed = LabelSelector.model_validate(raw)
    except ValidationError:
        return selector, [(path, f"Invalid value: {json.dumps(raw)}: must be a label selector "
                                 "(matchLabels, matchExpressions)")]
    errors += validation.label_selector(parsed, path)
    if errors:
        return selector, errors
    chosen = convert.label_selector(parsed)
    errors += [(path, f"Invalid value: {json.dumps(raw)}: {message}")
               for message in managed.selector_problems(chosen, namespace)]
    return chosen, errors


def _which_jobs(cfg: ConfigurationV1beta1 | ConfigurationV1beta2, errors: Errors) -> dict[str, Any]:
    """``managedJobsNamespaceSelector``, ``integrations.labelKeysToCopy`` and ``namespace`` (the
    controller's own: where its MultiKueue kubeconfig Secrets are read)."""
    selector, found = namespace_selector(cfg.managed_jobs_namespace_selector, cfg.namespace)
    errors += found
    integrations = cfg.integrations if isinstance(cfg.integrations, dict) else {}
    keys = integrations.get("labelKeysToCopy")
    if keys is not None and not (isinstance(keys, list) and all(isinstance(k, str) for k in keys)):
        errors.append(("integrations.labelKeysToCopy", f"Invalid value: {json.dumps(keys)}: must be a list of label keys"))
        keys = None
    namespace = cfg.namespace if isinstance(cfg.namespace, str) and cfg.namespace else None
    return {"managed_jobs_namespace_selector": selector, "label_keys_to_copy": tuple(keys or ()),
            "namespace": namespace}


def _multi_kueue(raw: object, errors: Errors) -> model.MultiKueue:
    """``multiKueue``: upstream's defaults, its checks (no negative interval, the origin a label value)."""
    default = model.MultiKueue()
    if raw is None:
        return default
    if not isinstance(raw, dict):
        errors.append(("multiKueue", f"Invalid value: {json.dumps(raw)}: must be an object"))
        return default
    fields = {"gcInterval", "origin", "workerLostTimeout", "dispatcherName", "externalFrameworks"}
    for key in raw:
        if key not in fields:
            errors.append((f"multiKueue.{key}", "unknown field"))
    gc = default.gc_interval_seconds
    lost = default.worker_lost_timeout_seconds
    if raw.get("gcInterval") is not None:
        gc = _duration_or(raw["gcInterval"], "multiKueue.gcInterval", errors, gc)
    if raw.get("workerLostTimeout") is not None:
        lost = _duration_or(raw["workerLostTimeout"], "multiKueue.workerLostTimeout", errors, lost)
    origin = raw.get("origin", default.origin)
    if not isinstance(origin, str):
        errors.append(("multiKueue.origin", f"Invalid value: {json.dumps(origin)}: must be a string"))
        origin = default.origin
    else:
        problems = names.label_value(origin)
        if problems:
            errors.append(("multiKueue.origin", f'Invalid value: "{origin}": {",".join(problems)}'))
    dispatcher = raw.get("dispatcherName", default.dispatcher_name)
    if not isinstance(dispatcher, str) or not dispatcher:
        errors.append(("multiKueue.dispatcherName", f"Invalid value: {json.dumps(dispatcher)}: must be a name"))
        dispatcher = default.dispatcher_name
    return model.MultiKueue(gc_interval_seconds=gc, origin=origin, worker_lost_timeout_seconds=lost,
                            dispatcher_name=dispatcher)


def _granular(gates: dict[str, bool] | None) -> bool:
    """Upstream's UnadmittedWorkloadsObservability gate (alpha, off by default)."""
    return bool((gates or {}).get("UnadmittedWorkloadsObservability", False))


def _config(wait: model.WaitForPodsReady, strategies: list[str] | None, fair_on: bool, manage: object,
            errors: Errors, integrations: object, metrics: model.Metrics) -> model.Config:
    fair = model.FairSharing()
    if fair_on:
        fair = model.FairSharing(
            enable=True,
            preemption_strategies=_strategies(strategies, "fairSharing.preemptionStrategies", errors),
        )
    return model.Config(wait_for_pods_ready=wait, fair_sharing=fair, manage_jobs_without_queue_name=bool(manage),
                        frameworks=_frameworks(integrations, errors), metrics=metrics)


def config_v1beta2(cfg: ConfigurationV1beta2) -> tuple[model.Config, Errors]:
    """v1beta2: a present section means enabled; blockAdmission defaults to false."""
    errors: Errors = []
    w = cfg.wait_for_pods_ready
    wait = _wait_for_pods_ready(w, None, False, errors) if w is not None else model.WaitForPodsReady()
    fs = cfg.fair_sharing
    config = _config(wait, fs.preemption_strategies if fs else None, fs is not None,
                     cfg.manage_jobs_without_queue_name, errors, cfg.integrations,
                     _metrics(cfg.metrics, cfg.feature_gates, errors))
    return dataclasses.replace(config, **_which_jobs(cfg, errors), granular_reasons=_granular(cfg.feature_gates),
                               multi_kueue=_multi_kueue(cfg.multi_kueue, errors)), errors


def config_v1beta1(cfg: ConfigurationV1beta1) -> tuple[model.Config, Errors]:
    """v1beta1: ``enable: true`` switches a section on; blockAdmission defaults to true."""
    errors: Errors = []
    w = cfg.wait_for_pods_ready
    enabled = w is not None and w.enable
    wait = _wait_for_pods_ready(w, DEFAULT_PODS_READY_TIMEOUT, True, errors) if enabled else model.WaitForPodsReady()
    fs = cfg.fair_sharing
    config = _config(wait, fs.preemption_strategies if fs else None, fs is not None and bool(fs.enable),
                     cfg.manage_jobs_without_queue_name, errors, cfg.integrations,
                     _metrics(cfg.metrics, cfg.feature_gates, errors))
    return dataclasses.replace(config, **_which_jobs(cfg, errors), granular_reasons=_granular(cfg.feature_gates),
                               multi_kueue=_multi_kueue(cfg.multi_kueue, errors)), errors
