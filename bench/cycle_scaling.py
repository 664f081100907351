"""Does the cost of admitting a workload grow with the backlog? (issue 5)

One cohort of 10 ClusterQueues (10 cpu each) holds N pending workloads (N = 1,000 / 10,000 /
100,000) of mixed sizes and priorities, so each queue has many equivalence classes. The queues are
full; then, ADMISSIONS times, one running workload finishes and the engine schedules. Only the
``schedule`` calls are timed, and the backlog stays about N throughout, so the time per admission
should stay flat as N grows by 100x.

    python bench/cycle_scaling.py [--admissions 500] [--sizes 1000,10000,100000]
"""

from __future__ import annotations

import argparse
import random
import sys
import time

from pykueue.engine import model as m
from pykueue.engine.engine import Engine
from pykueue.engine.model import US
from pykueue.engine.workload import State

QUEUES = 10


def build(pending: int, seed: int = 7) -> Engine:
    rng = random.Random(seed)
    e = Engine()
    with e.bulk():
        e.apply_resource_flavor(m.ResourceFlavor("default"))
        for i in range(QUEUES):
            e.apply_cluster_queue(
                m.ClusterQueue(
                    name=f"cq{i}",
                    cohort="all",
                    namespace_selector=m.LabelSelector(),
                    resource_groups=(
                        m.ResourceGroup(("cpu",), (m.FlavorQuotas("default", {"cpu": m.ResourceQuota(10_000)}),)),
                    ),
                    preemption=m.PreemptionPolicy(within_cluster_queue=m.LOWER_PRIORITY),
                )
            )
            e.apply_local_queue(m.LocalQueue("ns", f"q{i}", f"cq{i}"))
    for n in range(pending):
        e.add_workload(
            m.Workload(
                namespace="ns",
                name=f"w{n:06d}",
                queue_name=f"q{n % QUEUES}",
                pod_sets=(m.PodSet("main", 1, {"cpu": rng.choice((500, 1000, 1500, 2000, 2500))}),),
                priority=rng.choice((0, 10, 20)),
                creation_time=n * 0.001,
            )
        )
    e.schedule(0)  # fill the queues
    return e


def measure(pending: int, admissions: int) -> tuple[float, int, int]:
    e = build(pending)
    running = sorted((i for i in e.workloads.values() if i.has_quota), key=lambda i: i.seq)
    spent = 0.0
    admitted = 0
    t = US
    while admitted < admissions and running:
        victim = running.pop(0)
        e.finish_workload(victim.key, t)
        start = time.perf_counter()
        events = e.schedule(t)
        spent += time.perf_counter() - start
        for ev in events:
            if ev.type == "Admitted":
                admitted += 1
                running.append(e.workloads[ev.workload])
        t += US
    backlog = sum(1 for i in e.workloads.values() if i.state is State.PENDING)
    return spent, admitted, backlog


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--admissions", type=int, default=500)
    ap.add_argument("--sizes", default="1000,10000,100000")
    args = ap.parse_args()
    print(f"{'pending':>8} {'admissions':>10} {'backlog after':>13} {'µs / admission':>15}")
    for size in (int(x) for x in args.sizes.split(",")):
        spent, admitted, backlog = measure(size, args.admissions)
        print(f"{size:>8} {admitted:>10} {backlog:>13} {spent / max(admitted, 1) * 1e6:>15.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
