"""Random engine-level worlds (cohorts, possibly nested, queues with borrowing and lending limits and
preemption rules, workloads) and the quota-limit check recomputed from the specs alone, for the
engine's property tests. (tests/engine/sim_worlds.py makes worlds one level up, as manifests for
`pykueue simulate`.)"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

from pykueue.engine import model as m
from pykueue.engine.engine import Engine
from pykueue.engine.model import US
from pykueue.engine.workload import State

FLAVORS = ("f1", "f2")
POLICIES = (m.NEVER, m.LOWER_PRIORITY, m.LOWER_OR_NEWER_EQUAL_PRIORITY)
RECLAIM = (m.NEVER, m.LOWER_PRIORITY, m.ANY)


@dataclass
class World:
    cohorts: list[m.Cohort]
    cqs: list[m.ClusterQueue]
    workloads: list[m.Workload]
    fair: bool = False
    # the controller's engine (jobs_stop_at_once=False): an evicted workload's job stops one step later,
    # and its usage counts until then (checked with the rest)
    controller: bool = False


@st.composite
def worlds(draw, nested: bool = True, max_workloads: int = 25) -> World:
    n_cohorts = draw(st.integers(1, 3))
    cohorts = []
    for i in range(n_cohorts):
        parent = None
        if nested and i > 0 and draw(st.booleans()):
            parent = f"co{draw(st.integers(0, i - 1))}"
        quotas = ()
        if draw(st.booleans()):
            quotas = (
                m.ResourceGroup(("cpu",), (m.FlavorQuotas("f1", {"cpu": m.ResourceQuota(draw(st.integers(0, 4)) * 1000)}),)),
            )
        cohorts.append(m.Cohort(f"co{i}", parent=parent, resource_groups=quotas))
    cqs = []
    for i in range(draw(st.integers(1, 5))):
        flavors = []
        for f in FLAVORS[: draw(st.integers(1, 2))]:
            nominal = draw(st.integers(0, 8)) * 1000
            bl = draw(st.one_of(st.none(), st.integers(0, 6).map(lambda x: x * 1000)))
            ll = draw(st.one_of(st.none(), st.integers(0, 8).map(lambda x: x * 1000)))
            if ll is not None:
                ll = min(ll, nominal)
            cohort_set = True
            flavors.append((f, nominal, bl, ll, cohort_set))
        cohort = draw(st.one_of(st.none(), st.sampled_from([c.name for c in cohorts])))
        group = m.ResourceGroup(
            ("cpu",),
            tuple(
                m.FlavorQuotas(f, {"cpu": m.ResourceQuota(nom, bl if cohort else None, ll if cohort else None)})
                for f, nom, bl, ll, _ in flavors
            ),
        )
        preemption = m.PreemptionPolicy(
            within_cluster_queue=draw(st.sampled_from(POLICIES)),
            reclaim_within_cohort=draw(st.sampled_from(RECLAIM)),
        )
        cqs.append(
            m.ClusterQueue(
                name=f"cq{i}",
                cohort=cohort,
                resource_groups=(group,),
                namespace_selector=m.LabelSelector(),
                preemption=preemption,
                queueing_strategy=draw(st.sampled_from((m.BEST_EFFORT_FIFO, m.STRICT_FIFO))),
            )
        )
    workloads = []
    for i in range(draw(st.integers(1, max_workloads))):
        q = draw(st.integers(0, len(cqs) - 1))
        workloads.append(
            m.Workload(
                namespace="ns",
                name=f"w{i:03d}",
                queue_name=f"q{q}",
                pod_sets=(m.PodSet("main", draw(st.integers(1, 4)), {"cpu": draw(st.integers(1, 3)) * 500}),),
                priority=draw(st.sampled_from((0, 10, 100))),
                creation_time=float(draw(st.integers(0, 5))),
            )
        )
    return World(cohorts, cqs, workloads, fair=draw(st.booleans()), controller=draw(st.booleans()))


def build(world: World) -> Engine:
    e = Engine(m.Config(fair_sharing=m.FairSharing(enable=world.fair)), jobs_stop_at_once=not world.controller)
    for f in FLAVORS:
        e.apply_resource_flavor(m.ResourceFlavor(f))
    for c in world.cohorts:
        e.apply_cohort(c)
    for cq in world.cqs:
        e.apply_cluster_queue(cq)
    for i, _ in enumerate(world.cqs):
        e.apply_local_queue(m.LocalQueue("ns", f"q{i}", f"cq{i}"))
    return e


def play(world: World) -> tuple[Engine, list]:
    """Arrivals at their creation times, then finish the oldest admitted one at each later step.

    No EngineError is tolerated here: genuine preemption loops need configurations these small worlds
    do not produce (1,500 examples showed none), so a loop here is a bug, as two once were."""
    e = build(world)
    log: list = []
    _play(e, world, log)
    return e, log


def _play(e: Engine, world: World, log: list) -> None:
    by_time: dict[float, list[m.Workload]] = {}
    for w in world.workloads:
        by_time.setdefault(w.creation_time, []).append(w)
    t = 0.0
    for t in sorted(by_time):
        _stop_jobs(e, t, log)
        for w in by_time[t]:
            e.add_workload(w, round(t * US))
        log.extend((t, ev) for ev in e.schedule(round(t * US)))
        check_limits(e, world)
    for _ in range(3):
        t += 1
        _stop_jobs(e, t, log)
        admitted = sorted((i for i in e.workloads.values() if i.has_quota), key=lambda i: i.seq)
        if admitted:
            e.finish_workload(admitted[0].key, round(t * US))
        log.extend((t, ev) for ev in e.schedule(round(t * US)))
        check_limits(e, world)


def _stop_jobs(e: Engine, t: float, log: list) -> None:
    """The controller's driver: the jobs of the workloads evicted at the step before have stopped now."""
    for info in sorted((i for i in e.workloads.values() if i.state is State.STOPPING), key=lambda i: i.seq):
        if e.job_stopped(info.key, round(t * US)):
            log.append((t, ("stopped", info.key)))


