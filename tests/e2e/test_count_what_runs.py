"""Quota follows what the cluster runs, not what the engine decided (issue 37): an evicted or deleted
workload's quota is released only once its Job has stopped. kube-controller-manager is frozen
(SIGSTOP) to make the Job controller lag: a suspended Job then keeps counting its pods active, and
kwok keeps them Running, as a slow cluster would. What runs is counted from the Jobs and Pods
(``running.Sampler``), never from the Workload status the controller writes."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import Kueue, condition, eventually, is_true, settled
from tests.e2e.objects import (
    PLAIN_FLAVOR,
    cluster_queue,
    job,
    local_queue,
    priority_classes,
    running,
    stopped,
)
from tests.e2e.running import Sampler

pytestmark = pytest.mark.e2e


def _preempting(kueue: Kueue, ns: str) -> Sampler:
    """A 4 cpu queue that preempts by priority, a low-priority Job of two 2 cpu pods running (both
    pods active), then a high-priority 3 cpu Job while the Job controller is frozen."""
    kueue.apply(PLAIN_FLAVOR)
    kueue.apply(priority_classes(ns))
    kueue.apply(cluster_queue(ns, "4", preemption="{withinClusterQueue: LowerPriority}"))
    kueue.apply(local_queue(ns, ns))
    kueue.apply(job("low", ns, "2", pods=2, priority_class=f"{ns}-low"))
    sampler = Sampler(kueue, ns)
    eventually(lambda: ((kueue.get("job", "low", ns) or {}).get("status") or {}).get("active") == 2,
               what="low's two pods active")
    return sampler


def _victim_evicted_and_suspended(kueue: Kueue, ns: str) -> bool:
    """The controller has acted: low's Workload says Evicted, low is suspended, and high's Workload
    says it waits for the preemption."""
    victim, preemptor, low = kueue.workload_of("low", ns), kueue.workload_of("high", ns), kueue.get("job", "low", ns)
    waiting = condition(preemptor, "QuotaReserved") or {}
    return bool(is_true(victim, "Evicted") and low and low["spec"].get("suspend")
                and "Pending the preemption of 1 workload(s)" in waiting.get("message", ""))


def test_preemptor_waits_while_the_victims_pods_still_run(kueue: Kueue, ns: str) -> None:
    sampler = _preempting(kueue, ns)
    with kueue.cluster.paused("kube-controller-manager"):
        kueue.apply(job("high", ns, "3", priority_class=f"{ns}-high"))
        eventually(lambda: sampler.sample() is not None and _victim_evicted_and_suspended(kueue, ns),
                   what="low evicted and suspended, high waiting for it")
        # The victim still holds its quota in the API while its pods run
        victim = kueue.workload_of("low", ns)
        assert is_true(victim, "QuotaReserved") and victim["status"]["admission"]["clusterQueue"] == ns
        assert kueue.get("job", "low", ns)["status"]["active"] == 2
        assert not running(kueue, "high", ns)
        assert sampler.sample() == 4000  # low's two pods, not high beside them
    eventually(lambda: sampler.sample() is not None and running(kueue, "high", ns), what="high running")
    eventually(lambda: not is_true(kueue.workload_of("low", ns), "QuotaReserved"), what="low released")
    assert sampler.peak <= 4000, f"ran {sampler.peak} milli-cpu on a 4 cpu queue"


def test_a_restarted_controller_keeps_holding_a_victim_that_still_runs(kueue: Kueue, ns: str) -> None:
    sampler = _preempting(kueue, ns)
    with kueue.cluster.paused("kube-controller-manager"):
        kueue.apply(job("high", ns, "3", priority_class=f"{ns}-high"))
        eventually(lambda: sampler.sample() is not None and _victim_evicted_and_suspended(kueue, ns),
                   what="low evicted and suspended, high waiting for it")
        kueue.stop(kill=True)
        kueue.start()  # restores low as evicted and still holding its quota

        def tried_again() -> bool:
            # the restarted controller has tried high: without the victim it waited for in memory, it
            # says why high does not fit (low's quota is still held)
            message = (condition(kueue.workload_of("high", ns), "QuotaReserved") or {}).get("message", "")
            return sampler.sample() is not None and "Pending the preemption" not in message
        eventually(tried_again, what="high tried by the restarted controller")
        victim = kueue.workload_of("low", ns)
        assert is_true(victim, "QuotaReserved") and is_true(victim, "Evicted")
        assert not running(kueue, "high", ns) and sampler.sample() == 4000
    eventually(lambda: sampler.sample() is not None and running(kueue, "high", ns), what="high running")
    assert sampler.peak <= 4000, f"ran {sampler.peak} milli-cpu on a 4 cpu queue"


def test_a_deleted_workload_holds_its_quota_until_it_is_gone(kueue: Kueue, ns: str) -> None:
    """A 2 cpu queue runs `a` (2 cpu); `b` (2 cpu) waits. a's Workload is deleted while another
    finalizer keeps it: a is stopped first, and b starts only once a's Workload is gone."""
    kueue.apply(PLAIN_FLAVOR)
    kueue.apply(cluster_queue(ns, "2"))
    kueue.apply(local_queue(ns, ns))
    kueue.apply(job("a", ns, "2"))
    eventually(lambda: running(kueue, "a", ns), what="a running")
    kueue.apply(job("b", ns, "2"))
    eventually(lambda: kueue.workload_of("b", ns) is not None, what="b's workload")
    sampler = Sampler(kueue, ns)
    name = kueue.workload_of("a", ns)["metadata"]["name"]
    kueue.cluster.kubectl("patch", "workload", name, "-n", ns, "--type=json", "-p",
                          '[{"op": "add", "path": "/metadata/finalizers/-", "value": "example.com/hold"}]')
    kueue.cluster.kubectl("delete", "workload", name, "-n", ns, "--wait=false")

    def stopped_and_finalized() -> bool:
        sampler.sample()
        wl, a = kueue.get("workload", name, ns), kueue.get("job", "a", ns)
        return bool(wl and a and a["spec"].get("suspend") and not (a.get("status") or {}).get("active")
                    and wl["metadata"]["finalizers"] == ["example.com/hold"])
    # the signal that the controller has seen a stop: it took its own finalizer off the Workload
    eventually(stopped_and_finalized, what="a stopped and kueue's finalizer gone from its Workload")
    assert not running(kueue, "b", ns), "b started while a's Workload still holds the quota"
    kueue.cluster.kubectl("patch", "workload", name, "-n", ns, "--type=merge", "-p", '{"metadata":{"finalizers":null}}')
    eventually(lambda: sampler.sample() is not None and running(kueue, "b", ns), what="b running")
    assert sampler.peak <= 2000, f"ran {sampler.peak} milli-cpu on a 2 cpu queue"


