"""ClusterQueue: both API versions convert to the same engine object; every rule reports its field."""

import pytest

from pykueue.engine import model

from .helpers import Loader, only_problem

V1BETA1 = """
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata:
  name: team-a-cq
spec:
  cohort: team-ab
  namespaceSelector:
    matchLabels: {team: a}
    matchExpressions:
    - {key: tier, operator: In, values: [gold]}
  queueingStrategy: StrictFIFO
  stopPolicy: Hold
  preemption:
    reclaimWithinCohort: Any
    borrowWithinCohort:
      policy: LowerPriority
      maxPriorityThreshold: 100
    withinClusterQueue: LowerPriority
  flavorFungibility:
    whenCanBorrow: Borrow
    whenCanPreempt: Preempt
  fairSharing:
    weight: 500m
  admissionChecks: [check-a]
  resourceGroups:
  - coveredResources: ["cpu", "memory"]
    flavors:
    - name: default-flavor
      resources:
      - name: cpu
        nominalQuota: 9
        borrowingLimit: 1
        lendingLimit: "2.5"
      - name: memory
        nominalQuota: 36Gi
"""

V1BETA2 = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: team-a-cq
spec:
  cohortName: team-ab
  namespaceSelector:
    matchLabels: {team: a}
    matchExpressions:
    - {key: tier, operator: In, values: [gold]}
  queueingStrategy: StrictFIFO
  stopPolicy: Hold
  preemption:
    reclaimWithinCohort: Any
    borrowWithinCohort:
      policy: LowerPriority
      maxPriorityThreshold: 100
    withinClusterQueue: LowerPriority
  flavorFungibility:
    whenCanBorrow: MayStopSearch
    whenCanPreempt: MayStopSearch
  fairSharing:
    weight: 0.5
  admissionChecksStrategy:
    admissionChecks:
    - name: check-a
  resourceGroups:
  - coveredResources: ["cpu", "memory"]
    flavors:
    - name: default-flavor
      resources:
      - name: cpu
        nominalQuota: "9"
        borrowingLimit: 1000m
        lendingLimit: 2500m
      - name: memory
        nominalQuota: 38654705664
