"""Property-based tests of the engine's invariants over random queues, cohorts and workloads.

The checks recompute limits from the specs alone (not from the engine's quota tree), so a wrong
formula in the engine cannot hide behind the same wrong formula in the test.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pykueue.engine import model as m
from pykueue.engine.model import US
from pykueue.engine.preemption import add_workload_usage, fits, remove_workload_usage
from tests.engine.engine_worlds import World, play, worlds

SETTINGS = settings(max_examples=120, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(worlds())
def test_quota_limits_hold_at_every_step(world: World) -> None:
    play(world)


@SETTINGS
@given(worlds())
def test_same_input_same_output(world: World) -> None:
    _, a = play(world)
    _, b = play(world)
    assert a == b


@settings(max_examples=500, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(worlds(nested=False, max_workloads=15), st.data())
def test_preemption_respects_policy_and_is_minimal(world: World, data: st.DataObject) -> None:
    """For a pending workload, every target set the preemptor proposes only contains workloads its
    policy allows, and each target is needed: giving any single one back leaves the preemptor unable
    to fit."""
    e, _ = play(world)
    q = data.draw(st.integers(0, len(world.cqs) - 1))
    spec = m.Workload(
        namespace="ns",
        name="probe",
        queue_name=f"q{q}",
        pod_sets=(m.PodSet("main", data.draw(st.integers(1, 4)), {"cpu": data.draw(st.integers(1, 4)) * 500}),),
        priority=data.draw(st.sampled_from((0, 10, 100, 1000))),
        creation_time=10.0,
    )
    wl = e.add_workload(spec, 10 * US)
    cq = e.cqs[f"cq{q}"]
    if not cq.active:
        return
    assignment = e.scheduler.assigner(cq, wl).assign()
    frs = assignment.frs_needing_preemption()
    if assignment.mode() != 1 or not frs:
        return
    targets = e.preemptor.targets(cq, wl, assignment.usage, frs)
    policy = cq.spec.preemption
    for t in targets:
        victim = t.workload
        if victim.cluster_queue == cq.name:
            assert policy.within_cluster_queue != m.NEVER
            if policy.within_cluster_queue == m.LOWER_PRIORITY:
                assert victim.priority < wl.priority
            else:
                assert victim.priority < wl.priority or (
                    victim.priority == wl.priority and wl.order_us < victim.order_us
                )
        else:
            assert policy.reclaim_within_cohort != m.NEVER
            if policy.reclaim_within_cohort == m.LOWER_PRIORITY:
                assert victim.priority < wl.priority
            vcq = e.cqs[victim.cluster_queue]
            assert any(vcq.node.is_borrowing(fr) for fr in frs), "victim's queue was not above nominal"
    if not targets:
        return
    for t in targets:
        remove_workload_usage(e.cqs[t.workload.cluster_queue], t.workload)
    try:
        assert fits(assignment.usage, cq.node, True)
        # Judge minimality in the mode the victims were chosen for: when the preemptor fits without
        # borrowing, the no-borrowing attempt may have needed every victim to avoid borrowing.
        allow_borrowing = not fits(assignment.usage, cq.node, False)
        for t in targets:
            add_workload_usage(e.cqs[t.workload.cluster_queue], t.workload)
            still = fits(assignment.usage, cq.node, allow_borrowing)
            remove_workload_usage(e.cqs[t.workload.cluster_queue], t.workload)
            assert not still, f"{t.workload.key} was not needed"
    finally:
        for t in targets:
            add_workload_usage(e.cqs[t.workload.cluster_queue], t.workload)