def test_a_running_job_whose_parallelism_grew_is_stopped_and_requeued(kueue: Kueue, ns: str) -> None:
    """A 2 cpu queue runs `grow` (1 pod of 1 cpu, 4 completions); its parallelism is raised to 4. As
    upstream, the Job is stopped and its Workload replaced by one for 4 pods (4 cpu), which waits: the
    queue never runs more than 2 cpu."""
    kueue.apply(PLAIN_FLAVOR)
    kueue.apply(cluster_queue(ns, "2"))
    kueue.apply(local_queue(ns, ns))
    kueue.apply(job("grow", ns, "1").replace("completions: 1", "completions: 4"))
    eventually(lambda: running(kueue, "grow", ns), what="grow running")
    first = kueue.workload_of("grow", ns)["metadata"]["uid"]
    kueue.cluster.kubectl("patch", "job", "grow", "-n", ns, "--type=merge", "-p", '{"spec":{"parallelism":4}}')
    # Between the edit and the stop the Job controller may start pods for it (upstream has the same
    # window: no webhook refuses the edit); from the stop on (suspended and no pod of it active or
    # terminating), the queue runs within its quota.
    eventually(lambda: stopped(kueue, "grow", ns), what="grow stopped")
    sampler = Sampler(kueue, ns)

    def replaced_and_waiting() -> bool:
        sampler.sample()
        wl = kueue.workload_of("grow", ns)
        waiting = condition(wl, "QuotaReserved") or {}
        return bool(wl and wl["metadata"]["uid"] != first and wl["spec"]["podSets"][0]["count"] == 4
                    and waiting.get("status") == "False" and waiting.get("message"))
    eventually(replaced_and_waiting, what="a new Workload for 4 pods, told why it waits")
    grow = kueue.get("job", "grow", ns)
    assert grow["spec"]["suspend"] is True and grow["spec"]["parallelism"] == 4
    assert "insufficient" in condition(kueue.workload_of("grow", ns), "QuotaReserved")["message"]
    assert sampler.sample() == 0 and sampler.peak <= 2000, f"ran {sampler.peak} milli-cpu on a 2 cpu queue"


