"""Random valid simulator inputs, for the "every run ends" fuzz test and ``bench/fuzz_settle.py``.

A scenario mixes what can make a run hang: flavors and cohorts (nested, with quotas and limits),
every preemption policy, fair sharing, waitForPodsReady (timeouts and backoffs down to 0 s, requeuing
limits or none), admission check scripts (Retry, Ready, Rejected, Pending, delays down to 0 s), pods
that are never ready or stop being ready, and timed changes (quotas, stop policies, deactivation). Times
carry milliseconds so that sums of durations are not round numbers of seconds.

Durations are drawn so that a run with ``--until`` needs at most a few thousand instants: the shortest
repeating delay is 0.5 s and ``until`` is at most an hour.
"""

from __future__ import annotations

import random
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pykueue.api.durations import parse_duration
from pykueue.api.loader import load_paths
from pykueue.engine.events import EngineError
from pykueue.sim.simulator import Simulation

V2 = "kueue.x-k8s.io/v1beta2"
FLAVORS = ("f0", "f1", "f2")
DELAYS = ("0s", "500ms", "1s", "2.5s", "30s")
ARRIVALS = ("0s", "3ms", "1.003s", "2s", "10.25s", "60s")
# Instants one scenario may use; a run past this is a hang. The worst legitimate run (a dozen
# workloads, each evicted by its own timers up to the idle bound between progress events) is far
# below it; see ``Outcome.steps`` in bench/fuzz_settle.py for the figures.
STEP_BUDGET = 200_000


@dataclass(slots=True)
class Outcome:
    exit: int  # 0 or 3, as the CLI would exit
    steps: int
    message: str = ""


def _quantity(rng: random.Random, low: int, high: int) -> int:
    return rng.randint(low, high)


def _resource_groups(rng: random.Random, flavors: list[str], with_limits: bool, zero_ok: bool = True) -> list[dict]:
    out = []
    for name in flavors:
        nominal = _quantity(rng, 0 if zero_ok else 1, 8)
        q: dict[str, Any] = {"name": "cpu", "nominalQuota": nominal}
        if with_limits and rng.random() < 0.3:
            q["borrowingLimit"] = _quantity(rng, 0, 6)
        if with_limits and rng.random() < 0.3:
            q["lendingLimit"] = _quantity(rng, 0, nominal)
        out.append({"name": name, "resources": [q]})
    return [{"coveredResources": ["cpu"], "flavors": out}]


def _config(rng: random.Random) -> dict | None:
    cfg: dict[str, Any] = {"apiVersion": "config.kueue.x-k8s.io/v1beta1", "kind": "Configuration"}
    used = False
    if rng.random() < 0.6:
        used = True
        wait: dict[str, Any] = {"enable": True, "blockAdmission": rng.random() < 0.3}
        if rng.random() < 0.8:
            wait["timeout"] = rng.choice(("0s", "1s", "2.5s", "30s", "5m"))
        if rng.random() < 0.3:
            wait["recoveryTimeout"] = rng.choice(("0s", "1s", "30s"))
        strategy: dict[str, Any] = {}
        if rng.random() < 0.5:
            strategy["backoffBaseSeconds"] = rng.choice((0, 1, 60))
        if rng.random() < 0.3:
            strategy["backoffMaxSeconds"] = rng.choice((0, 1, 120))
        if rng.random() < 0.4:
            strategy["backoffLimitCount"] = rng.choice((0, 1, 3))
        if rng.random() < 0.3:
            strategy["timestamp"] = rng.choice(("Eviction", "Creation"))
        if strategy:
            wait["requeuingStrategy"] = strategy
        cfg["waitForPodsReady"] = wait
    if rng.random() < 0.35:
        used = True
        fair: dict[str, Any] = {"enable": True}
        if rng.random() < 0.5:
            fair["preemptionStrategies"] = rng.choice(
                (["LessThanOrEqualToFinalShare"], ["LessThanInitialShare"],
                 ["LessThanOrEqualToFinalShare", "LessThanInitialShare"])
            )
        cfg["fairSharing"] = fair
    return cfg if used else None


