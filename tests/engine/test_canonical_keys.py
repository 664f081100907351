"""Quota keys are one tuple per ``(flavor, resource)`` pair (``quota.canonical_fr``): the quotas of every
queue and cohort, the usage charged up the tree and a nomination's usage all hold the same objects, so a
dict lookup finds its key by identity. Equal keys built elsewhere still find the same entries."""

from __future__ import annotations

from pykueue.engine import model as m
from pykueue.engine.engine import Engine
from pykueue.engine.quota import canonical_fr


def _world() -> Engine:
    e = Engine()
    with e.bulk():
        e.apply_resource_flavor(m.ResourceFlavor("default"))
        for i in range(2):
            e.apply_cluster_queue(m.ClusterQueue(
                name=f"cq{i}", cohort="all", namespace_selector=m.LabelSelector(),
                resource_groups=(m.ResourceGroup(("cpu", "memory"), (m.FlavorQuotas("default", {
                    "cpu": m.ResourceQuota(4_000), "memory": m.ResourceQuota(8 << 30)}),)),),
            ))
            e.apply_local_queue(m.LocalQueue("ns", f"q{i}", f"cq{i}"))
    # 6 CPUs in a queue of 4: it borrows 2 from the other, so the cohort holds usage too.
    e.add_workload(m.Workload("ns", "big", "q0", (m.PodSet("main", 3, {"cpu": 2_000, "memory": 1 << 30}),),
                              creation_time=0.0))
    e.schedule(0)
    return e


def test_quota_usage_and_admission_keys_are_the_same_objects() -> None:
    e = _world()
    big = e.workloads["ns/big"]
    assert big.has_quota
    cpu = canonical_fr("default", "cpu")
    assert canonical_fr("default", "cpu") is cpu and cpu == ("default", "cpu")
    cq0, cq1 = e.cqs["cq0"].node, e.cqs["cq1"].node
    cohort = cq0.parent
    assert cohort is not None and cohort is cq1.parent
    held = {
        "cq0 quotas": cq0.quotas, "cq1 quotas": cq1.quotas, "cq0 usage": cq0.usage,
        "cohort quota": cohort.subtree_quota, "cohort usage": cohort.usage, "workload usage": big.usage,
    }
    for where, keys in held.items():
        stored = next(k for k in keys if k == cpu)
        assert stored is cpu, where
    assert e.cqs["cq0"].frs["default"]["memory"] is canonical_fr("default", "memory")
    # Borrowed: 6 CPUs used where 4 are nominal; the cohort holds what exceeds cq0's local quota.
    assert cq0.usage[("default", "cpu")] == 6_000
    assert cohort.usage[cpu] == 6_000 and cohort.subtree_quota[cpu] == 8_000
