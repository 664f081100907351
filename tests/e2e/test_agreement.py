"""What ``pykueue simulate`` predicts is what ``pykueue controller`` does.

Deterministic scenarios from ``tests/scenarios/`` (Workloads only, arriving at a few distinct
instants, nothing timed beyond arrival) run through the simulator and live against a real API
server, with the same documents (converted to the stored v1beta2 as the conversion webhook would):
the final state of every workload and the flavors it holds must match, and so must the set of
workloads that were preempted.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pykueue.api.durations import parse_duration
from pykueue.controller.webhooks.conversion import KUEUE_V1BETA2, convert
from pykueue.devcluster.cluster import DevCluster
from tests.conftest import start_cluster
from tests.e2e.conftest import CRDS, Kueue, condition, is_true
from tests.scenario_harness import SCENARIOS, simulate, split

pytestmark = pytest.mark.e2e

AGREEMENT = [
    "seed_single_cq_9cpu_36gi_5pods",
    "seed_nominal_before_borrowing",
    "seed_cohort_borrowing_21cpu",
    "flavor_fungibility_when_can_borrow",
    "flavor_uncovered_and_zero_requests",
    "namespace_selector_mismatch",
    "hierarchical_cohort_quota",
    "partial_admission_min_count",
    "queue_strict_fifo_blocks",
    "queue_best_effort_fifo_passes",
    "preempt_within_cq_newest_of_equals",
    "preempt_reverse_pass_spares_smaller",
    "preempt_hierarchical_reclaim",
    "preempt_reclaim_lent_quota",
    "lifecycle_max_execution_time_frees_quota",
    "lifecycle_recovery_timeout_deactivates",
]
KUEUE_KINDS = {"ResourceFlavor", "ClusterQueue", "Cohort", "LocalQueue", "Workload", "WorkloadPriorityClass",
               "AdmissionCheck"}
ORDER = ["Namespace", "PriorityClass", "WorkloadPriorityClass", "ResourceFlavor", "AdmissionCheck", "Cohort",
         "ClusterQueue", "LocalQueue"]
SETTLE_POLLS = 3  # unchanged snapshots, half a second apart, before a state counts as settled


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kueue]:
    """An API server of its own (scenarios reuse names like ``cq``) with the CRDs and a controller."""
    for cluster in start_cluster(tmp_path_factory, 1):
        cluster.kubectl("apply", "--server-side", "-f", str(CRDS))
        cluster.wait_for("Established", "crd", "--all", timeout=60)
        k = Kueue(cluster, tmp_path_factory.mktemp("agreement") / "controller.log")
        k.start()
        try:
            yield k
        finally:
            k.stop()


def _documents(name: str) -> tuple[dict[str, Any], str, list[dict[str, Any]]]:
    meta, text = split(SCENARIOS / f"{name}.yaml")
    return meta, text, [d for d in yaml.safe_load_all(text) if d]


def _server_form(doc: dict[str, Any]) -> dict[str, Any]:
    """The document as it is applied: v1beta2 for Kueue's kinds, without the simulator's annotations."""
    out = convert(doc, KUEUE_V1BETA2) if doc.get("kind") in KUEUE_KINDS else json.loads(json.dumps(doc))
    meta = out.setdefault("metadata", {})
    notes = {k: v for k, v in (meta.get("annotations") or {}).items() if not k.startswith("pykueue.dev/")}
    if notes:
        meta["annotations"] = notes
    else:
        meta.pop("annotations", None)
    return out


class PodsScript(threading.Thread):
    """The job side the simulator's readiness annotations script: once a Workload is admitted live, its
    PodsReady condition goes True after ``ready-after`` and False after ``unready-after``, as a job
    integration writes it (first admission only; the scenarios played here need no more)."""

    def __init__(self, kueue: Kueue, docs: list[dict[str, Any]]) -> None:
        super().__init__(daemon=True)
        self.kueue = kueue
        self.stop = threading.Event()
        self.steps: dict[tuple[str, str], list[tuple[float, bool]]] = {}
        for d in docs:
            notes = (d.get("metadata") or {}).get("annotations") or {}
            key = (d["metadata"].get("namespace", "default"), d["metadata"]["name"])
            if "pykueue.dev/ready-after" in notes:
                self.steps.setdefault(key, []).append((parse_duration(str(notes["pykueue.dev/ready-after"])), True))
            if "pykueue.dev/unready-after" in notes:
                self.steps.setdefault(key, []).append((parse_duration(str(notes["pykueue.dev/unready-after"])), False))

    def run(self) -> None:
        admitted: dict[tuple[str, str], float] = {}
        while not self.stop.is_set() and self.steps:
            for (ns, name), steps in list(self.steps.items()):
                if (ns, name) not in admitted:
                    if is_true(self.kueue.get("workload", name, ns), "Admitted"):
                        admitted[(ns, name)] = time.monotonic()
                    continue
                due = [s for s in steps if time.monotonic() - admitted[(ns, name)] >= s[0]]
                for step in sorted(due):
                    self._pods_ready(ns, name, step[1])
                    steps.remove(step)
                if not steps:
                    del self.steps[(ns, name)]
            self.stop.wait(0.1)

    def _pods_ready(self, ns: str, name: str, ready: bool) -> None:
        body = json.dumps({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                           "metadata": {"name": name, "namespace": ns},
                           "status": {"conditions": [{
                               "type": "PodsReady", "status": "True" if ready else "False",
                               "reason": "PodsReady" if ready else "PodsNotReady", "message": "agreement test",
                               "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}]}})
        self.kueue.cluster.kubectl("apply", "--server-side", "--subresource=status", "--force-conflicts",
                                   "--field-manager=agreement-job-side", "-f", "-", input=body)


def _arrival(doc: dict[str, Any]) -> float:
    value = ((doc.get("metadata") or {}).get("annotations") or {}).get("pykueue.dev/arrival", "0s")
    return parse_duration(str(value))


def _snapshot(kueue: Kueue, namespaces: set[str]) -> dict[str, dict[str, Any]]:
    out = {}
    for ns in sorted(namespaces):
        for wl in kueue.items("workloads.kueue.x-k8s.io", ns):
            key = f"{ns}/{wl['metadata']['name']}"
            if wl["spec"].get("active") is False:
                state = "Inactive"
            elif is_true(wl, "Admitted"):
                state = "Admitted"
            elif is_true(wl, "QuotaReserved"):
                state = "QuotaReserved"
            else:
                state = "Pending"
            flavors: dict[str, str] = {}
            for psa in ((wl.get("status") or {}).get("admission") or {}).get("podSetAssignments") or []:
                flavors.update(psa.get("flavors") or {})
            out[key] = {"state": state, "flavors": flavors if state != "Pending" else {},
                        "evaluated": condition(wl, "QuotaReserved") is not None,
                        "preempted": condition(wl, "Preempted") is not None,
                        "conditions": sorted((c["type"], c["status"], c["reason"])
                                             for c in (wl.get("status") or {}).get("conditions") or [])}
    return out


def _queued(kueue: Kueue) -> int:
    """Pending workloads the ClusterQueues' statuses count: the controller has taken them in."""
    return sum((cq.get("status") or {}).get("pendingWorkloads") or 0 for cq in kueue.items("clusterqueues", "default"))