"""

EXPECTED = model.ClusterQueue(
    name="team-a-cq",
    cohort="team-ab",
    resource_groups=(
        model.ResourceGroup(
            covered_resources=("cpu", "memory"),
            flavors=(
                model.FlavorQuotas(
                    "default-flavor",
                    {
                        "cpu": model.ResourceQuota(nominal=9000, borrowing_limit=1000, lending_limit=2500),
                        "memory": model.ResourceQuota(nominal=36 * 2**30),
                    },
                ),
            ),
        ),
    ),
    namespace_selector=model.LabelSelector(
        match_labels={"team": "a"}, match_expressions=(model.Requirement("tier", "In", ("gold",)),)
    ),
    queueing_strategy="StrictFIFO",
    preemption=model.PreemptionPolicy(
        within_cluster_queue="LowerPriority",
        reclaim_within_cohort="Any",
        borrow_within_cohort="LowerPriority",
        max_priority_threshold=100,
    ),
    flavor_fungibility=model.FlavorFungibility(
        when_can_borrow="MayStopSearch", when_can_preempt="MayStopSearch"
    ),
    stop_policy="Hold",
    fair_weight_milli=500,
    admission_checks=(model.AdmissionCheckRule("check-a"),),
)


@pytest.mark.parametrize("manifest", [V1BETA1, V1BETA2], ids=["v1beta1", "v1beta2"])
def test_both_versions_give_the_same_engine_object(load: Loader, manifest: str) -> None:
    inputs, problems = load(manifest)
    assert problems == []
    assert inputs.cluster_queues == [EXPECTED]


def test_defaults(load: Loader) -> None:
    inputs, problems = load(
        """
        apiVersion: kueue.x-k8s.io/v1beta2
        kind: ClusterQueue
        metadata: {name: cq}
        """
    )
    assert problems == []
    assert inputs.cluster_queues == [model.ClusterQueue(name="cq")]
    cq = inputs.cluster_queues[0]
    assert cq.namespace_selector is None  # absent selector: no namespace is eligible
    assert cq.flavor_fungibility == model.FlavorFungibility("MayStopSearch", "TryNextFlavor", None)


def _cq(spec: str, api_version: str = "kueue.x-k8s.io/v1beta2", name: str = "cq") -> str:
    indented = "\n".join("  " + line for line in spec.strip("\n").splitlines())
    return f"apiVersion: {api_version}\nkind: ClusterQueue\nmetadata:\n  name: {name}\nspec:\n{indented}\n"


def _group(resources: str, *flavors: str, covered: str = "[cpu]") -> str:
    out = f"- coveredResources: {covered}\n  flavors:\n"
    for flavor in flavors:
        out += f"  - name: {flavor}\n    resources:\n"
        for line in resources.strip("\n").splitlines():
            out += "    " + line + "\n"
    return out


CPU_1 = "- name: cpu\n  nominalQuota: 1\n"

INVALID = {
    "name is a DNS subdomain": (
        _cq("queueingStrategy: BestEffortFIFO", name="Team_A"),
        "metadata.name",
        "RFC 1123 subdomain",
    ),
    "cohort name": (_cq("cohortName: Bad_Cohort"), "spec.cohortName", "RFC 1123 subdomain"),
    "queueing strategy enum": (
        _cq("queueingStrategy: FIFO"),
        "spec.queueingStrategy",
        'Unsupported value: "FIFO"',
    ),
    "stop policy enum": (_cq("stopPolicy: Stop"), "spec.stopPolicy", 'Unsupported value: "Stop"'),
    "withinClusterQueue enum": (
        _cq("preemption:\n  withinClusterQueue: Any"),
        "spec.preemption.withinClusterQueue",
        'Unsupported value: "Any"',
    ),
    "reclaimWithinCohort enum": (
        _cq("preemption:\n  reclaimWithinCohort: LowerOrNewerEqualPriority"),
        "spec.preemption.reclaimWithinCohort",
        "Unsupported value",
    ),
    "borrowWithinCohort policy enum": (
        _cq("preemption:\n  reclaimWithinCohort: Any\n  borrowWithinCohort:\n    policy: Any"),
        "spec.preemption.borrowWithinCohort.policy",
        "Unsupported value",
    ),
    "borrowWithinCohort needs reclaimWithinCohort": (
        _cq("preemption:\n  borrowWithinCohort:\n    policy: LowerPriority"),
        "spec.preemption",
        "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never",
    ),
    "v1beta2 has no Borrow": (
        _cq("flavorFungibility:\n  whenCanBorrow: Borrow"),
        "spec.flavorFungibility.whenCanBorrow",
        'Unsupported value: "Borrow"',
    ),
    "v1beta1 has no Preempt for whenCanBorrow": (
        _cq("flavorFungibility:\n  whenCanBorrow: Preempt", api_version="kueue.x-k8s.io/v1beta1"),
        "spec.flavorFungibility.whenCanBorrow",
        'Unsupported value: "Preempt"',
    ),
    "preference needs TryNextFlavor": (
        _cq("flavorFungibility:\n  whenCanPreempt: MayStopSearch\n  preference: PreemptionOverBorrowing"),
        "spec.flavorFungibility.preference",
        "requires both whenCanBorrow and whenCanPreempt to be TryNextFlavor",
    ),
    "unknown field": (_cq("cohort: x"), "spec.cohort", 'unknown field "cohort"'),
    "typo in a nested field": (
        _cq("resourceGroups:\n" + _group("- name: cpu\n  nominalQuota: 1\n  nominalQuta: 1\n", "f")),
        "spec.resourceGroups[0].flavors[0].resources[0].nominalQuta",
        "unknown field",
    ),
    "missing nominalQuota": (
        _cq("resourceGroups:\n" + _group("- name: cpu\n", "f")),
        "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota",
        "Required value",
    ),
    "bad quantity": (
        _cq("resourceGroups:\n" + _group("- name: cpu\n  nominalQuota: 1 cpu\n", "f")),
        "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota",
        "invalid quantity",
    ),
    "negative nominalQuota": (
        _cq("resourceGroups:\n" + _group("- name: cpu\n  nominalQuota: -1\n", "f")),
        "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota",
        "must be greater than or equal to 0",
    ),
    "resource name differs from coveredResources": (
        _cq(
            "resourceGroups:\n"
            + _group(
                "- name: cpu\n  nominalQuota: 1\n- name: memory\n  nominalQuota: 1\n",
                "f1",
                covered="[cpu, memory]",
            )
            + _group(
                "- name: gpu\n  nominalQuota: 1\n- name: cpu\n  nominalQuota: 1\n", "f2", covered="[gpu, tpu]"
            )
        ),
        "spec.resourceGroups[1].flavors[0].resources[1].name",
        'Invalid value: "cpu": must match the name in coveredResources ("tpu")',
    ),
    "flavor lists too few resources": (
        _cq("resourceGroups:\n" + _group(CPU_1, "f", covered="[cpu, memory]")),
        "spec.resourceGroups[0].flavors[0].resources",
        "same number of resources as the coveredResources",
    ),
    "resource in two groups": (
        _cq("resourceGroups:\n" + _group(CPU_1, "f1") + _group(CPU_1, "f2")),
        "spec.resourceGroups[1].coveredResources[0]",
        'Duplicate value: "cpu"',
    ),
    "flavor in two groups": (
        _cq(
            "resourceGroups:\n"
            + _group(CPU_1, "f1")
            + _group("- name: memory\n  nominalQuota: 1\n", "f1", covered="[memory]")
        ),
        "spec.resourceGroups[1].flavors[0].name",
        'Duplicate value: "f1"',
    ),
    "resource listed twice in a flavor": (
        _cq(
            "resourceGroups:\n"
            + _group(
                "- name: cpu\n  nominalQuota: 1\n- name: cpu\n  nominalQuota: 2\n",
                "f",
                covered="[cpu, memory]",
            )
        ),
        "spec.resourceGroups[0].flavors[0].resources[1].name",
        'Duplicate value: "cpu"',
    ),
    "flavor name": (
        _cq("resourceGroups:\n" + _group(CPU_1, "Flavor_1")),
        "spec.resourceGroups[0].flavors[0].name",
        "RFC 1123 subdomain",
    ),
    "resource name syntax": (
        _cq("resourceGroups:\n" + _group("- name: a/b/c\n  nominalQuota: 1\n", "f", covered="[a/b/c]")),
        "spec.resourceGroups[0].coveredResources[0]",
        "qualified name",
    ),
    "borrowingLimit needs a cohort": (
        _cq("resourceGroups:\n" + _group("- name: cpu\n  nominalQuota: 1\n  borrowingLimit: 1\n", "f")),
        "spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit",
        "must be nil when cohort is empty",
    ),
    "lendingLimit needs a cohort": (
        _cq("resourceGroups:\n" + _group("- name: cpu\n  nominalQuota: 1\n  lendingLimit: 1\n", "f")),
        "spec.resourceGroups[0].flavors[0].resources[0].lendingLimit",
        "must be nil when cohort is empty",
    ),
    "lendingLimit at most nominalQuota": (
        _cq(
            "cohortName: c\nresourceGroups:\n"
            + _group("- name: cpu\n  nominalQuota: 1\n  lendingLimit: 1001m\n", "f")
        ),
        "spec.resourceGroups[0].flavors[0].resources[0].lendingLimit",
        "must be less than or equal to the nominalQuota",
    ),
    "negative borrowingLimit": (
        _cq(
            "cohortName: c\nresourceGroups:\n"
            + _group("- name: cpu\n  nominalQuota: 1\n  borrowingLimit: -1\n", "f")
        ),
        "spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit",
        "must be greater than or equal to 0",
    ),
    "negative fair sharing weight": (
        _cq("fairSharing:\n  weight: -1"),
        "spec.fairSharing.weight",
        "greater than or equal to 0",
    ),
    "tiny fair sharing weight": (
        _cq("fairSharing:\n  weight: 1n"),
        "spec.fairSharing.weight",
        "weight must be > 10e-9",
    ),
    "selector operator": (
        _cq("namespaceSelector:\n  matchExpressions:\n  - {key: a, operator: Equals, values: [b]}"),
        "spec.namespaceSelector.matchExpressions[0].operator",
        'Unsupported value: "Equals"',
    ),
    "selector In needs values": (
        _cq("namespaceSelector:\n  matchExpressions:\n  - {key: a, operator: In}"),
        "spec.namespaceSelector.matchExpressions[0].values",
        "Required value",
    ),
    "selector label value": (
        _cq("namespaceSelector:\n  matchLabels:\n    team: 'not valid!'"),
        "spec.namespaceSelector.matchLabels[team]",
        "valid label",
    ),
    "onFlavors must be flavors of the queue": (
        _cq(
            "resourceGroups:\n"
            + _group(CPU_1, "f")
            + "admissionChecksStrategy:\n  admissionChecks:\n  - name: ac\n    onFlavors: [f, other]"
        ),
        "spec.admissionChecksStrategy.admissionChecks[0].onFlavors[1]",
        'Unsupported value: "other"',
    ),
    "admissionChecksStrategy needs checks": (
        _cq("admissionChecksStrategy:\n  admissionChecks: []"),
        "spec.admissionChecksStrategy.admissionChecks",
        "must have at least 1 item",
    ),
    "v1beta1 admissionChecks and strategy together": (
        _cq(
            "admissionChecks: [a]\nadmissionChecksStrategy:\n  admissionChecks:\n  - name: b",
            api_version="kueue.x-k8s.io/v1beta1",
        ),
        "spec",
        "Either AdmissionChecks or AdmissionCheckStrategy",
    ),
    "cluster-scoped": (
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata:\n  name: cq\n  namespace: team-a\n",
        "metadata.namespace",
        "not allowed on this type",
    ),
    "integer fields are not strings": (
        _cq(
            "preemption:\n  reclaimWithinCohort: Any\n  borrowWithinCohort:\n    maxPriorityThreshold: '100'"
        ),
        "spec.preemption.borrowWithinCohort.maxPriorityThreshold",
        "must be an integer, got string",
    ),
}


@pytest.mark.parametrize(("manifest", "path", "message"), list(INVALID.values()), ids=list(INVALID))
def test_invalid_cluster_queue(load: Loader, manifest: str, path: str, message: str) -> None:
    inputs, problems = load(manifest)
    problem = only_problem(problems)
    assert (problem.kind, problem.path) == ("ClusterQueue", path)
    assert message in problem.message
    assert inputs.cluster_queues == []


def _many(count: int, template: str) -> str:
    return "".join(template.format(i=i) for i in range(count))


@pytest.mark.parametrize(
    ("spec", "path"),
    [
        (
            "resourceGroups:\n"
            + _many(
                17,
                "- coveredResources: [r{i}]\n  flavors:\n  - name: f{i}\n    resources:\n    - {{name: r{i}, nominalQuota: 1}}\n",
            ),
            "spec.resourceGroups",
        ),
        (
            "resourceGroups:\n- coveredResources: [cpu]\n  flavors:\n"
            + _many(65, "  - name: f{i}\n    resources:\n    - {{name: cpu, nominalQuota: 1}}\n"),
            "spec.resourceGroups[0].flavors",
        ),
        (
            "resourceGroups:\n- coveredResources: ["
            + ", ".join(f"r{i}" for i in range(65))
            + "]\n  flavors:\n  - name: f\n    resources:\n"
            + _many(65, "    - {{name: r{i}, nominalQuota: 1}}\n"),
            "spec.resourceGroups[0].coveredResources spec.resourceGroups[0].flavors[0].resources",
        ),
    ],
    ids=["17 resource groups", "65 flavors", "65 covered resources"],
)
def test_limits(load: Loader, spec: str, path: str) -> None:
    _, problems = load(_cq(spec))
    assert [p.path for p in problems if "Too many" in p.message] == path.split()


def test_empty_resource_group(load: Loader) -> None:
    _, problems = load(_cq("resourceGroups:\n- coveredResources: []\n  flavors: []\n"))
    assert [(p.path, p.message) for p in problems] == [
        ("spec.resourceGroups[0].coveredResources", "Required value: must have at least 1 item"),
        ("spec.resourceGroups[0].flavors", "Required value: must have at least 1 item"),
    ]
