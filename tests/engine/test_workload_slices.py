"""Elastic workloads through workload slices (upstream's ElasticJobsViaWorkloadSlices): a scale-up slice is
admitted against quota that counts its old slice's as its own, then the old slice is finished
``WorkloadSliceReplaced``; a scale-up that does not fit waits while the old slice keeps its quota; a
scale-down shrinks the admitted workload in place. Outcomes worked out by hand from a 4-cpu queue."""

from __future__ import annotations

from pykueue.engine import events as ev
from pykueue.engine import model as m
from pykueue.engine.engine import Engine
from pykueue.engine.slices import WORKLOAD_SLICE_REPLACED, scaled_down
from pykueue.engine.workload import State

US = m.US
FR = ("f", "cpu")


def engine(cpu: int = 4, flavors: tuple[str, ...] = ("f",)) -> Engine:
    e = Engine(jobs_stop_at_once=False)
    for f in flavors:
        e.apply_resource_flavor(m.ResourceFlavor(f))
    quotas = tuple(m.FlavorQuotas(f, {"cpu": m.ResourceQuota(cpu * 1000)}) for f in flavors)
    e.apply_cluster_queue(m.ClusterQueue(
        name="cq", namespace_selector=m.LabelSelector(),
        resource_groups=(m.ResourceGroup(("cpu",), quotas),)))
    e.apply_local_queue(m.LocalQueue("ns", "lq", "cq"))
    return e


def job(name: str, pods: int, replaces: str | None = None, created: float = 0.0) -> m.Workload:
    """An elastic job's slice: ``pods`` pods of 1 cpu each."""
    return m.Workload("ns", name, "lq", (m.PodSet("main", pods, {"cpu": 1000}),), creation_time=created,
                      elastic=True, replaces=replaces)


def usage(e: Engine) -> int:
    status = e.cluster_queue_status("cq")
    assert status is not None
    return status.usage.get(FR, 0)


def of(events: list[ev.Event], kind: str) -> list[ev.Event]:
    return [x for x in events if x.type == kind]


def test_a_scale_up_needs_only_the_difference() -> None:
    # 3 of 4 cpu held by the old slice; the new slice asks for 4: alone it would not fit next to the
    # old one (3 + 4 > 4), counted net of it (4 - 3 = 1 more) it does.
    e = engine()
    e.add_workload(job("s1", 3))
    e.schedule(0)
    assert usage(e) == 3000
    e.add_workload(job("s2", 4, replaces="ns/s1", created=1.0))
    events = e.schedule(1 * US)
    finished = of(events, ev.FINISHED)
    assert [(x.workload, x.reason, x.by) for x in finished] == [("ns/s1", WORKLOAD_SLICE_REPLACED, "ns/s2")]
    assert [x.workload for x in of(events, ev.ADMITTED)] == ["ns/s2"]
    # the old slice is finished before the new one is admitted (upstream's order)
    assert events.index(finished[0]) < events.index(of(events, ev.QUOTA_RESERVED)[0])
    assert usage(e) == 4000  # the new slice's 4, not 3 + 4
    assert e.state_of("ns/s1") is State.FINISHED
    assert e.state_of("ns/s2") is State.ADMITTED


def test_a_scale_up_that_does_not_fit_waits_and_the_old_slice_keeps_running() -> None:
    # 3 cpu held by the slice, 1 by another job: the new slice needs 5 - 3 = 2 more, only 0 are free.
    e = engine()
    e.add_workload(job("s1", 3))
    e.add_workload(m.Workload("ns", "other", "lq", (m.PodSet("main", 1, {"cpu": 1000}),), creation_time=0.5))
    e.schedule(0)
    assert usage(e) == 4000
    e.add_workload(job("s2", 5, replaces="ns/s1", created=1.0))
    events = e.schedule(1 * US)
    assert of(events, ev.FINISHED) == [] and of(events, ev.ADMITTED) == []
    assert e.state_of("ns/s1") is State.ADMITTED and e.state_of("ns/s2") is State.PENDING
    assert usage(e) == 4000  # unchanged: the old slice's 3 and the other job's 1
    # the other job ends: 1 cpu free, still 1 short of the 2 more the scale-up needs (5 > 4 in all):
    # it stays pending and the old slice runs on.
    e.finish_workload("ns/other", 2 * US)
    events = e.schedule(2 * US)
    assert of(events, ev.ADMITTED) == []
    assert e.state_of("ns/s1") is State.ADMITTED and usage(e) == 3000