def _settle(kueue: Kueue, namespaces: set[str], expected: int) -> dict[str, dict[str, Any]]:
    """Poll until every workload is accounted for and nothing changed for a while. A workload with no
    condition yet is accounted for once the queues count it pending: equivalents set aside with a
    workload the scheduler tried get no condition of their own, as upstream's bulk move."""
    deadline = time.monotonic() + 90
    last, same = None, 0
    while time.monotonic() < deadline:
        snap = _snapshot(kueue, namespaces)
        untold = sum(1 for w in snap.values() if not w["evaluated"])
        ready = len(snap) == expected and (untold == 0 or _queued(kueue) >= untold)
        same = same + 1 if ready and snap == last else 0
        if same >= SETTLE_POLLS:
            return snap
        last = snap
        time.sleep(0.5)
    raise AssertionError(f"workloads did not settle ({_queued(kueue)} queued): {json.dumps(last, indent=1)}")


def _clean(cluster: DevCluster, docs: list[dict[str, Any]]) -> None:
    """Delete what a scenario created, workloads first, and wait, so the next one starts empty."""
    def delete(kind: str, name: str, ns: str | None) -> None:
        args = ["delete", kind, name, "--ignore-not-found", "--wait=true", "--timeout=60s"]
        cluster.kubectl(*args, *(["-n", ns] if ns else []))

    kinds = {"Workload": "workloads.kueue.x-k8s.io", "LocalQueue": "localqueues.kueue.x-k8s.io",
             "ClusterQueue": "clusterqueues.kueue.x-k8s.io", "Cohort": "cohorts.kueue.x-k8s.io",
             "ResourceFlavor": "resourceflavors.kueue.x-k8s.io", "AdmissionCheck": "admissionchecks.kueue.x-k8s.io",
             "WorkloadPriorityClass": "workloadpriorityclasses.kueue.x-k8s.io",
             "PriorityClass": "priorityclasses.scheduling.k8s.io"}
    for kind in ("Workload", "LocalQueue", "ClusterQueue", "Cohort", "ResourceFlavor", "AdmissionCheck",
                 "WorkloadPriorityClass", "PriorityClass"):
        for d in docs:
            if d.get("kind") == kind:
                delete(kinds[kind], d["metadata"]["name"], d["metadata"].get("namespace"))


