"""One record per Workload object: a successor under the same name starts with nothing remembered, the
Workload reconciler takes it as the old object's delete and its own add, and an invalid Workload's
condition goes out through the status writer like any other status."""

from __future__ import annotations

import asyncio

from pykueue.controller.core.workload_records import WorkloadRecords
from pykueue.controller.core.workload_status import Eviction
from pykueue.engine.workload import State
from tests.controller.controllers import controller_with, modified, quota_reserved, workload
from tests.controller.fakes import stop, until


def test_a_different_uid_under_a_known_key_starts_a_fresh_record() -> None:
    records = WorkloadRecords()
    first, replaced = records.observe("ns/a", "u1")
    first.invalid, first.eviction, first.failures = "bad", Eviction("Preempted", "by b"), 3
    again, replaced_again = records.observe("ns/a", "u1")
    assert again is first and not replaced and not replaced_again
    successor, replaced = records.observe("ns/a", "u2")
    assert replaced and successor is not first
    assert (successor.uid, successor.invalid, successor.eviction, successor.failures) == ("u2", None, None, 0)


def test_a_record_made_before_its_object_was_seen_takes_the_uid_it_first_sees() -> None:
    records = WorkloadRecords()
    early = records.at("ns/a")  # an engine event before the informer's handler ran
    rec, replaced = records.observe("ns/a", "u1")
    assert rec is early and rec.uid == "u1" and not replaced


def test_a_workload_recreated_under_its_name_while_no_delete_was_heard_is_a_new_workload() -> None:
    """`a` (3 cpu) is admitted in the 4 cpu queue; the cache then shows another object under the same
    name (uid changed, 2 cpu, no status): its predecessor's admission is not inherited: the engine
    drops the old one (its 3 cpu released) and queues the new one, which the next pass admits."""
    ctl, kube = controller_with(workload("a", "3"))
    ctl.run_cycle()
    assert ctl.engine.usage_of("cq") == {("default", "cpu"): 3000}
    asyncio.run(ctl.status_writer.write("ns/a"))
    assert ctl.records.get("ns/a").written is not None
    successor = workload("a", "2")
    successor["metadata"]["uid"] = "uid-a-2"
    modified(ctl, successor)
    rec = ctl.records.get("ns/a")
    assert rec.uid == "uid-a-2" and rec.written is None
    assert ctl.engine.state_of("ns/a") is State.PENDING and ctl.engine.usage_of("cq") == {}
    ctl.run_cycle()
    assert ctl.engine.usage_of("cq") == {("default", "cpu"): 2000}


def test_an_invalid_workload_is_told_through_the_status_writer_once() -> None:
    """A Workload with count -1 and no quota: not queued; the status writer applies QuotaReserved=False,
    Misconfigured, naming the field; marking it again sends nothing more."""
    bad = workload("bad", "1")
    bad["spec"]["podSets"][0]["count"] = -1
    ctl, kube = controller_with(bad)
    assert not ctl.engine.has_workload("ns/bad") and "ns/bad" in ctl.status_writer.dirty

    writer = ctl.status_writer

    async def scenario() -> None:
        task = asyncio.create_task(writer.run())
        await until(lambda: bool(kube.applied) and not writer.dirty and not writer.messages)
        writer.mark("ns/bad")
        await until(lambda: not writer.dirty and not writer.messages)  # the second mark was handled
        await stop(task)

    asyncio.run(scenario())
    assert len(kube.applied) == 1
    cond = quota_reserved(kube.applied[0])
    # Misconfigured, as upstream words it without its UnadmittedWorkloadsObservability gate: Inadmissible
    assert (cond["status"], cond["reason"]) == ("False", "Inadmissible")
    assert cond["message"].startswith("The workload is invalid: spec.podSets[0].count")