def test_a_scale_up_admitted_once_another_job_frees_the_difference() -> None:
    # old slice 2, another job 2 (4 of 4); the new slice of 3 needs 1 more: admitted when the other ends.
    e = engine()
    e.add_workload(job("s1", 2))
    e.add_workload(m.Workload("ns", "other", "lq", (m.PodSet("main", 2, {"cpu": 1000}),), creation_time=0.5))
    e.schedule(0)
    e.add_workload(job("s2", 3, replaces="ns/s1", created=1.0))
    assert of(e.schedule(1 * US), ev.ADMITTED) == []
    e.finish_workload("ns/other", 2 * US)
    events = e.schedule(2 * US)
    assert [x.workload for x in of(events, ev.ADMITTED)] == ["ns/s2"]
    assert usage(e) == 3000


def test_a_scale_up_keeps_the_old_slices_flavor() -> None:
    # Flavors a then b, 4 cpu each. The old slice holds 3 of a and another job the last 1 of a. A new
    # slice of 4 needs 1 more in a, where none is free; as a fresh workload it would fit in b (4 free),
    # but a scale-up keeps flavor a, so it waits.
    e = engine(flavors=("a", "b"))
    e.add_workload(job("s1", 3))
    e.add_workload(m.Workload("ns", "other", "lq", (m.PodSet("main", 1, {"cpu": 1000}),), creation_time=0.5))
    e.schedule(0)
    e.add_workload(job("s2", 4, replaces="ns/s1", created=1.0))
    assert of(e.schedule(1 * US), ev.ADMITTED) == []
    assert e.state_of("ns/s1") is State.ADMITTED and e.state_of("ns/s2") is State.PENDING
    e.finish_workload("ns/other", 2 * US)  # 1 of a free: now it fits, in a
    admitted = of(e.schedule(2 * US), ev.ADMITTED)
    assert [x.workload for x in admitted] == ["ns/s2"]
    assert admitted[0].admission is not None
    assert admitted[0].admission.pod_set_assignments[0].flavors == {"cpu": "a"}


def test_a_scale_down_shrinks_the_admitted_workload_in_place() -> None:
    # 4 of 4 held; a pending job of 2 waits. Scaling the slice down to 2 frees 2: the job is admitted.
    e = engine()
    e.add_workload(job("s1", 4))
    e.schedule(0)
    e.add_workload(m.Workload("ns", "waiting", "lq", (m.PodSet("main", 2, {"cpu": 1000}),), creation_time=1.0))
    assert of(e.schedule(1 * US), ev.ADMITTED) == []
    assert e.update_workload(job("s1", 2), 2 * US)
    assert e.state_of("ns/s1") is State.ADMITTED  # never evicted
    assert usage(e) == 2000  # the admission stays as written; it charges the 2 pods left
    events = e.schedule(2 * US)
    assert [x.workload for x in of(events, ev.ADMITTED)] == ["ns/waiting"]
    assert usage(e) == 4000  # 2 + 2


def test_a_non_elastic_admitted_workload_keeps_its_size() -> None:
    e = engine()
    fixed = m.Workload("ns", "w", "lq", (m.PodSet("main", 4, {"cpu": 1000}),))
    e.add_workload(fixed)
    e.schedule(0)
    assert not e.update_workload(m.Workload("ns", "w", "lq", (m.PodSet("main", 2, {"cpu": 1000}),)), 1 * US)
    assert usage(e) == 4000


def test_scaled_down_is_upstreams_rule() -> None:
    assert scaled_down([("a", 3), ("b", 2)], [("a", 2), ("b", 2)])
    assert not scaled_down([("a", 3), ("b", 2)], [("a", 2), ("b", 3)])  # one grows: not a scale-down
    assert not scaled_down([("a", 3)], [("a", 3)])
    assert not scaled_down([("a", 3)], [("b", 1)])