@pytest.mark.parametrize("name", AGREEMENT)
def test_simulate_predicts_what_the_controller_does(live: Kueue, name: str, tmp_path: Path) -> None:
    meta, text, docs = _documents(name)
    code, predicted, err = simulate(text, tmp_path)
    assert code == 0, err
    configs = [d for d in docs if d.get("kind") == "Configuration"]
    docs = [d for d in docs if d.get("kind") != "Configuration"]
    if configs:  # the controller runs with the scenario's Configuration, as simulate does
        config = tmp_path / "config.yaml"
        config.write_text(yaml.safe_dump(configs[0]))
        with live.restarted_with(config):
            _play(live, name, meta, docs, predicted)
    else:
        _play(live, name, meta, docs, predicted)


def _play(live: Kueue, name: str, meta: dict[str, Any], docs: list[dict[str, Any]],
          predicted: dict[str, Any] | None) -> None:
    arrival = {(d["metadata"].get("namespace", "default"), d["metadata"]["name"]): _arrival(d)
               for d in docs if d.get("kind") == "Workload"}
    docs = [_server_form(d) for d in docs]
    workloads = [d for d in docs if d["kind"] == "Workload"]
    for d in workloads:
        d["metadata"].setdefault("namespace", "default")

    def _at(d: dict[str, Any]) -> float:
        return arrival[(d["metadata"]["namespace"], d["metadata"]["name"])]

    others = sorted((d for d in docs if d["kind"] != "Workload"), key=lambda d: ORDER.index(d["kind"]))
    namespaces = {d["metadata"].get("namespace", "default") for d in workloads}
    namespaces |= {d["metadata"].get("namespace", "default") for d in others if d["kind"] == "LocalQueue"}
    declared = {d["metadata"]["name"] for d in others if d["kind"] == "Namespace"}
    pods = PodsScript(live, [d for d in _documents(name)[2] if d.get("kind") == "Workload"])
    pods.start()
    try:
        for ns in sorted(namespaces - declared - {"default"}):
            live.cluster.kubectl("create", "namespace", ns, check=False)
        if others:
            live.apply(others)
        started = time.monotonic()
        for at in sorted({_at(w) for w in workloads}):
            group = [w for w in workloads if _at(w) == at]
            live.apply(group)
            seen = sum(1 for w in workloads if _at(w) <= at)
            _settle(live, namespaces, seen)
            time.sleep(1.1)  # creationTimestamp has whole seconds: later arrivals are strictly newer
        # Kueue's own timed policies (an execution limit) act after the last arrival: the simulation's
        # last event is the earliest the live state can be final.
        assert predicted is not None
        time.sleep(max(0.0, started + predicted["endTime"] + 1.0 - time.monotonic()))
        actual = _settle(live, namespaces, len(workloads))
    finally:
        pods.stop.set()
        pods.join(10)
        _clean(live.cluster, [_server_form(d) for d in _documents(name)[2] if d.get("kind") != "Configuration"])
    assert predicted is not None
    expected = {}
    preempted = {e["workload"] for e in predicted["events"] if e["type"] == "Preempted"}
    for w in predicted["workloads"]:
        key = f"{w['namespace']}/{w['name']}"
        flavors: dict[str, str] = {}
        for psa in (w["admission"] or {}).get("podSetAssignments", []):
            flavors.update(psa["flavors"])
        expected[key] = {"state": w["state"], "flavors": flavors, "preempted": key in preempted}
    got = {k: {"state": v["state"], "flavors": v["flavors"], "preempted": v["preempted"]} for k, v in actual.items()}
    assert got == expected, (f"{name}: live differs from simulate\n{meta.get('description', '')}\n"
                             + json.dumps({k: v["conditions"] for k, v in actual.items()}, indent=1))
