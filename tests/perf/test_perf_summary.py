"""Summary maths on hand-made observations, with hand-computed figures."""

from __future__ import annotations

import json

from pykueue.perf.generator import build_manifests, parse_generator
from pykueue.perf.summary import (
    ClusterQueueObservation,
    PerfObservations,
    Recorder,
    UsagePoints,
    WorkloadObservation,
    manifest_facts,
    observations_from_result,
    summarize,
)


def obs(workloads: list[WorkloadObservation], end: float = 10.0) -> PerfObservations:
    cqs = [
        # used = 5000m * 2000ms + 25000m * 1000ms = 35_000_000; window [0, 4000]
        ClusterQueueObservation("q1", "cq", 20, [(1.0, 5), (3.0, 25), (4.0, 0)]),
        # used = 20000m * 4000ms = 80_000_000; last status event at 6.5s
        ClusterQueueObservation("q2", "cq", 20, [(2.0, 20), (6.0, 0)], last_event_at=6.5),
        ClusterQueueObservation("idle", "spare", 0),
    ]
    return PerfObservations(workloads=workloads, cluster_queues=cqs, end_time=end)


WLS = [
    WorkloadObservation("small", created_at=0.1, admitted_at=0.1, finished_at=0.3),  # admit 0, finish 200
    WorkloadObservation(
        "small", created_at=0.2, admitted_at=1.25, finished_at=1.45, evictions=1
    ),  # 1050, 1250
    WorkloadObservation("small", created_at=0.3, admitted_at=None, finished_at=None),  # 0, 0
    WorkloadObservation("large", created_at=1.2, admitted_at=3.7, finished_at=4.7),  # 2500, 3500
]


def test_workload_classes_and_cq_usage() -> None:
    s = summarize(obs(WLS))
    assert s == {
        "clusterQueueClasses": {
            "cq": {
                # 115_000_000 * 100 / (40_000 * 6_500) = 44.2307692...
                "avgUsagePercent": 44.2308,
                "clusterQueues": 2,
                "cpuAverageUsage": 17_692,  # 115_000_000 // 6_500
                "cpuUsed": 115_000_000,
                "firstEventMs": 0,
                "lastEventMs": 6_500,
                "nominalQuota": 40_000,
            },
            "spare": {
                "avgUsagePercent": None,
                "clusterQueues": 1,
                "cpuAverageUsage": 0,
                "cpuUsed": 0,
                "firstEventMs": 0,
                "lastEventMs": 0,
                "nominalQuota": 0,
            },
        },
        "wallMs": 10_000,  # one small workload never finished: the end of the simulation
        "workloadClasses": {
            "large": {
                "avgTimeToAdmissionMs": 2_500,
                "avgTimeToFinishMs": 3_500,
                "count": 1,
                "maxTimeToAdmissionMs": 2_500,
                "totalEvictions": 0,
            },
            "small": {
                "avgTimeToAdmissionMs": 350,  # (0 + 1050 + 0) // 3, never-admitted counts 0 as upstream
                "avgTimeToFinishMs": 483,  # (200 + 1250 + 0) // 3, truncated
                "count": 3,
                "maxTimeToAdmissionMs": 1_050,
                "totalEvictions": 1,
            },
        },
    }
    assert list(s) == sorted(s)
    assert list(s["workloadClasses"]) == ["large", "small"]
    json.dumps(s)  # serialisable


def test_wall_is_last_finish_when_all_finished_and_float_noise_is_ignored() -> None:
    wls = [
        WorkloadObservation("a", created_at=0.3, admitted_at=0.1 + 0.2, finished_at=0.7),
        WorkloadObservation("a", created_at=0.1, admitted_at=0.4, finished_at=2.345),
    ]
    s = summarize(PerfObservations(wls, [], end_time=99.0))
    assert s["wallMs"] == 2_345
    assert s["workloadClasses"]["a"]["avgTimeToAdmissionMs"] == 150  # (0 + 300) // 2
    assert s["workloadClasses"]["a"]["maxTimeToAdmissionMs"] == 300
    assert s["clusterQueueClasses"] == {}


def test_usage_counts_only_after_positive_points_and_until_last_event() -> None:
    # Usage 10 from 1s, then a same-instant change to 0 and back to 4 at 2s; last event at 5s.
    cq = ClusterQueueObservation(
        "q", "c", 8, [(1.0, 10), (2.0, 0), (2.0, 4)], created_at=0.5, last_event_at=5.0
    )
    s = summarize(PerfObservations([], [cq], end_time=5.0))["clusterQueueClasses"]["c"]
    used = 10_000 * 1_000 + 4_000 * 3_000
    assert s["cpuUsed"] == used
    assert (s["firstEventMs"], s["lastEventMs"]) == (500, 5_000)
    assert s["avgUsagePercent"] == round(used * 100 / (8_000 * 4_500), 4)


