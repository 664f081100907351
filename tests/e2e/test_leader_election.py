"""Two `pykueue controller --leader-elect` replicas on the tier 2 cluster: one holds the Lease and
admits, the other waits; when the leader is killed (SIGKILL: no release) the other takes over once
the lease has gone unrenewed for its duration, and admits new Jobs; when the leader is stopped
(SIGTERM) it releases the Lease and the other takes over at its next try.

A watch on the namespace's Workloads checks what a user would see throughout: no Workload gets its
quota reserved twice, and the Workloads holding quota never exceed the ClusterQueue's 6 cpu.

What kubectl cannot stage (an API server that stops answering a leader mid-term) is checked on the
elector alone in tests/controller/test_leader_elector.py.
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from pykueue.controller.runtime.leader import LEASE_NAME
from pykueue.quantity import to_canonical
from tests.e2e.conftest import Kueue, eventually, is_true, settled
from tests.e2e.objects import PLAIN_FLAVOR, cluster_queue, job, local_queue, running
from tests.e2e.running import Sampler

pytestmark = pytest.mark.e2e

LEASE = LEASE_NAME
LEASE_DURATION, RETRY_PERIOD = 15.0, 2.0
WAITING = b"waiting for the leader lease"
ACQUIRED = re.compile(rb'msg="successfully acquired lease" .*identity=(\S+)')


class WorkloadWatch:
    """`kubectl get workloads --watch` in the background: every QuotaReserved=True transition of every
    Workload, and the cpu held by Workloads with quota at each change, in the order the API sent them."""

    def __init__(self, kueue: Kueue, namespace: str) -> None:
        self.reservations: dict[str, int] = {}
        self.peak_millis = 0
        self.held: dict[str, int] = {}
        self._reserved: dict[str, bool] = {}
        self.process = subprocess.Popen(
            [kueue.cluster.kubectl_path, "--kubeconfig", str(kueue.cluster.kubeconfig), "get",
             "workloads.kueue.x-k8s.io", "-n", namespace, "--watch", "--output-watch-events", "-o", "json"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        decoder, buffer = json.JSONDecoder(), ""
        assert self.process.stdout is not None
        for line in self.process.stdout:
            buffer += line
            while buffer.strip():
                try:
                    event, end = decoder.raw_decode(buffer.lstrip())
                except json.JSONDecodeError:
                    break
                buffer = buffer.lstrip()[end:]
                self._apply(event)

    def _apply(self, event: dict[str, Any]) -> None:
        obj = event["object"]
        name = obj["metadata"]["name"]
        reserved = event["type"] != "DELETED" and is_true(obj, "QuotaReserved")
        if reserved and not self._reserved.get(name):
            self.reservations[name] = self.reservations.get(name, 0) + 1
        self._reserved[name] = reserved
        admission = (obj.get("status") or {}).get("admission") if reserved else None
        self.held[name] = sum(to_canonical("cpu", psa.get("resourceUsage", {}).get("cpu", "0"))
                              for psa in (admission or {}).get("podSetAssignments") or [])
        self.peak_millis = max(self.peak_millis, sum(self.held.values()))

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


@pytest.fixture
def replicas(kueue: Kueue, ns: str) -> Iterator[tuple[Kueue, Kueue]]:
    """Two elected replicas with the Lease in `ns`; the session's controller (not elected) is stopped
    meanwhile, since it would admit beside them."""
    kueue.stop()
    args = ("--leader-elect", f"--leader-election-namespace={ns}")
    first = Kueue(kueue.cluster, kueue.log.with_name(f"{ns}-a.log"), args=args)
    second = Kueue(kueue.cluster, kueue.log.with_name(f"{ns}-b.log"), args=args)
    try:
        first.start()
        second.start(ready=WAITING)
        yield first, second
    finally:
        for replica in (first, second):
            replica.stop(kill=True)
            print(f"\n--- {replica.log.name} (tail) ---\n{replica._tail()}")
        kueue.start()


def lease(kueue: Kueue, namespace: str) -> dict[str, Any]:
    obj = kueue.get("lease.coordination.k8s.io", LEASE, namespace)
    assert obj is not None
    return obj["spec"]


def identity(replica: Kueue) -> str | None:
    match = ACQUIRED.search(replica.log.read_bytes())
    return match.group(1).decode() if match else None


def decisions(replica: Kueue) -> list[str]:
    return [line for line in replica.log.read_text().splitlines() if "msg=decision" in line]


def setup_queue(kueue: Kueue, ns: str) -> None:
    kueue.apply(PLAIN_FLAVOR)
    kueue.apply(cluster_queue(ns, "6"))
    kueue.apply(local_queue(ns, ns))


def admitted(kueue: Kueue, name: str, ns: str) -> bool:
    return is_true(kueue.workload_of(name, ns), "Admitted")


def test_killed_leader_is_replaced_within_the_lease_duration(replicas: tuple[Kueue, Kueue], ns: str) -> None:
    leader, standby = replicas
    holder = identity(leader)
    markers = f"{ns}-m"
    assert holder is not None and identity(standby) is None
    assert lease(leader, ns)["holderIdentity"] == holder
    waiting = [line for line in standby.log.read_text().splitlines() if WAITING.decode() in line]
    assert waiting and f"lease={ns}/{LEASE}" in waiting[0] and f"leader={holder}" in waiting[0], waiting
    watch = WorkloadWatch(leader, ns)
    runs = Sampler(leader, ns)  # what the Jobs run, beside the Workloads' reservations the watch sums
    try:
        setup_queue(leader, ns)
        for i in range(4):
            leader.apply(job(f"before-{i}", ns, "1"))
        leader.apply(job("too-big", ns, "3"))  # 4 + 3 > 6: waits
        for i in range(4):
            eventually(lambda i=i: runs.sample() >= 0 and running(leader, f"before-{i}", ns), what=f"before-{i} running")
        leader.cluster.kubectl("create", "namespace", markers)
        settled(leader, markers)  # a barrier in a namespace of its own: the watch counts only ns
        assert not admitted(leader, "too-big", ns)
        assert decisions(leader) and not decisions(standby)  # only the leader decides
        assert b"controller ready" not in standby.log.read_bytes()

        leader.stop(kill=True)  # SIGKILL: the Lease stays held until it expires
        killed = time.monotonic()
        eventually(lambda: runs.sample() >= 0 and identity(standby), LEASE_DURATION + 15, 0.1, what="the standby elected")
        took = time.monotonic() - killed
        # Up to a lease duration after the last renewal it saw, plus its own retry period (jittered), plus
        # slack for a busy 2-core machine (it overran a 2 s slack by half a second under load).
        assert took < LEASE_DURATION + RETRY_PERIOD * 2.2 + 6, took
        spec = lease(standby, ns)
        assert spec["holderIdentity"] == identity(standby) != holder
        assert spec["leaseTransitions"] == 1
        eventually(lambda: b"controller ready" in standby.log.read_bytes(), 30, what="the new leader synced")

        standby.apply(job("after", ns, "2"))  # 4 + 2 = 6: fits beside the four still admitted
        eventually(lambda: runs.sample() >= 0 and running(standby, "after", ns), 30, what="a Job admitted by the new leader")
        runs.sample()
        settled(standby, markers)
        assert not admitted(standby, "too-big", ns)
        new = [line for line in decisions(standby) if "decision=QuotaReserved" in line and f"workload={ns}/" in line]
        assert len(new) == 1 and f"workload={ns}/job-after-" in new[0], new  # the four kept, none redone
    finally:
        time.sleep(0.5)
        watch.stop()
        leader.cluster.kubectl("delete", "namespace", markers, "--wait=false", check=False)
    assert len(watch.reservations) == 5, watch.reservations
    assert set(watch.reservations.values()) == {1}, watch.reservations  # no Workload reserved twice
    assert watch.peak_millis <= 6000, watch.peak_millis
    assert runs.samples > 0 and 4000 <= runs.peak <= 6000, (runs.samples, runs.peak)  # the Jobs ran, never over


def test_stopped_leader_releases_the_lease(replicas: tuple[Kueue, Kueue], ns: str) -> None:
    leader, standby = replicas
    holder = identity(leader)
    setup_queue(leader, ns)
    leader.apply(job("first", ns, "1"))
    eventually(lambda: running(leader, "first", ns), what="first running")
    leader.stop()  # SIGTERM: the controller stops, then the Lease is released
    assert b'msg="released leader lease"' in leader.log.read_bytes()
    stopped = time.monotonic()
    eventually(lambda: identity(standby), LEASE_DURATION, 0.1, what="the standby elected")
    assert time.monotonic() - stopped < RETRY_PERIOD * 2.2 + 2  # its next try, not the lease duration
    assert lease(standby, ns)["holderIdentity"] == identity(standby) != holder
    standby.apply(job("second", ns, "1"))
    eventually(lambda: running(standby, "second", ns), 30, what="second admitted by the new leader")
    assert is_true(standby.workload_of("first", ns), "Admitted")