def _check_script(rng: random.Random, checks: list[str]) -> str:
    parts = []
    for check in checks:
        if rng.random() < 0.2:
            continue  # not scripted: stays Pending
        steps = [
            f"{rng.choice(('Ready', 'Ready', 'Retry', 'Retry', 'Rejected', 'Pending'))}@{rng.choice(DELAYS)}"
            for _ in range(rng.randint(1, 3))
        ]
        parts.append(f"{check}={','.join(steps)}")
    return ";".join(parts)


def _pod_set(rng: random.Random) -> dict:
    count = rng.randint(1, 4)
    ps: dict[str, Any] = {
        "name": "main",
        "count": count,
        "template": {"spec": {"restartPolicy": "Never", "containers": [
            {"name": "c", "image": "x", "resources": {"requests": {"cpu": rng.choice(("500m", "1", "2"))}}}
        ]}},
    }
    if count > 1 and rng.random() < 0.2:
        ps["minCount"] = rng.randint(1, count)
    return ps


def random_scenario(rng: random.Random) -> tuple[str, str | None]:
    """One valid input as YAML text, and the ``--until`` to run it with (None: run until settled)."""
    docs: list[dict] = []
    cfg = _config(rng)
    if cfg is not None:
        docs.append(cfg)
    flavors = list(FLAVORS[: rng.randint(1, 3)])
    for f in flavors:
        docs.append({"apiVersion": V2, "kind": "ResourceFlavor", "metadata": {"name": f}})
    checks = [f"check{i}" for i in range(rng.randint(0, 2))] if rng.random() < 0.4 else []
    for c in checks:
        docs.append({"apiVersion": V2, "kind": "AdmissionCheck", "metadata": {"name": c},
                     "spec": {"controllerName": "example.com/fuzz"}})
    cohorts = [f"co{i}" for i in range(rng.randint(0, 3))]
    for i, name in enumerate(cohorts):
        spec: dict[str, Any] = {}
        if i > 0 and rng.random() < 0.5:
            spec["parentName"] = rng.choice(cohorts[:i])
        if rng.random() < 0.3:
            spec["resourceGroups"] = _resource_groups(rng, flavors, with_limits=False)
        if rng.random() < 0.2:
            spec["fairSharing"] = {"weight": rng.choice(("0", "1", "2"))}
        docs.append({"apiVersion": V2, "kind": "Cohort", "metadata": {"name": name}, "spec": spec})
    n_cqs = rng.randint(1, 4)
    cq_docs = []
    for i in range(n_cqs):
        cohort = rng.choice(cohorts) if cohorts and rng.random() < 0.8 else None
        reclaim = rng.choice(("Never", "LowerPriority", "Any"))
        preemption: dict[str, Any] = {
            "withinClusterQueue": rng.choice(("Never", "LowerPriority", "LowerOrNewerEqualPriority")),
            "reclaimWithinCohort": reclaim,
        }
        if reclaim != "Never" and rng.random() < 0.4:
            borrow: dict[str, Any] = {"policy": "LowerPriority"}
            if rng.random() < 0.5:
                borrow["maxPriorityThreshold"] = rng.choice((0, 10))
            preemption["borrowWithinCohort"] = borrow
        own = rng.sample(flavors, rng.randint(1, len(flavors)))
        spec = {
            "namespaceSelector": {},
            "queueingStrategy": rng.choice(("BestEffortFIFO", "StrictFIFO")),
            "preemption": preemption,
            "resourceGroups": _resource_groups(rng, own, with_limits=cohort is not None, zero_ok=False),
        }
        if cohort is not None:
            spec["cohortName"] = cohort
        if rng.random() < 0.3:
            spec["flavorFungibility"] = {
                "whenCanBorrow": rng.choice(("MayStopSearch", "TryNextFlavor")),
                "whenCanPreempt": rng.choice(("MayStopSearch", "TryNextFlavor")),
            }
        if checks and rng.random() < 0.7:
            rules = []
            for c in rng.sample(checks, rng.randint(1, len(checks))):
                rule: dict[str, Any] = {"name": c}
                if rng.random() < 0.3:
                    rule["onFlavors"] = [rng.choice(own)]
                rules.append(rule)
            spec["admissionChecksStrategy"] = {"admissionChecks": rules}
        if rng.random() < 0.3:
            spec["fairSharing"] = {"weight": rng.choice(("0", "1", "2"))}
        doc = {"apiVersion": V2, "kind": "ClusterQueue", "metadata": {"name": f"cq{i}"}, "spec": spec}
        cq_docs.append(doc)
        docs.append(doc)
        docs.append({"apiVersion": V2, "kind": "LocalQueue", "metadata": {"name": f"q{i}", "namespace": "default"},
                     "spec": {"clusterQueue": f"cq{i}"}})
    workloads = []
    for i in range(rng.randint(1, 10)):
        notes: dict[str, str] = {"pykueue.dev/arrival": rng.choice(ARRIVALS)}
        if rng.random() < 0.6:
            notes["pykueue.dev/runtime"] = rng.choice(("1s", "10.5s", "2m", "1h"))
        if rng.random() < 0.4:
            notes["pykueue.dev/ready-after"] = rng.choice(("0s", "2s", "40s", "never"))
        if rng.random() < 0.15:
            notes["pykueue.dev/unready-after"] = rng.choice(("0s", "5s"))
            notes["pykueue.dev/unready-for"] = rng.choice(("1s", "never"))
        if checks and rng.random() < 0.7:
            script = _check_script(rng, checks)
            if script:
                notes["pykueue.dev/admission-checks"] = script
        doc = {
            "apiVersion": V2, "kind": "Workload",
            "metadata": {"name": f"w{i}", "namespace": "default", "annotations": notes},
            "spec": {"queueName": f"q{rng.randrange(n_cqs)}", "priority": rng.choice((0, 10, 20)),
                     "podSets": [_pod_set(rng)]},
        }
        workloads.append(doc)
        docs.append(doc)
    changed: set[tuple[str, str]] = set()  # (name, at): one change per object and instant
    for _ in range(rng.randint(0, 3)):
        at = rng.choice(("1s", "5.5s", "30s", "90s"))
        if rng.random() < 0.5:
            base = rng.choice(cq_docs)
            if (base["metadata"]["name"], at) in changed:
                continue
            changed.add((base["metadata"]["name"], at))
            spec = dict(base["spec"])
            if rng.random() < 0.5:
                spec["stopPolicy"] = rng.choice(("None", "Hold", "HoldAndDrain"))
            else:
                flavors_of = [f["name"] for f in spec["resourceGroups"][0]["flavors"]]
                spec["resourceGroups"] = _resource_groups(rng, flavors_of, with_limits=False, zero_ok=False)
            name = base["metadata"]["name"]
            docs.append({"apiVersion": V2, "kind": "ClusterQueue",
                         "metadata": {"name": name, "annotations": {"pykueue.dev/at": at}}, "spec": spec})
        else:
            base = rng.choice(workloads)
            if (base["metadata"]["name"], at) in changed:
                continue
            changed.add((base["metadata"]["name"], at))
            meta = {"name": base["metadata"]["name"], "namespace": "default", "annotations": {"pykueue.dev/at": at}}
            docs.append({"apiVersion": V2, "kind": "Workload", "metadata": meta,
                         "spec": {**base["spec"], "active": rng.random() < 0.5}})
    until = rng.choice((None, None, None, "30s", "10m", "1h"))
    return "---\n".join(yaml.safe_dump(d, sort_keys=False) for d in docs), until


def play(text: str, until: str | None, step_budget: int = STEP_BUDGET) -> Outcome:
    """Load and simulate one scenario as ``pykueue simulate`` does; a hang raises StepBudgetExceeded.
    An input the loader rejects is a bug of the generator: AssertionError."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fuzz.yaml"
        path.write_text(text)
        inputs, problems = load_paths([str(path)], None)
    assert not problems, "\n".join(str(p) for p in problems)
    sim = Simulation(inputs, until=None if until is None else parse_duration(until), step_budget=step_budget)
    try:
        sim.run()
    except EngineError as e:
        return Outcome(3, sim.steps, str(e))
    return Outcome(0, sim.steps)
