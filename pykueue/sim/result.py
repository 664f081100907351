"""The ``SimulationResult`` document, exactly as ``shared/spec/simulate.md`` fixes it.

``write_json`` and ``write_yaml`` stream the document to a text stream piece by piece: a run of a
million workloads has a result of several GB as one string, more than the run itself. Their bytes are
exactly those of ``to_json`` and ``to_yaml`` (``result_json`` and ``result_yaml`` say how).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import yaml

from pykueue.engine.model import Admission, seconds_to_us
from pykueue.engine.quota import FR
from pykueue.engine.status import WorkloadStatus
from pykueue.engine.workload import Shared, State
from pykueue.quantity import format_quantity
from pykueue.sim.entries import Entries
from pykueue.sim.result_json import write_json
from pykueue.sim.result_yaml import write_yaml
from pykueue.sim.simulator import US, Run

if TYPE_CHECKING:
    from pykueue.perf.summary import Recorder

__all__ = ["Entries", "build_result", "streamed_result", "to_json", "to_yaml", "write_json", "write_yaml"]


def seconds(us: int | None) -> float | None:
    return None if us is None else us / US


def _pod_set_assignments(admission: Admission, shared: Shared | None = None) -> list[dict[str, Any]]:
    """An entry's podSetAssignments. With ``shared`` (the streaming writers, which do not mind one
    list in many entries) made once per admission: the engine shares equal admissions, a trace has a
    few hundred. ``build_result`` makes one per entry: ``yaml.safe_dump`` would write anchors."""
    if shared is not None:
        return shared.of_object(admission, lambda: _pod_set_assignments(admission))
    return [
        {"name": psa.name, "count": psa.count, "flavors": dict(sorted(psa.flavors.items()))}
        for psa in admission.pod_set_assignments
    ]


def _admission(w: WorkloadStatus, shared: Shared | None = None) -> dict[str, Any] | None:
    """The current admission, or for a finished workload the one it finished under."""
    if w.admission is None or not (w.holds_quota or w.state is State.FINISHED):
        return None
    return {"clusterQueue": w.admission.cluster_queue,
            "podSetAssignments": _pod_set_assignments(w.admission, shared)}


def workload_entry(w: WorkloadStatus, created: float, shared: Shared | None = None) -> dict[str, Any]:
    return {
        "kind": w.spec.kind,
        "namespace": w.namespace,
        "name": w.name,
        "queueName": w.spec.queue_name,
        "clusterQueue": w.cluster_queue,
        "priority": w.priority,
        "state": w.state.value,
        "admission": _admission(w, shared),
        "createdAt": created,
        "admittedAt": seconds(w.admitted_us),
        "finishedAt": seconds(w.finished_us),
        "evictions": w.evictions,
        "reason": w.reason,
        "message": w.message,
    }


def usage_strings(usage: dict[FR, int]) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for (flavor, res), v in sorted(usage.items()):
        if v:
            out.setdefault(flavor, {})[res] = format_quantity(res, v)
    return out


def workload_entries(run: Run, shared: Shared | None = None) -> Iterator[dict[str, Any]]:
    """The result's workload entries, by namespace then name, made one at a time (``shared``: see
    ``_pod_set_assignments``)."""
    for w in run.engine.iter_workload_statuses():
        yield workload_entry(w, seconds_to_us(w.spec.creation_time) / US, shared)


def event_entries(run: Run, shared: Shared | None = None) -> Iterator[dict[str, Any]]:
    """The result's event entries, in the order they happened, made one at a time (``shared``: see
    ``_pod_set_assignments``)."""
    for time_us, typ, workload, queue, admission, rest in run.log.rows():
        item: dict[str, Any] = {"time": time_us / US, "type": typ, "workload": workload, "clusterQueue": queue}
        if rest is not None:
            reason, by, message, cause = rest
            if by is not None:
                item["by"] = by
            if reason is not None:
                item["reason"] = reason
            if cause is not None:
                item["underlyingCause"] = cause
            if message is not None:
                item["message"] = message
        if admission is not None:
            item["podSetAssignments"] = _pod_set_assignments(admission, shared)
        yield item


def cluster_queue_entries(run: Run) -> list[dict[str, Any]]:
    engine = run.engine
    cqs = []
    for name in sorted(engine.cluster_queue_names()):
        cq = engine.cluster_queue_status(name)
        assert cq is not None
        cqs.append(
            {
                "name": name,
                "cohort": cq.cohort,
                "pendingWorkloads": cq.pending,
                "admittedWorkloads": cq.admitted,
                "usage": usage_strings(dict(cq.usage)),
                "weightedShare": cq.weighted_share,
            }
        )
    return cqs


def build_result(run: Run, summary: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "pykueue.dev/v1alpha1",
        "kind": "SimulationResult",
        "endTime": seconds(run.end_us),
        "workloads": list(workload_entries(run)),
        "events": list(event_entries(run)),
        "clusterQueues": cluster_queue_entries(run),
        "summary": summary or {},
    }


def streamed_result(run: Run, recorder: Recorder | None = None) -> Iterator[tuple[str, Any]]:
    """The items of ``build_result(run, summary)`` for the writers, the workloads and events made as
    they are written and shown to ``recorder``; the summary (the last item) is its summary, asked for
    once they have all passed. Without a recorder the summary is ``{}``, as ``build_result``'s."""
    yield "apiVersion", "pykueue.dev/v1alpha1"
    yield "kind", "SimulationResult"
    end = seconds(run.end_us)
    yield "endTime", end
    # every float of these entries is a time in integer microseconds / 1e6: finite
    shared = Shared()
    yield "workloads", Entries(len(run.engine.workloads), lambda: workload_entries(run, shared),
                               None if recorder is None else recorder.workload, finite=True)
    yield "events", Entries(len(run.log), lambda: event_entries(run, shared),
                            None if recorder is None else recorder.event, finite=True)
    yield "clusterQueues", cluster_queue_entries(run)
    yield "summary", {} if recorder is None else recorder.summary(float(end or 0.0))


def to_json(result: dict[str, Any]) -> str:
    return json.dumps(result, indent=2, ensure_ascii=False) + "\n"


def to_yaml(result: dict[str, Any]) -> str:
    return yaml.safe_dump(result, sort_keys=False, allow_unicode=True, width=120)
