"""The promise as a property, through the controller on the real control plane: whatever sequence of
Job and Workload edits a user or the cluster makes (Jobs created at two priorities, a running Job's
parallelism raised, a Workload deleted while another finalizer holds it, a Workload's count lowered, a
Job deleted and re-created under its name, the Job controller frozen for a while, another writer
taking a Workload's admission off its status, plain Pods created and a running one's
``kueue.x-k8s.io/managed`` label removed, the namespace taken out of ``managedJobsNamespaceSelector`` and
put back), what runs in a 3 cpu ClusterQueue, counted from its Jobs and Pods (``running.Sampler``),
never exceeds 3 cpu.

It runs on the shared integrations controller (the Pod integration on, namespaces selected unless
labelled ``UNSELECTED``). While the namespace is out of the selector no Job or Pod is created or grown
there: pykueue no longer manages it, so what a user starts then is not held to any quota, by design
(upstream's the same); what it admitted before still counts until it has stopped."""

from __future__ import annotations

import contextlib
import itertools
import json
import time

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.e2e.conftest import UNSELECTED, Kueue
from tests.e2e.objects import PLAIN_FLAVOR, cluster_queue, job, local_queue, priority_classes
from tests.e2e.pod_objects import pod
from tests.e2e.running import Sampler

pytestmark = pytest.mark.e2e

QUOTA = 3000
HOLD = "example.com/hold"
NAMES = ("a", "b", "c")  # Jobs
PODS = ("p", "q")  # plain Pods
MANAGED = "kueue.x-k8s.io/managed"
_namespaces = itertools.count()

steps = st.lists(st.one_of(
    st.tuples(st.just("create"), st.sampled_from(NAMES), st.integers(1, 2), st.booleans()),
    st.tuples(st.just("grow"), st.sampled_from(NAMES)),
    st.tuples(st.just("delete-workload"), st.sampled_from(NAMES + PODS)),
    st.tuples(st.just("shrink-workload"), st.sampled_from(NAMES)),
    st.tuples(st.just("recreate"), st.sampled_from(NAMES)),
    st.tuples(st.just("lag"), st.integers(2, 4)),
    st.tuples(st.just("take-admission"), st.sampled_from(NAMES + PODS)),
    st.tuples(st.just("pod"), st.sampled_from(PODS), st.booleans()),
    st.tuples(st.just("unlabel-pod"), st.sampled_from(PODS)),
    st.tuples(st.just("unselect")),
    st.tuples(st.just("reselect")),
    st.tuples(st.just("let-go")),
), min_size=3, max_size=8)
# What only a managed namespace may see (a user's new or grown job there is not held to quota otherwise).
CREATING = ("create", "grow", "recreate", "pod")


def _watch(sampler: Sampler, seconds: float) -> None:
    """Sample what runs for a while (a sampling window, not a wait before a check)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        sampler.sample()


def _let_go(kueue: Kueue, ns: str) -> None:
    """Take the test's finalizer off every Workload that has it (their deletion completes)."""
    for wl in kueue.items("workloads.kueue.x-k8s.io", ns):
        finalizers = wl["metadata"].get("finalizers") or []
        if HOLD in finalizers:
            kept = [f for f in finalizers if f != HOLD]
            kueue.cluster.kubectl("patch", "workload", wl["metadata"]["name"], "-n", ns, "--type=merge", "-p",
                                  json.dumps({"metadata": {"finalizers": kept or None}}), check=False)


def _workload_of(kueue: Kueue, name: str, ns: str) -> dict | None:
    """The Workload of the Job or the Pod ``name``."""
    for wl in kueue.items("workloads.kueue.x-k8s.io", ns):
        if any(o.get("kind") in ("Job", "Pod") and o.get("name") == name
               for o in wl["metadata"].get("ownerReferences") or []):
            return wl
    return None


def _selected(kueue: Kueue, ns: str) -> bool:
    return UNSELECTED not in ((kueue.get("namespace", ns) or {}).get("metadata", {}).get("labels") or {})