def test_an_admitted_workloads_pod_sets_cannot_grow(kueue: Kueue, ns: str) -> None:
    """A 2 cpu queue runs `a` (1 pod of 1 cpu). Raising its admitted Workload's count to 4 is refused by
    the API server itself (the CRD's rule: pod sets are immutable while quota is reserved), so a
    controller restarted afterwards still counts 1 cpu: a 1 cpu Job fits beside it."""
    kueue.apply(PLAIN_FLAVOR)
    kueue.apply(cluster_queue(ns, "2"))
    kueue.apply(local_queue(ns, ns))
    kueue.apply(job("a", ns, "1"))
    eventually(lambda: running(kueue, "a", ns), what="a running")
    name = kueue.workload_of("a", ns)["metadata"]["name"]
    patch = kueue.cluster.kubectl("patch", "workload", name, "-n", ns, "--type=json", "-p",
                                  '[{"op": "replace", "path": "/spec/podSets/0/count", "value": 4}]', check=False)
    assert patch.returncode != 0 and "field is immutable" in patch.stderr, patch.stderr
    assert kueue.workload_of("a", ns)["spec"]["podSets"][0]["count"] == 1
    kueue.stop(kill=True)
    kueue.start()
    # Restarted, it still counts `a` as 1 cpu: a 1 cpu Job fits beside it on the 2 cpu queue.
    kueue.apply(job("b", ns, "1"))
    eventually(lambda: running(kueue, "b", ns), what="b running beside a")
    assert Sampler(kueue, ns).sample() == 2000


def _admitted_at(kueue: Kueue, name: str, ns: str) -> float | None:
    from pykueue.controller.core.translate import parse_time
    cond = condition(kueue.workload_of(name, ns), "Admitted") or {}
    return parse_time(cond.get("lastTransitionTime")) if cond.get("status") == "True" else None


def _deactivated_at(kueue: Kueue, name: str, ns: str) -> float | None:
    from pykueue.controller.core.translate import parse_time
    cond = condition(kueue.workload_of(name, ns), "Evicted") or {}
    if cond.get("status") == "True" and cond.get("reason", "").startswith("Deactivated"):
        return parse_time(cond.get("lastTransitionTime"))
    return None


def test_the_execution_limit_counts_from_the_admission_not_the_creation(kueue: Kueue, ns: str) -> None:
    """A Job with a 5 s execution limit created while no controller runs, admitted when one starts
    about 4 s later: it is deactivated 5 s after its admission (whole seconds: 4 to 6 s)."""
    kueue.stop()
    try:
        kueue.apply(PLAIN_FLAVOR)
        kueue.apply(cluster_queue(ns, "2"))
        kueue.apply(local_queue(ns, ns))
        kueue.apply(job("limited", ns, "1").replace(
            "labels: {kueue.x-k8s.io/queue-name: lq}",
            'labels: {kueue.x-k8s.io/queue-name: lq, kueue.x-k8s.io/max-exec-time-seconds: "5"}'))
        created = time.time()
        time.sleep(4)  # the objects age before any controller sees them (not a wait for a signal)
    finally:
        kueue.start()
    admitted = eventually(lambda: _admitted_at(kueue, "limited", ns), what="limited admitted")
    deactivated = eventually(lambda: _deactivated_at(kueue, "limited", ns), 30, what="limited deactivated")
    assert admitted >= created + 3, (admitted, created)
    assert 4 <= deactivated - admitted <= 7, (admitted, deactivated)


