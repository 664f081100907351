"""The ``SimulationResult`` document, exactly as ``shared/spec/simulate.md`` fixes it."""

from __future__ import annotations

import json
from typing import Any

import yaml

from pykueue.api.quantity import format_quantity
from pykueue.engine.engine import Engine
from pykueue.engine.workload import State, WorkloadInfo
from pykueue.sim.simulator import US, Run


def seconds(us: int | None) -> float | None:
    return None if us is None else us / US


def _time(value: float | None) -> float | None:
    """Engine times are seconds derived from integer microseconds; round away float noise."""
    return None if value is None else round(value * US) / US


def _admission(info: WorkloadInfo) -> dict[str, Any] | None:
    if info.admission is None or not info.has_quota:
        return None
    return {
        "clusterQueue": info.admission.cluster_queue,
        "podSetAssignments": [
            {"name": psa.name, "count": psa.count, "flavors": dict(sorted(psa.flavors.items()))}
            for psa in info.admission.pod_set_assignments
        ],
    }


def workload_entry(engine: Engine, info: WorkloadInfo, created: float) -> dict[str, Any]:
    cq = info.admission.cluster_queue if info.has_quota and info.admission else engine.cluster_queue_for(info)
    return {
        "kind": info.spec.kind,
        "namespace": info.spec.namespace,
        "name": info.spec.name,
        "queueName": info.spec.queue_name,
        "clusterQueue": cq,
        "priority": info.spec.priority,
        "state": info.state.value,
        "admission": _admission(info),
        "createdAt": created,
        "admittedAt": _time(info.admitted_at),
        "finishedAt": _time(info.finished_at),
        "evictions": info.evictions,
        "reason": engine.reason_of(info),
    }


def usage_strings(usage: dict[tuple[str, str], int]) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for (flavor, res), v in sorted(usage.items()):
        if v:
            out.setdefault(flavor, {})[res] = format_quantity(res, v)
    return out


def build_result(run: Run, summary: dict[str, Any] | None = None) -> dict[str, Any]:
    engine = run.engine
    workloads = []
    for info in engine.workloads_in_order():
        created = seconds(run.created_us.get(info.key, round(info.spec.creation_time * US)))
        workloads.append(workload_entry(engine, info, created or 0.0))
    events = []
    for logged in run.log:
        e = logged.event
        item: dict[str, Any] = {
            "time": seconds(logged.time_us),
            "type": e.type,
            "workload": e.workload,
            "clusterQueue": e.cluster_queue,
        }
        if e.by is not None:
            item["by"] = e.by
        if e.reason is not None:
            item["reason"] = e.reason
        events.append(item)
    cqs = []
    for name in sorted(engine.cqs):
        cq = engine.cqs[name]
        admitted = sum(1 for w in cq.admitted.values() if w.state is State.ADMITTED)
        cqs.append(
            {
                "name": name,
                "cohort": cq.spec.cohort,
                "pendingWorkloads": len(cq.pending),
                "admittedWorkloads": admitted,
                "usage": usage_strings(dict(cq.node.usage)),
                "weightedShare": engine.weighted_share(name),
            }
        )
    return {
        "apiVersion": "pykueue.dev/v1alpha1",
        "kind": "SimulationResult",
        "endTime": seconds(run.end_us),
        "workloads": workloads,
        "events": events,
        "clusterQueues": cqs,
        "summary": summary or {},
    }


def to_json(result: dict[str, Any]) -> str:
    return json.dumps(result, indent=2, ensure_ascii=False) + "\n"


def to_yaml(result: dict[str, Any]) -> str:
    return yaml.safe_dump(result, sort_keys=False, allow_unicode=True, width=120)