def _apply_step(kueue: Kueue, ns: str, step: tuple, sampler: Sampler) -> None:
    op = step[0]
    if op in CREATING and not _selected(kueue, ns):
        pass
    elif op == "create":
        _, name, cpu, high = step
        if kueue.get("job", name, ns) is not None:
            return  # already there: a user's second apply of it would fight over spec.suspend
        manifest = job(name, ns, str(cpu), priority_class=f"{ns}-{'high' if high else 'low'}")
        kueue.apply(manifest.replace("completions: 1", "completions: 4"))
    elif op == "grow":
        kueue.cluster.kubectl("patch", "job", step[1], "-n", ns, "--type=merge", "-p", '{"spec":{"parallelism":2}}',
                              check=False)
    elif op == "pod":
        _, name, high = step
        if kueue.get("pod", name, ns) is None:
            kueue.apply([pod(name, ns, "1", priority_class=f"{ns}-{'high' if high else 'low'}")])
    elif op == "unlabel-pod":
        # the Pod's managed label removed (by a user or another controller): pykueue no longer sees it
        # as its own, but its quota stays held while it runs
        kueue.cluster.kubectl("label", "pod", step[1], "-n", ns, f"{MANAGED}-", check=False)
    elif op in ("unselect", "reselect"):
        kueue.cluster.kubectl("label", "namespace", ns, f"{UNSELECTED}=true" if op == "unselect" else f"{UNSELECTED}-",
                              "--overwrite", check=False)
    elif op == "delete-workload":
        wl = _workload_of(kueue, step[1], ns)
        if wl is not None:
            name = wl["metadata"]["name"]
            kueue.cluster.kubectl("patch", "workload", name, "-n", ns, "--type=json", "-p", json.dumps(
                [{"op": "add", "path": "/metadata/finalizers/-", "value": HOLD}]), check=False)
            kueue.cluster.kubectl("delete", "workload", name, "-n", ns, "--wait=false", check=False)
    elif op == "shrink-workload":
        # a user lowers an admitted Workload's count (refused unless elastic) or a pending one's
        wl = _workload_of(kueue, step[1], ns)
        if wl is not None:
            kueue.cluster.kubectl("patch", "workload", wl["metadata"]["name"], "-n", ns, "--type=json", "-p",
                                  json.dumps([{"op": "replace", "path": "/spec/podSets/0/count", "value": 1}]),
                                  check=False)
    elif op == "recreate":
        found = kueue.get("job", step[1], ns)
        if found is not None:
            kueue.cluster.kubectl("delete", "job", step[1], "-n", ns, "--wait=true", "--timeout=30s", check=False)
            kueue.apply(job(step[1], ns, "1", priority_class=f"{ns}-low").replace("completions: 1", "completions: 4"))
    elif op == "take-admission":
        # another writer (a deposed leader, a user) says the Workload holds nothing: the controller
        # still counts it while its job runs, and writes the admission back
        wl = _workload_of(kueue, step[1], ns)
        if wl is not None and (wl.get("status") or {}).get("admission"):
            foreign = {"status": {"admission": None, "conditions": [{
                "type": "QuotaReserved", "status": "False", "reason": "Pending", "message": "another writer's",
                "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}]}}
            kueue.cluster.kubectl("patch", "workload", wl["metadata"]["name"], "-n", ns, "--subresource=status",
                                  "--type=merge", "-p", json.dumps(foreign), check=False)
    elif op == "lag":
        with kueue.cluster.paused("kube-controller-manager"):
            _watch(sampler, step[1])
    elif op == "let-go":
        _let_go(kueue, ns)
    _watch(sampler, 1.5)


@settings(max_examples=3, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(steps=steps)
# every step the derandomized examples may not draw, once: a Pod whose label is taken off while it runs,
# then its Workload deleted under another finalizer; the namespace out of the selector while a higher
# Job would preempt, and back
@example(steps=[("pod", "p", False), ("create", "a", 2, False), ("unlabel-pod", "p"), ("delete-workload", "p"),
                ("unselect",), ("pod", "q", True), ("reselect",), ("create", "b", 2, True), ("let-go",)])
def test_what_runs_never_exceeds_the_quota(integrations_kueue: Kueue, steps: list[tuple]) -> None:
    kueue = integrations_kueue
    ns = f"count-what-runs-{next(_namespaces)}"
    kueue.cluster.kubectl("create", "namespace", ns)
    sampler = Sampler(kueue, ns)
    try:
        kueue.apply(PLAIN_FLAVOR)
        kueue.apply(priority_classes(ns))
        kueue.apply(cluster_queue(ns, "3", preemption="{withinClusterQueue: LowerPriority}"))
        kueue.apply(local_queue(ns, ns))
        for step in steps:
            _apply_step(kueue, ns, step, sampler)
            assert sampler.peak <= QUOTA, f"ran {sampler.peak} milli-cpu on a 3 cpu queue after {step}"
        _let_go(kueue, ns)
        _watch(sampler, 5)  # the Job controller catches up; whatever it starts is counted
        assert sampler.peak <= QUOTA, f"ran {sampler.peak} milli-cpu on a 3 cpu queue"
        assert sampler.samples > 0
    finally:
        with contextlib.suppress(Exception):
            _let_go(kueue, ns)
        kueue.cluster.kubectl("delete", "namespace", ns, "--wait=false", check=False)