def _usage(e: Engine, cq: str, fr: tuple[str, str]) -> int:
    return sum(i.usage.get(fr, 0) for i in e.workloads.values() if i.holds_usage and i.cluster_queue == cq)


def check_limits(e: Engine, world: World) -> None:
    for f in FLAVORS:
        _check_flavor(e, world, f)
    _check_pending_requests(e)


def _check_pending_requests(e: Engine) -> None:
    """Each ClusterQueue's pending requests (kept as workloads come and go, for the
    cluster_queue_resource_pending gauge) are what its pending members request now, counted afresh."""
    for name, cq in e.cqs.items():
        wanted: dict[str, int] = {}
        for info in e.workloads.values():
            if info.key in cq.pending:
                for ps in info.spec.pod_sets:
                    for resource, amount in ps.requests.items():
                        wanted[resource] = wanted.get(resource, 0) + amount * ps.count
        kept = {r: v for r, v in cq.pending.requests.items() if v}
        assert kept == {r: v for r, v in wanted.items() if v}, (name, kept, wanted)


def _check_flavor(e: Engine, world: World, f: str) -> None:
    specs = {c.name: c for c in world.cqs}
    cohort_specs = {c.name: c for c in world.cohorts}
    fr = (f, "cpu")
    # 1. no cluster queue uses more than nominal + borrowing limit (or nominal without a cohort)
    for cq in world.cqs:
        q = next((fq.resources["cpu"] for fq in cq.resource_groups[0].flavors if fq.name == f), None)
        used = _usage(e, cq.name, fr)
        if q is None:
            assert used == 0
            continue
        if cq.cohort is None:
            assert used <= q.nominal, (cq.name, used, q)
        elif q.borrowing_limit is not None:
            assert used <= q.nominal + q.borrowing_limit, (cq.name, used, q)
    # 2. every cohort tree: what its members use beyond what they keep to themselves never exceeds
    #    what the tree can lend (lending limits respected), computed bottom-up from the specs.
    children: dict[str | None, list] = {}
    for c in world.cohorts:
        parent = c.parent if c.parent in cohort_specs and not _cyclic(c.name, cohort_specs) else None
        children.setdefault(parent, []).append(("cohort", c.name))
    for cq in world.cqs:
        children.setdefault(cq.cohort, []).append(("cq", cq.name))

    def node(kind: str, name: str) -> tuple[int, int, int]:
        """(capacity offered to the parent, usage stored in the parent, own quota)."""
        if kind == "cq":
            spec = specs[name]
            q = next((fq.resources["cpu"] for fq in spec.resource_groups[0].flavors if fq.name == f), m.ResourceQuota())
            quota, lend = q.nominal, q.lending_limit
            used = _usage(e, name, fr)
        else:
            spec_c = cohort_specs[name]
            own = next((fq.resources["cpu"] for g in spec_c.resource_groups for fq in g.flavors if fq.name == f), m.ResourceQuota())
            quota, lend = own.nominal, own.lending_limit
            used = 0
            for k, n in children.get(name, []):
                offered, stored, _ = node(k, n)
                quota += offered
                used += stored
            assert used <= quota or _has_parent(name, cohort_specs), (name, used, quota)
        keep = max(0, quota - lend) if lend is not None else 0
        return quota - keep, max(0, used - keep), quota

    for k, n in children.get(None, []):
        if k == "cohort":
            node(k, n)


def _has_parent(name: str, cohorts: dict[str, m.Cohort]) -> bool:
    parent = cohorts[name].parent
    return parent is not None and parent in cohorts and not _cyclic(name, cohorts)


def _cyclic(name: str, cohorts: dict[str, m.Cohort]) -> bool:
    seen = {name}
    cur = cohorts[name].parent
    while cur is not None and cur in cohorts:
        if cur in seen:
            return True
        seen.add(cur)
        cur = cohorts[cur].parent
    return False