def test_the_execution_limit_accumulates_across_a_preemption(kueue: Kueue, ns: str) -> None:
    """`low` (10 s limit) runs about 5 s, is preempted by `high` (which runs 3 s), and is admitted
    again: it is deactivated about 5 s after its second admission, not at once and not 10 s later."""
    kueue.apply(PLAIN_FLAVOR)
    kueue.apply(priority_classes(ns))
    kueue.apply(cluster_queue(ns, "2", preemption="{withinClusterQueue: LowerPriority}"))
    kueue.apply(local_queue(ns, ns))
    kueue.apply(job("low", ns, "2", priority_class=f"{ns}-low").replace(
        "labels: {kueue.x-k8s.io/queue-name: lq}",
        'labels: {kueue.x-k8s.io/queue-name: lq, kueue.x-k8s.io/max-exec-time-seconds: "10"}'))
    first = eventually(lambda: _admitted_at(kueue, "low", ns), what="low admitted")
    time.sleep(max(0.0, first + 5 - time.time()))  # let it run about 5 s (setup, not a negative check)
    kueue.apply(job("high", ns, "2", priority_class=f"{ns}-high", runs_for="3s"))
    eventually(lambda: (condition(kueue.workload_of("low", ns), "Evicted") or {}).get("reason") == "Preempted",
               what="low preempted")

    def readmitted() -> float | None:
        at = _admitted_at(kueue, "low", ns)
        return at if at is not None and at > first + 4 else None
    second = eventually(readmitted, 60, what="low admitted again")
    used = kueue.workload_of("low", ns)["status"].get("accumulatedPastExecutionTimeSeconds")
    assert used is not None and 4 <= used <= 7, used
    deactivated = eventually(lambda: _deactivated_at(kueue, "low", ns), 30, what="low deactivated")
    assert 10 - used - 1 <= deactivated - second <= 10 - used + 2, (second, deactivated, used)


def test_a_pending_jobs_new_priority_class_reaches_its_workload_and_preempts(kueue: Kueue, ns: str) -> None:
    """Upstream's UpdateWorkloadPriority: a 2 cpu queue preempting by priority runs `a` (2 cpu, class
    `low`); `b` (2 cpu, class `low`) waits, as an equal may not preempt. Relabelled `high`, b's Workload
    takes the class and its value, and b preempts a; the two never run together."""
    kueue.apply(PLAIN_FLAVOR)
    kueue.apply(f"""
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {{name: {ns}-wlow}}
value: 10
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {{name: {ns}-whigh}}
value: 1000
""")
    kueue.apply(cluster_queue(ns, "2", preemption="{withinClusterQueue: LowerPriority}"))
    kueue.apply(local_queue(ns, ns))
    label = "kueue.x-k8s.io/priority-class"

    def classed(name: str) -> str:
        return job(name, ns, "2").replace("{kueue.x-k8s.io/queue-name: lq}",
                                          f"{{kueue.x-k8s.io/queue-name: lq, {label}: {ns}-wlow}}")
    kueue.apply(classed("a"))
    eventually(lambda: running(kueue, "a", ns), what="a running")
    kueue.apply(classed("b"))
    sampler = Sampler(kueue, ns)

    def waiting_at(value: int) -> bool:
        wl = kueue.workload_of("b", ns)
        return bool(sampler.sample() is not None and wl and wl["spec"].get("priority") == value
                    and condition(wl, "QuotaReserved") is not None and not is_true(wl, "QuotaReserved"))
    # b's Workload exists with its class and has been tried: it waits, since an equal is no victim
    eventually(lambda: waiting_at(10), what="b's workload pending at priority 10")
    assert not running(kueue, "b", ns)
    kueue.cluster.kubectl("label", "job", "b", "-n", ns, f"{label}={ns}-whigh", "--overwrite")
    eventually(lambda: (kueue.workload_of("b", ns) or {}).get("spec", {}).get("priorityClassRef", {}).get("name")
               == f"{ns}-whigh", what="b's workload names the new class")
    assert kueue.workload_of("b", ns)["spec"]["priority"] == 1000
    eventually(lambda: sampler.sample() is not None and running(kueue, "b", ns), what="b running")
    assert is_true(kueue.workload_of("a", ns), "Evicted") or not running(kueue, "a", ns)
    assert sampler.peak <= 2000, f"ran {sampler.peak} milli-cpu on a 2 cpu queue"


# ---- issue 51: what pykueue no longer sees still counts ---------------------------------------------

SELECTING = "pykueue.test/managed"  # the label the Configuration below selects namespaces by
SELECTIVE_CONFIG = {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
                    "managedJobsNamespaceSelector": {"matchLabels": {SELECTING: "true"}}}


def _labelled_namespace(kueue: Kueue, name: str) -> None:
    kueue.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": {SELECTING: "true"}}}])