def _tiny_manifests() -> list[dict]:
    cfg = parse_generator(
        {
            "cohorts": [
                {
                    "className": "co",
                    "count": 1,
                    "queuesSets": [
                        {
                            "className": "cq",
                            "count": 1,
                            "nominalQuota": 4,
                            "workloadsSets": [
                                {
                                    "count": 2,
                                    "creationIntervalMs": 1000,
                                    "workloads": [{"className": "w", "runtimeMs": 2000, "request": 3}],
                                }
                            ],
                        }
                    ],
                }
            ]
        }
    )
    return build_manifests(cfg)


def test_observations_from_simulation_result() -> None:
    manifests = _tiny_manifests()
    ns = "cq-0-0-co-0"
    result = {
        "endTime": 5.0,
        "workloads": [
            {
                "namespace": ns,
                "name": "w-0-0-0",
                "clusterQueue": ns,
                "createdAt": 1.0,
                "admittedAt": 1.0,
                "finishedAt": 3.0,
                "evictions": 0,
            },
            {
                "namespace": ns,
                "name": "w-0-1-0",
                "clusterQueue": ns,
                "createdAt": 2.0,
                "admittedAt": 3.0,
                "finishedAt": 5.0,
                "evictions": 0,
            },
        ],
        "events": [
            {"time": 1.0, "type": "QuotaReserved", "workload": f"{ns}/w-0-0-0", "clusterQueue": ns},
            {"time": 1.0, "type": "Admitted", "workload": f"{ns}/w-0-0-0", "clusterQueue": ns},
            {"time": 3.0, "type": "Finished", "workload": f"{ns}/w-0-0-0", "clusterQueue": ns},
            {"time": 3.0, "type": "QuotaReserved", "workload": f"{ns}/w-0-1-0", "clusterQueue": ns},
            {"time": 3.0, "type": "Admitted", "workload": f"{ns}/w-0-1-0", "clusterQueue": ns},
            {"time": 5.0, "type": "Finished", "workload": f"{ns}/w-0-1-0", "clusterQueue": ns},
        ],
    }
    o = observations_from_result(result, manifests)
    # the facts the CLI keeps instead of the manifests give the same observations: the request of
    # each workload in the queue's measured resource (3 cpu), its class, the queue's quota
    facts = manifest_facts(manifests)
    assert facts.workload(f"{ns}/w-0-1-0") == ("w", {"cpu": 3.0})
    assert facts.workload(f"{ns}/w-0-0-0") is facts.workload(f"{ns}/w-0-1-0")  # equal facts shared
    assert observations_from_result(result, facts) == o
    (cq,) = o.cluster_queues
    assert (cq.name, cq.class_name, cq.nominal_quota, cq.last_event_at) == (ns, "cq", 4.0, 5.0)
    assert list(cq.usage) == [(1.0, 3.0), (3.0, 0.0), (3.0, 3.0), (5.0, 0.0)]
    s = summarize(o)
    # used = 3000m * 2000ms * 2 = 12_000_000 over 4000m * 5000ms -> 60%
    assert s["clusterQueueClasses"]["cq"]["avgUsagePercent"] == 60.0
    assert s["wallMs"] == 5_000
    assert s["workloadClasses"]["w"] == {
        "avgTimeToAdmissionMs": 500,
        "avgTimeToFinishMs": 2_500,
        "count": 2,
        "maxTimeToAdmissionMs": 1_000,
        "totalEvictions": 0,
    }
    # the streaming recorder (entries shown one at a time, events before workloads as a writer may,
    # no observation kept) gives the same summary
    recorder = Recorder(facts)
    for e in result["events"]:
        recorder.event(e)
    for w in result["workloads"]:
        recorder.workload(w)
    assert recorder.kept is None
    assert recorder.summary(5.0) == s == recorder.done


def test_usage_points_kept_as_arrays_give_the_same_figures() -> None:
    points = UsagePoints()
    for t, u in [(1.0, 5), (3.0, 25), (4.0, 0)]:
        points.append(t, u)
    assert len(points) == 3 and points[-1] == (4.0, 0.0) and points[:2] == [(1.0, 5.0), (3.0, 25.0)]
    assert list(points) == [(1.0, 5.0), (3.0, 25.0), (4.0, 0.0)]
    # q1 of ``obs``: 5000m * 2000ms + 25000m * 1000ms over [0, 4000] (its last point)
    s = summarize(PerfObservations([], [ClusterQueueObservation("q1", "cq", 20, points)], end_time=10.0))
    assert s["clusterQueueClasses"]["cq"]["cpuUsed"] == 35_000_000
    assert s["clusterQueueClasses"]["cq"]["lastEventMs"] == 4_000
    assert s["wallMs"] == 10_000  # no workload: the end of the run
