"""A workload slice replaced by a scale-up, as the controller reports it: upstream's Normal event
``WorkloadSliceReplaced`` on the old slice and ``kueue_replaced_workload_slices_total`` per ClusterQueue."""

from __future__ import annotations

from pykueue.engine import events as ev
from pykueue.engine.slices import WORKLOAD_SLICE_REPLACED
from tests.controller.test_decisions import recorded
from tests.controller.test_metrics import value, world


def test_a_replaced_slice_records_upstreams_event() -> None:
    event = ev.Event(ev.FINISHED, "ns/w", "cq", reason=WORKLOAD_SLICE_REPLACED, by="ns/w2", message="replaced")
    assert recorded(event) == [("WorkloadSliceReplaced", "replaced", "Normal")]


def test_a_replaced_slice_is_counted_in_its_cluster_queue() -> None:
    ctl, metrics = world()
    assert value(metrics, "kueue_replaced_workload_slices_total", cluster_queue="cq") is None
    ctl.engine.finish_workload("ns/a", 0, reason=WORKLOAD_SLICE_REPLACED, by="ns/a2")
    metrics.on_event(ev.Event(ev.FINISHED, "ns/a", "cq", reason=WORKLOAD_SLICE_REPLACED, by="ns/a2"), ctl)
    assert value(metrics, "kueue_replaced_workload_slices_total", cluster_queue="cq") == 1.0
    ctl.engine.finish_workload("ns/b", 0)  # a job that completes is no replaced slice
    metrics.on_event(ev.Event(ev.FINISHED, "ns/b", "cq"), ctl)
    assert value(metrics, "kueue_replaced_workload_slices_total", cluster_queue="cq") == 1.0
