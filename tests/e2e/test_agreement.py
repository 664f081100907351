"""What ``pykueue simulate`` predicts is what ``pykueue controller`` does.

Deterministic scenarios from ``tests/scenarios/`` (Workloads only, arriving at a few distinct
instants, nothing timed beyond arrival) run through the simulator and live against a real API
server, with the same documents (converted to the stored v1beta2 as the conversion webhook would):
the final state of every workload and the flavors it holds must match, and so must the set of
workloads that were preempted.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pykueue.api.durations import parse_duration
from pykueue.controller.webhooks.conversion import KUEUE_V1BETA2, convert
from pykueue.devcluster.cluster import DevCluster
from tests.conftest import _cluster
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
]
KUEUE_KINDS = {"ResourceFlavor", "ClusterQueue", "Cohort", "LocalQueue", "Workload", "WorkloadPriorityClass",
               "AdmissionCheck"}
ORDER = ["Namespace", "PriorityClass", "WorkloadPriorityClass", "ResourceFlavor", "AdmissionCheck", "Cohort",
         "ClusterQueue", "LocalQueue"]
SETTLE_POLLS = 3  # unchanged snapshots, half a second apart, before a state counts as settled


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kueue]:
    """An API server of its own (scenarios reuse names like ``cq``) with the CRDs and a controller."""
    for cluster in _cluster(tmp_path_factory, 1):
        cluster.kubectl("apply", "--server-side", "-f", str(CRDS))
        cluster.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
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
        _clean(live.cluster, [_server_form(d) for d in _documents(name)[2]])
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
