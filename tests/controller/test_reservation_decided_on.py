"""A reservation is written conditional on the copy the engine decided on (issue 51 item 2): the
Workload's pod sets grew (an elastic Job's parallelism raised, 1 -> 3) after the engine reserved quota
for the old spec and before the write went out. The apply carries the decided copy's resourceVersion
("1"), not the cached one ("2"), so the API server refuses it (409); the writer never sends that decision
again: the engine takes it back, queues the Workload as the API has it now, and the next pass reserves
for 3 pods, written conditional on copy "2". Before: the reservation for 1 pod was sent with the cached
resourceVersion and landed on the spec of 3 (3 ran, 1 counted), and a 409 re-sent the same decision."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable

from pykueue.controller.core import views
from pykueue.engine.workload import State
from pykueue.kube.client import ApiError
from tests.controller.controllers import controller_with, modified, workload
from tests.controller.fakes import FakeKube, stop, until


def _refused_then_written(ctl, after_refusal: Callable[[], bool]) -> FakeKube:
    """The status writer's first write of ``ns/a`` refused with 409; ``after_refusal`` must hold then;
    a scheduling pass decides again and that write lands."""
    kube = FakeKube()
    ctl.status_writer.kube = kube  # type: ignore[assignment]
    kube.failures = [ApiError(409, {"reason": "Conflict"}, "PATCH", "/a")]

    async def scenario() -> None:
        task = asyncio.create_task(ctl.status_writer.run())
        await until(lambda: len(kube.calls) == 1 and not ctl.status_writer.dirty)
        assert after_refusal()
        ctl.run_cycle()
        await until(lambda: bool(kube.applied))
        await stop(task)

    asyncio.run(scenario())
    return kube


def test_a_reservation_refused_for_a_changed_copy_is_undone_and_made_again_for_the_new_spec() -> None:
    ctl, _ = controller_with(workload("a", "1"))
    ctl.run_cycle()
    assert views.holds_quota(ctl.engine, "ns/a")
    grown = copy.deepcopy(ctl.informers["workloads"].get("ns/a"))
    grown["metadata"].update(resourceVersion="2", generation=2)
    grown["spec"]["podSets"][0]["count"] = 3
    modified(ctl, grown)  # seen before the reservation's write went out
    assert views.holds_quota(ctl.engine, "ns/a")  # pod sets of a workload holding quota are not taken
    kube = _refused_then_written(ctl, lambda: ctl.engine.state_of("ns/a") is State.PENDING)  # taken back
    assert kube.calls == ["a", "a"]  # the refused write, then the new decision's; never a re-send
    (written,) = kube.applied
    assert written["metadata"]["resourceVersion"] == "2"
    (assignment,) = written["status"]["admission"]["podSetAssignments"]
    assert assignment["count"] == 3 and assignment["resourceUsage"] == {"cpu": "3"}


def _reasons(ctl) -> list[str]:
    return [e["reason"] for e in list(ctl.recorder.queue._queue)]  # type: ignore[attr-defined]


def _reserved_total(ctl) -> float:
    return ctl.metrics.registry.get_sample_value(
        "kueue_quota_reserved_workloads_total",
        {"cluster_queue": "cq", "priority_class": "", "replica_role": "standalone"}) or 0.0


def test_a_refused_reservation_is_never_announced_and_the_one_that_lands_is_announced_once() -> None:
    """Upstream records QuotaReserved and Admitted (the Events and the counters) after its apply
    succeeded: a reservation the API server refused (409) and made again is one QuotaReserved, one
    Admitted, one count. Found live: a Job requeued on a short PodsReady clock showed five Admitted
    Events for four admissions (its first decision was made on a copy its eviction's write had replaced).
    Before: the Event and the counter went out at the decision, so the refused one counted too."""
    ctl, _ = controller_with(workload("a", "1"))
    ctl.run_cycle()
    assert _reasons(ctl) == [] and _reserved_total(ctl) == 0.0  # decided, not yet written
    moved = copy.deepcopy(ctl.informers["workloads"].get("ns/a"))
    moved["metadata"]["resourceVersion"] = "2"
    modified(ctl, moved)
    _refused_then_written(ctl, lambda: _reasons(ctl) == [] and _reserved_total(ctl) == 0.0)  # nothing announced
    assert _reasons(ctl) == ["QuotaReserved", "Admitted"]
    assert _reserved_total(ctl) == 1.0
