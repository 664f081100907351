"""Issue 21's invariant as a property: whatever happens to the ClusterQueue objects (deleted,
re-created, made invalid and valid again) and however often the controller restarts (the engine
rebuilt from what the API would say: the queues as they are now, the workloads with the admissions
their status records), no ClusterQueue or cohort ever holds more than its quota allows, and a queue
that is not valid admits nothing."""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pykueue.engine import model as m
from pykueue.engine.engine import Engine
from pykueue.engine.model import US
from pykueue.engine.workload import State
from tests.engine.engine_worlds import FLAVORS, World, check_limits, worlds

OPS = ("delete", "recreate", "invalidate", "restart", "finish", "arrive")


@dataclasses.dataclass
class Api:
    """What the API server holds: each queue valid, invalid or gone; each workload's recorded admission."""

    world: World
    queues: dict[str, str]  # name -> "valid" | "invalid" | "gone"
    admissions: dict[str, m.Admission]  # workload key -> status.admission while it holds quota
    finished: set[str]


def engine_from(api: Api, arrived: list[m.Workload]) -> Engine:
    """A restarted controller: queue objects first, then every Workload with its recorded admission."""
    e = Engine(m.Config(fair_sharing=m.FairSharing(enable=api.world.fair)))
    with e.bulk():
        for f in FLAVORS:
            e.apply_resource_flavor(m.ResourceFlavor(f))
        for c in api.world.cohorts:
            e.apply_cohort(c)
        for cq in api.world.cqs:
            if api.queues[cq.name] == "valid":
                e.apply_cluster_queue(cq)
            elif api.queues[cq.name] == "invalid":
                e.invalidate_cluster_queue(cq.name, cq.cohort, "invalid")
        for i, _ in enumerate(api.world.cqs):
            e.apply_local_queue(m.LocalQueue("ns", f"q{i}", f"cq{i}"))
    for w in arrived:
        if w.key in api.finished:
            continue
        e.add_workload(dataclasses.replace(w, admission=api.admissions.get(w.key)))
    return e


def record(e: Engine, api: Api) -> None:
    """The status writer: the API's admissions follow the engine's."""
    api.admissions = {k: i.admission for k, i in e.workloads.items() if i.has_quota and i.admission is not None}


def holders(e: Engine, cq: str) -> set[str]:
    return {k for k, i in e.workloads.items() if i.has_quota and i.cluster_queue == cq}


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(worlds(nested=True, max_workloads=20), st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 4)),
                                                       min_size=5, max_size=25))
def test_no_queue_over_quota_through_deletes_recreates_invalid_specs_and_restarts(
        world: World, ops: list[tuple[str, int]]) -> None:
    api = Api(world, {cq.name: "valid" for cq in world.cqs}, {}, set())
    pending = sorted(world.workloads, key=lambda w: (w.creation_time, w.name))
    arrived: list[m.Workload] = []
    e = engine_from(api, arrived)
    for t, (op, n) in enumerate(ops, start=1):
        now = t * US
        cq = world.cqs[n % len(world.cqs)]
        before = {c.name: holders(e, c.name) for c in world.cqs}
        if op == "delete":
            api.queues[cq.name] = "gone"
            e.delete_cluster_queue(cq.name)
        elif op == "recreate":
            api.queues[cq.name] = "valid"
            e.apply_cluster_queue(cq, now)
        elif op == "invalidate" and api.queues[cq.name] != "gone":
            api.queues[cq.name] = "invalid"
            e.invalidate_cluster_queue(cq.name, cq.cohort, "invalid")
        elif op == "restart":
            e = engine_from(api, arrived)
        elif op == "finish":
            holding = sorted(k for k, i in e.workloads.items() if i.has_quota)
            if holding:
                key = holding[n % len(holding)]
                e.finish_workload(key, now)
                api.finished.add(key)
        elif op == "arrive":
            for w in pending[: n + 1]:
                e.add_workload(w, now)
                arrived.append(w)
            pending = pending[n + 1:]
        e.schedule(now)
        record(e, api)
        check_limits(e, world)
        for c in world.cqs:  # a queue that is not valid gains no workload
            if api.queues[c.name] != "valid":
                assert holders(e, c.name) <= before[c.name], (c.name, api.queues[c.name])
        assert all(i.state is not State.QUOTA_RESERVED or i.check_states for i in e.workloads.values())
