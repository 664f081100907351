"""A workload that comes in holding quota (``status.admission``): admitted, or, when its status says
its admission checks are not all Ready, only QuotaReserved (as after a controller restart)."""

from __future__ import annotations

from pykueue.engine import model as m
from pykueue.engine.engine import Engine
from pykueue.engine.workload import State

ADMISSION = m.Admission("cq", (m.PodSetAssignment("main", 2, {"cpu": "f"}),))


def engine() -> Engine:
    e = Engine()
    e.apply_resource_flavor(m.ResourceFlavor("f"))
    e.apply_admission_check(m.AdmissionCheck("prov"))
    e.apply_cluster_queue(m.ClusterQueue(
        name="cq", namespace_selector=m.LabelSelector(), admission_checks=(m.AdmissionCheckRule("prov"),),
        resource_groups=(m.ResourceGroup(("cpu",), (m.FlavorQuotas("f", {"cpu": m.ResourceQuota(4000)}),)),),
    ))
    e.apply_local_queue(m.LocalQueue("ns", "q", "cq"))
    return e


def workload(**kw: object) -> m.Workload:
    return m.Workload("ns", "w", "q", (m.PodSet("main", 2, {"cpu": 1000}),), admission=ADMISSION, **kw)  # type: ignore[arg-type]


def test_a_reservation_whose_checks_are_pending_stays_quota_reserved_until_they_are_ready() -> None:
    e = engine()
    info = e.add_workload(workload(admitted=False, check_states={"prov": "Pending"}))
    assert info.state is State.QUOTA_RESERVED and info.admitted_us is None
    assert e.cqs["cq"].node.usage == {("f", "cpu"): 2000}  # its quota is in use all the same
    e.set_check_state("ns/w", "prov", "Ready", 5)
    assert info.state is State.ADMITTED and info.admitted_us == 5


def test_an_admitted_status_or_one_whose_checks_are_all_ready_is_admitted() -> None:
    for kw in ({}, {"admitted": False, "check_states": {"prov": "Ready"}}):
        e = engine()
        info = e.add_workload(workload(**kw))
        assert info.state is State.ADMITTED


def test_the_api_layer_reads_admitted_and_check_states_from_the_status() -> None:
    from pykueue.api.loader import load_documents

    doc = {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": "w", "namespace": "ns"},
        "spec": {"queueName": "q", "podSets": [{"name": "main", "count": 2, "template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "x",
                                                       "resources": {"requests": {"cpu": "1"}}}]}}}]},
        "status": {
            "admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "main", "count": 2,
                                                                     "flavors": {"cpu": "f"}}]},
            "conditions": [
                {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "",
                 "lastTransitionTime": "2026-01-01T00:00:00Z"},
                {"type": "Admitted", "status": "False", "reason": "UnsatisfiedChecks", "message": "",
                 "lastTransitionTime": "2026-01-01T00:00:00Z"},
            ],
            "admissionChecks": [{"name": "prov", "state": "Pending", "message": "",
                                 "lastTransitionTime": "2026-01-01T00:00:00Z"}],
        },
    }
    inputs, problems = load_documents([doc], "test")
    assert not problems, problems
    [sub] = inputs.workloads
    assert sub.workload.admitted is False
    assert sub.workload.check_states == {"prov": "Pending"}
