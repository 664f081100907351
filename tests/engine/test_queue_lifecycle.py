"""Issue 21: a ClusterQueue never holds more than its quota, whatever happens to the object. Admitted
workloads count against the queue their admission names while it is valid, invalid, terminating,
missing or re-created; a queue in any of those states but valid admits nothing."""

from __future__ import annotations

import dataclasses

from pykueue.engine import model as m
from pykueue.engine.engine import Engine
from pykueue.engine.workload import State

US = m.US


def cq(name: str = "cq", cpu: int = 2, cohort: str | None = None) -> m.ClusterQueue:
    return m.ClusterQueue(
        name=name, cohort=cohort, namespace_selector=m.LabelSelector(),
        resource_groups=(m.ResourceGroup(("cpu",), (m.FlavorQuotas("f", {"cpu": m.ResourceQuota(cpu * 1000)}),)),),
    )


def engine(*queues: m.ClusterQueue) -> Engine:
    e = Engine()
    e.apply_resource_flavor(m.ResourceFlavor("f"))
    for q in queues or (cq(),):
        e.apply_cluster_queue(q)
        e.apply_local_queue(m.LocalQueue("ns", f"q-{q.name}", q.name))
    return e


def wl(name: str, queue: str = "cq", cpu: int = 1, admitted_in: str | None = None) -> m.Workload:
    admission = None
    if admitted_in is not None:
        admission = m.Admission(admitted_in, (m.PodSetAssignment("main", 1, {"cpu": "f"}),))
    return m.Workload("ns", name, f"q-{queue}", (m.PodSet("main", 1, {"cpu": cpu * 1000}),), admission=admission)


def admitted(e: Engine) -> list[str]:
    return sorted(k for k in e.workload_keys() if e.state_of(k) in (State.ADMITTED, State.QUOTA_RESERVED))


def test_deleted_queue_with_admitted_workloads_stays_terminating_and_recreation_counts_them() -> None:
    # The issue's reproduction: 2 cpu, two 1-cpu workloads admitted, a third pending; delete, re-create.
    e = engine()
    for n in ("a", "b", "c"):
        e.add_workload(wl(n))
    e.schedule(0)
    assert admitted(e) == ["ns/a", "ns/b"]
    e.delete_cluster_queue("cq")
    assert e.cluster_queue_in_use("cq")
    status = e.cluster_queue_status("cq")
    assert status is not None and status.inactive_reason == "Terminating"
    assert status.inactive_message == "clusterQueue is terminating"
    assert e.workload_status("ns/c").message == "ClusterQueue cq is inactive: clusterQueue is terminating"
    e.schedule(1 * US)
    assert admitted(e) == ["ns/a", "ns/b"]
    e.apply_cluster_queue(cq())  # re-created before they finished (finalizer forced away)
    e.schedule(2 * US)
    assert admitted(e) == ["ns/a", "ns/b"]  # c still does not fit: a and b count against the new queue
    e.finish_workload("ns/a", 3 * US)
    e.schedule(3 * US)
    assert admitted(e) == ["ns/b", "ns/c"]


def test_terminating_queue_goes_when_its_last_workload_releases() -> None:
    e = engine()
    e.add_workload(wl("a"))
    e.schedule(0)
    e.delete_cluster_queue("cq")
    assert "cq" in e.cluster_queue_names()
    e.finish_workload("ns/a", 5 * US)
    e.schedule(5 * US)
    assert "cq" not in e.cluster_queue_names() and not e.cluster_queue_in_use("cq")


def test_deleting_an_empty_queue_removes_it_at_once() -> None:
    e = engine()
    e.delete_cluster_queue("cq")
    assert e.cluster_queue_names() == []


def test_invalid_spec_admits_nothing_and_keeps_counting_what_it_admitted() -> None:
    # The issue's second reproduction, in the engine: 4 cpu holding 3, quota patched to -1, then back.
    e = engine(cq(cpu=4))
    for n in ("a", "b", "c"):
        e.add_workload(wl(n))
    e.schedule(0)
    e.invalidate_cluster_queue("cq", None, "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota: must be "
                                           "greater than or equal to 0")
    for n in ("d", "e", "f", "g"):
        e.add_workload(wl(n))
    e.schedule(1 * US)
    assert admitted(e) == ["ns/a", "ns/b", "ns/c"]
    status = e.cluster_queue_status("cq")
    assert status is not None and status.inactive_reason == "InvalidSpec"
    assert status.usage == {("f", "cpu"): 3000}
    e.apply_cluster_queue(cq(cpu=4))
    e.schedule(2 * US)
    assert admitted(e) == ["ns/a", "ns/b", "ns/c", "ns/d"]  # 4 cpu, never 7