def test_a_job_kueue_no_longer_manages_holds_its_preempted_quota_until_it_stops(
        kueue: Kueue, ns: str, tmp_path: Path) -> None:
    """Issue 51, scenario 1. The session's controller selects namespaces by their immutable name label
    (upstream's default), which no relabelling can take away: this test restarts it with a Configuration
    whose ``managedJobsNamespaceSelector`` selects ``pykueue.test/managed=true``. A 4 cpu queue (shared
    by ``ns`` and ``ns-hi``) runs ``low`` (3 cpu) in ``ns``; ``ns`` loses the label, so Kueue no longer
    manages low; ``high`` (3 cpu, higher priority) arrives in ``ns-hi`` and preempts low. As upstream,
    nobody stops low, and its quota stays held: high is admitted only once the test itself has stopped
    low, and what runs in the two namespaces never exceeds 4 cpu."""
    hi, barrier = f"{ns}-hi", f"{ns}-m"
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(SELECTIVE_CONFIG))
    try:
        with kueue.restarted_with(config):
            for name in (ns, hi, barrier):
                _labelled_namespace(kueue, name)
            kueue.apply(PLAIN_FLAVOR)
            kueue.apply(priority_classes(ns))
            kueue.apply(cluster_queue(ns, "4", preemption="{withinClusterQueue: LowerPriority}"))
            kueue.apply(local_queue(ns, ns))
            kueue.apply(local_queue(hi, ns))
            kueue.apply(job("low", ns, "3", priority_class=f"{ns}-low"))
            sampler = Sampler(kueue, ns, hi)

            def within() -> int:
                used = sampler.sample()
                assert used <= 4000, f"ran {used} milli-cpu on a 4 cpu queue"
                return used
            eventually(lambda: within() == 3000 and running(kueue, "low", ns), what="low running")
            kueue.cluster.kubectl("label", "namespace", ns, f"{SELECTING}-")
            kueue.apply(job("high", hi, "3", priority_class=f"{ns}-high"))

            def low_preempted() -> bool:
                within()
                waiting = condition(kueue.workload_of("high", hi), "QuotaReserved") or {}
                return bool(is_true(kueue.workload_of("low", ns), "Evicted")
                            and "Pending the preemption of 1 workload(s)" in waiting.get("message", ""))
            eventually(low_preempted, what="low evicted, high waiting for it")
            settled(kueue, barrier)  # every change so far has been through the controller
            victim, low = kueue.workload_of("low", ns), kueue.get("job", "low", ns)
            assert is_true(victim, "QuotaReserved"), "the preempted Workload's quota was released while low runs"
            assert low["spec"]["suspend"] is False and low["status"].get("active") == 1  # left alone, as upstream
            assert not running(kueue, "high", hi) and within() == 3000
            kueue.cluster.kubectl("patch", "job", "low", "-n", ns, "--type=merge", "-p", '{"spec":{"suspend":true}}')

            def high_runs() -> bool:
                within()
                admitted = is_true(kueue.workload_of("high", hi), "QuotaReserved")  # read before low: see below
                if admitted:  # low stopped before high's reservation, and stays stopped
                    assert stopped(kueue, "low", ns), "high was admitted while low still ran"
                return admitted and running(kueue, "high", hi)
            eventually(high_runs, 90, what="high admitted and running once low stopped")
            eventually(lambda: within() == 3000 and running(kueue, "high", hi), what="high running alone")
            assert not is_true(kueue.workload_of("low", ns), "QuotaReserved")
            assert sampler.peak <= 4000, f"ran {sampler.peak} milli-cpu on a 4 cpu queue"
    finally:
        for name in (hi, barrier):
            kueue.cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)


def _a_running(kueue: Kueue, ns: str) -> Sampler:
    """A 4 cpu queue running ``a`` (3 cpu), sampled."""
    kueue.apply(PLAIN_FLAVOR)
    kueue.apply(cluster_queue(ns, "4"))
    kueue.apply(local_queue(ns, ns))
    kueue.apply(job("a", ns, "3"))
    sampler = Sampler(kueue, ns)
    eventually(lambda: sampler.sample() == 3000 and running(kueue, "a", ns), what="a running")
    return sampler


