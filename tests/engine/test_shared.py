"""Equal immutable values that the engine keeps per workload are stored once (``Shared``)."""

from __future__ import annotations

from pykueue.engine import model as m
from pykueue.engine.engine import Engine
from pykueue.engine.workload import Shared


def _engine(workloads: int) -> Engine:
    e = Engine()
    e.apply_resource_flavor(m.ResourceFlavor("f"))
    e.apply_cluster_queue(m.ClusterQueue(
        name="cq", namespace_selector=m.LabelSelector(),
        resource_groups=(m.ResourceGroup(("cpu",), (m.FlavorQuotas("f", {"cpu": m.ResourceQuota(10_000)}),)),)))
    e.apply_local_queue(m.LocalQueue("ns", "q", "cq"))
    for i in range(workloads):
        e.add_workload(m.Workload("ns", f"w{i}", "q", (m.PodSet("main", 1, {"cpu": 1000}),)))
    return e


def test_equal_hashes_keys_and_admissions_are_one_object() -> None:
    e = _engine(3)
    e.schedule(0)
    a, b, c = (e.workloads[f"ns/w{i}"] for i in range(3))
    assert a.hash == b.hash and a.hash is b.hash is c.hash
    assert a.lq_key == "ns/q" and a.lq_key is b.lq_key
    assert a.admission is not None and a.admission == b.admission and a.admission is b.admission
    assert a.admission.pod_set_assignments[0].flavors == {"cpu": "f"}


def test_a_full_table_starts_again_instead_of_growing() -> None:
    shared = Shared(limit=2)
    x, y = ("a", int("1")), ("a", int("1"))  # equal, two objects (a literal would be one constant)
    assert shared(x) is x and shared(y) is x  # equal: the first one
    shared(("b", 2))
    z = ("c", 3)
    assert shared(z) is z  # past the limit: emptied, then stored
    again = ("a", int("1"))
    assert shared(again) is again  # forgotten, so a new equal value is stored again
    assert shared.by_key("k", lambda: [1]) == [1] and shared.by_key("k", lambda: [2]) == [1]