def test_restart_restores_admissions_into_a_missing_or_invalid_queue_and_never_over_admits() -> None:
    # After a restart the engine is rebuilt from the API: the queue is invalid (or not there yet).
    for invalid in (True, False):
        e = Engine()
        e.apply_resource_flavor(m.ResourceFlavor("f"))
        e.apply_local_queue(m.LocalQueue("ns", "q-cq", "cq"))
        if invalid:
            e.invalidate_cluster_queue("cq", None, "bad")
        for n in ("a", "b", "c"):
            e.add_workload(wl(n, admitted_in="cq"))
        status = e.cluster_queue_status("cq")
        assert status is not None and status.usage == {("f", "cpu"): 3000}
        assert status.inactive_reason == ("InvalidSpec" if invalid else "Terminating")
        e.apply_cluster_queue(cq(cpu=4))
        for n in ("d", "e", "f", "g"):
            e.add_workload(wl(n))
        e.schedule(0)
        assert admitted(e) == ["ns/a", "ns/b", "ns/c", "ns/d"], invalid


def test_an_invalid_queue_keeps_its_cohort_so_neighbours_cannot_borrow_what_its_workloads_hold() -> None:
    e = engine(cq("a", cpu=4, cohort="co"), cq("b", cpu=0, cohort="co"), cq("c", cpu=4, cohort="co"))
    e.add_workload(wl("a1", queue="a", cpu=6))  # borrows 2 of c's 4
    e.schedule(0)
    e.invalidate_cluster_queue("a", "co", "bad")
    e.add_workload(wl("b1", queue="b", cpu=3))
    e.add_workload(wl("b2", queue="b", cpu=2))
    e.schedule(1 * US)
    # The invalid queue has no quota of its own now: the cohort has c's 4 cpu, and a1 holds 6 of it.
    assert e.state_of("ns/b1") is State.PENDING and e.state_of("ns/b2") is State.PENDING
    e.finish_workload("ns/a1", 2 * US)
    e.schedule(2 * US)
    assert admitted(e) == ["ns/b1"]  # 3 of c's 4; b2 (2 more) would be 5


def test_an_invalid_local_queue_exists_admits_nothing_and_says_why() -> None:
    e = engine()
    e.apply_local_queue(m.LocalQueue("ns", "q-cq", "cq", invalid="spec.stopPolicy: must be one of None, Hold"))
    e.add_workload(wl("a"))
    e.schedule(0)
    assert admitted(e) == []
    status = e.workload_status("ns/a")
    assert (status.reason, status.message) == (
        "Misconfigured", "LocalQueue q-cq is invalid: spec.stopPolicy: must be one of None, Hold")
    e.apply_local_queue(m.LocalQueue("ns", "q-cq", "cq"))  # fixed
    e.schedule(1 * US)
    assert admitted(e) == ["ns/a"]


def test_a_reservation_waiting_for_checks_is_undone_when_its_queue_goes() -> None:
    """Upstream's workload controller: quota reserved, checks not Ready, and the LocalQueue (or the
    ClusterQueue) is terminating or missing: the reservation is undone; an admitted workload runs on."""
    for kind in ("LocalQueue", "ClusterQueue"):
        e = Engine()
        e.apply_resource_flavor(m.ResourceFlavor("f"))
        e.apply_admission_check(m.AdmissionCheck("prov"))
        e.apply_cluster_queue(dataclasses.replace(cq(cpu=4), admission_checks=(m.AdmissionCheckRule("prov"),)))
        e.apply_local_queue(m.LocalQueue("ns", "q-cq", "cq"))
        e.add_workload(wl("waiting"))
        e.add_workload(wl("running", admitted_in="cq"))  # restored admitted: its checks were Ready
        e.schedule(0)
        assert e.state_of("ns/waiting") is State.QUOTA_RESERVED
        if kind == "LocalQueue":
            e.delete_local_queue("ns/q-cq")
        else:
            e.delete_cluster_queue("cq")
        status = e.workload_status("ns/waiting")
        assert status.state is State.PENDING and status.usage == {}
        # what it is told then is why its queue cannot take it now, as its queue blocker words it
        assert status.message == ("LocalQueue q-cq doesn't exist" if kind == "LocalQueue"
                                  else "ClusterQueue cq is inactive: clusterQueue is terminating")
        assert e.state_of("ns/running") is State.ADMITTED


def test_a_local_queues_counts_row_goes_with_its_last_workload() -> None:
    """Counts are kept per LocalQueue as workloads move; a queue whose workloads are all gone keeps no
    row (a queue named by workloads alone, never applied, would otherwise stay counted forever)."""
    e = engine()
    e.add_workload(wl("a"))
    e.add_workload(m.Workload("ns", "b", "never-applied", (m.PodSet("main", 1, {"cpu": 1000}),)))
    e.schedule(0)
    assert e.local_queue_statuses()["ns/q-cq"].admitted == 1
    e.delete_workload("ns/a")
    e.delete_workload("ns/b")
    assert e.local_queue_statuses()["ns/q-cq"].admitted == 0
    assert e._lq_counts == {}
