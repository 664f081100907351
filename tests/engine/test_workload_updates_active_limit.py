"""Issue 37 item 2, the two spec fields no other test changes on an existing Workload: ``active`` and
``maximumExecutionTimeSeconds``, read on every update as upstream's workload controller reads them.
Expected outcomes worked out by hand."""

from __future__ import annotations

from dataclasses import replace

from pykueue.engine import events as ev
from pykueue.engine import model as m
from pykueue.engine.engine import Engine
from pykueue.engine.workload import State

US = m.US


def engine() -> Engine:
    e = Engine(jobs_stop_at_once=False)
    e.apply_resource_flavor(m.ResourceFlavor("f"))
    e.apply_cluster_queue(m.ClusterQueue(
        name="cq", namespace_selector=m.LabelSelector(),
        resource_groups=(m.ResourceGroup(("cpu",), (m.FlavorQuotas("f", {"cpu": m.ResourceQuota(2000)}),)),)))
    e.apply_local_queue(m.LocalQueue("ns", "q", "cq"))
    return e


WL = m.Workload("ns", "w", "q", (m.PodSet("main", 1, {"cpu": 1000}),))


def test_a_limit_set_on_a_pending_workload_counts_from_its_admission() -> None:
    """No limit when made, waiting on a missing LocalQueue; at 1 s moved to `q` with a 30 s limit;
    admitted at 2 s: deactivated at 32 s (2 + 30)."""
    e = engine()
    e.add_workload(replace(WL, queue_name="missing"))  # no such LocalQueue: it waits
    e.schedule(0)
    assert e.update_workload(replace(WL, max_execution_seconds=30), 1 * US)
    assert [x.type for x in e.schedule(2 * US) if x.type == ev.ADMITTED] == [ev.ADMITTED]
    assert e.next_wakeup() == 32 * US
    events = e.schedule(32 * US)
    assert (ev.DEACTIVATED, ev.CAUSE_MAX_EXECUTION_TIME) in [(x.type, x.reason) for x in events]


def test_a_pending_workload_set_inactive_leaves_the_queue_and_set_active_again_is_admitted() -> None:
    """``spec.active`` reaches the engine through ``set_active`` (the Workload reconciler compares it on
    every update): false while pending (1 s) makes it Inactive, never admitted though it now names `q`;
    true again (3 s) queues it and it is admitted."""
    e = engine()
    e.add_workload(replace(WL, queue_name="missing"))
    e.schedule(0)
    e.set_active("ns/w", False, 1 * US)
    assert e.state_of("ns/w") is State.INACTIVE
    assert e.update_workload(WL, 2 * US)
    assert [x for x in e.schedule(2 * US) if x.type == ev.ADMITTED] == []
    e.set_active("ns/w", True, 3 * US)
    assert "ns/w" in [x.workload for x in e.schedule(3 * US) if x.type == ev.ADMITTED]