def test_a_job_recreated_under_its_name_gets_its_own_workload_and_the_old_one_goes(kueue: Kueue, ns: str) -> None:
    """Issue 51, scenario 5. A 4 cpu queue runs ``a`` (3 cpu). With kube-controller-manager frozen (its
    garbage collector would otherwise delete the old Workload at once) ``a`` is deleted, its pod deleted
    too (it stays terminating, which nothing counts), and ``a`` is created again under its name. The old
    Workload, owned by the first ``a``'s UID, is deleted, finalized and gone by pykueue alone, and the new
    ``a`` gets its own Workload and is admitted within quota (before, the old Workload was matched to the
    new Job by name and held its 3 cpu forever)."""
    sampler = _a_running(kueue, ns)
    first, old = kueue.get("job", "a", ns)["metadata"]["uid"], kueue.workload_of("a", ns)["metadata"]["name"]
    with kueue.cluster.paused("kube-controller-manager"):
        kueue.cluster.kubectl("delete", "job", "a", "-n", ns, "--wait=false")
        kueue.cluster.kubectl("delete", "pods", "-n", ns, "-l", f"batch.kubernetes.io/controller-uid={first}",
                              "--wait=false")
        kueue.apply(job("a", ns, "3"))
        second = eventually(lambda: (kueue.get("job", "a", ns) or {}).get("metadata", {}).get("uid"), what="a again")
        assert second != first

        def old_gone_new_admitted() -> bool:
            sampler.sample()
            new = kueue.workload_of("a", ns)
            return bool(kueue.get("workload", old, ns) is None and new and new["metadata"]["name"] != old
                        and is_true(new, "Admitted") and running(kueue, "a", ns))
        eventually(old_gone_new_admitted, what="the old Workload gone, the new one admitted (the GC frozen)")
        owner = kueue.workload_of("a", ns)["metadata"]["ownerReferences"][0]
        assert owner["uid"] == second
    eventually(lambda: sampler.sample() == 3000
               and ((kueue.get("job", "a", ns) or {}).get("status") or {}).get("active") == 1, what="a's new pod")
    assert sampler.peak <= 4000, f"ran {sampler.peak} milli-cpu on a 4 cpu queue"


def test_a_reservation_someone_else_wrote_is_counted(kueue: Kueue, ns: str) -> None:
    """Issue 51, scenario 3. A 4 cpu queue runs ``a`` (3 cpu); ``b`` (3 cpu) waits. Someone else (a
    stalled deposed leader, another Kueue, a user) patches a reservation onto ``b``'s Workload: pykueue
    adopts it, ``b`` starts on it, and the 6 cpu in use are counted, so ``c`` (1 cpu) waits instead of
    taking what looked free (before: ``b`` stayed pending in the engine, which admitted ``c``: 7 on 4).
    Once ``a`` and ``b`` are gone, ``c`` is admitted."""
    sampler = _a_running(kueue, ns)
    kueue.apply(job("b", ns, "3"))
    b = eventually(lambda: (w := kueue.workload_of("b", ns)) and (condition(w, "QuotaReserved") or {}).get("status")
                   == "False" and w, what="b pending")
    foreign = {"status": {
        "conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                        "message": "reserved by someone else", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
        "admission": {"clusterQueue": ns, "podSetAssignments": [
            {"name": "main", "count": 1, "flavors": {"cpu": "plain"}, "resourceUsage": {"cpu": "3"}}]}}}
    kueue.cluster.kubectl("patch", "workload", b["metadata"]["name"], "-n", ns, "--subresource=status",
                          "--type=merge", "--field-manager=someone-else", "-p", yaml.safe_dump(foreign))
    eventually(lambda: sampler.sample() is not None and running(kueue, "b", ns), what="b started on it")
    kueue.apply(job("c", ns, "1"))
    waiting = eventually(lambda: (w := kueue.workload_of("c", ns)) and (condition(w, "QuotaReserved") or {}).get(
        "status") == "False" and w, what="c tried and told to wait")
    assert "insufficient" in condition(waiting, "QuotaReserved")["message"].lower() or \
        "couldn't assign flavors" in condition(waiting, "QuotaReserved")["message"]
    assert not running(kueue, "c", ns) and sampler.sample() == 6000
    kueue.cluster.kubectl("delete", "job", "a", "b", "-n", ns, "--wait=false")
    eventually(lambda: sampler.sample() is not None and running(kueue, "c", ns), what="c admitted once a and b went")
    assert sampler.peak <= 6000, f"ran {sampler.peak} milli-cpu: more than a and b"
