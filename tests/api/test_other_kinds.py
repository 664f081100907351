"""Cohort, LocalQueue, ResourceFlavor, AdmissionCheck, priority classes and Namespace."""

import pytest

from pykueue.engine import model

from .helpers import Loader, only_problem


def test_cohort_in_both_versions(load: Loader) -> None:
    inputs, problems = load(
        """
        apiVersion: kueue.x-k8s.io/v1beta1
        kind: Cohort
        metadata: {name: child}
        spec:
          parentName: root
          fairSharing: {weight: "2"}
          resourceGroups:
          - coveredResources: [cpu]
            flavors:
            - name: f
              resources:
              - {name: cpu, nominalQuota: 4, lendingLimit: 10, borrowingLimit: 1}
        ---
        apiVersion: kueue.x-k8s.io/v1beta2
        kind: Cohort
        metadata: {name: root}
        """
    )
    assert problems == []
    assert inputs.cohorts == [
        model.Cohort(
            name="child",
            parent="root",
            resource_groups=(
                model.ResourceGroup(
                    ("cpu",),
                    (model.FlavorQuotas("f", {"cpu": model.ResourceQuota(4000, 1000, 10000)}),),
                ),
            ),
            fair_weight_milli=2000,
        ),
        model.Cohort(name="root"),
    ]


@pytest.mark.parametrize(
    ("spec", "path", "message"),
    [
        ("parentName: Root", "spec.parentName", "RFC 1123 subdomain"),
        ("parent: root", "spec.parent", 'unknown field "parent"'),
        (
            "resourceGroups:\n- coveredResources: [cpu]\n  flavors:\n  - name: f\n    resources:\n"
            "    - {name: cpu, nominalQuota: 1, lendingLimit: 1}",
            "spec.resourceGroups[0].flavors[0].resources[0].lendingLimit",
            "must be nil when parent is empty",
        ),
        (
            "resourceGroups:\n- coveredResources: [cpu]\n  flavors:\n  - name: f\n    resources:\n"
            "    - {name: cpu, nominalQuota: 1, borrowingLimit: 1}",
            "spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit",
            "must be nil when parent is empty",
        ),
    ],
)
def test_invalid_cohort(load: Loader, spec: str, path: str, message: str) -> None:
    indented = "\n".join("  " + line for line in spec.splitlines())
    _, problems = load(
        f"apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata:\n  name: c\nspec:\n{indented}\n"
    )
    problem = only_problem(problems)
    assert (problem.kind, problem.name, problem.path) == ("Cohort", "c", path)
    assert message in problem.message


def test_cohort_lending_limit_may_exceed_its_nominal_quota(load: Loader) -> None:
    _, problems = load(
        """
        apiVersion: kueue.x-k8s.io/v1beta2
        kind: Cohort
        metadata: {name: c}
        spec:
          parentName: p
          resourceGroups:
          - coveredResources: [cpu]
            flavors:
            - name: f
              resources: [{name: cpu, nominalQuota: 0, lendingLimit: 5}]
        """
    )
    assert problems == []


def test_local_queue(load: Loader) -> None:
    inputs, problems = load(
        """
        apiVersion: kueue.x-k8s.io/v1beta2
        kind: LocalQueue
        metadata: {name: lq, namespace: team-a}
        spec: {clusterQueue: cq, stopPolicy: HoldAndDrain}
        ---
        apiVersion: kueue.x-k8s.io/v1beta1
        kind: LocalQueue
        metadata: {name: lq}
        spec: {clusterQueue: cq}
        """
    )
    assert problems == []
    assert inputs.local_queues == [
        model.LocalQueue("team-a", "lq", "cq", "HoldAndDrain"),
        model.LocalQueue("default", "lq", "cq", "None"),
    ]


@pytest.mark.parametrize(
    ("manifest", "path", "message"),
    [
        ("metadata: {name: lq}\nspec: {clusterQueue: Bad_CQ}", "spec.clusterQueue", "RFC 1123 subdomain"),
        (
            "metadata: {name: lq}\nspec: {clusterQueue: cq, stopPolicy: Drain}",
            "spec.stopPolicy",
            'Unsupported value: "Drain"',
        ),
        (
            "metadata: {name: lq, namespace: Team_A}\nspec: {clusterQueue: cq}",
            "metadata.namespace",
            "RFC 1123 label",
        ),
    ],
)
def test_invalid_local_queue(load: Loader, manifest: str, path: str, message: str) -> None:
    _, problems = load("apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\n" + manifest)
    problem = only_problem(problems)
    assert (problem.kind, problem.path) == ("LocalQueue", path)
    assert message in problem.message


def test_resource_flavor(load: Loader) -> None:
    inputs, problems = load(
        """
        apiVersion: kueue.x-k8s.io/v1beta2
        kind: ResourceFlavor
        metadata: {name: spot}
        spec:
          nodeLabels: {instance-type: spot}
          nodeTaints:
          - {key: spot, value: "true", effect: NoSchedule}
          tolerations:
          - {key: spot, operator: Exists, effect: NoSchedule}
          - {operator: Exists}
        """
    )
    assert problems == []
    assert inputs.resource_flavors == [
        model.ResourceFlavor(
            name="spot",
            node_labels={"instance-type": "spot"},
            node_taints=(model.Taint("spot", "true", "NoSchedule"),),
            tolerations=(
                model.Toleration("spot", "Exists", "", "NoSchedule"),
                model.Toleration("", "Exists", "", ""),
            ),
        )
    ]


@pytest.mark.parametrize(
    ("spec", "path", "message"),
    [
        ("nodeLabels: {'a/b/c': x}", "spec.nodeLabels[a/b/c]", "qualified name"),
        ("nodeLabels: {a: 'x y'}", "spec.nodeLabels[a]", "valid label"),
        (
            "nodeLabels: {" + ", ".join(f"l{i}: v" for i in range(9)) + "}",
            "spec.nodeLabels",
            "Too many: 9: must have at most 8 items",
        ),
        (
            "nodeTaints: [{key: a, effect: Sometimes}]",
            "spec.nodeTaints[0].effect",
            'Unsupported value: "Sometimes"',
        ),
        ("nodeTaints: [{key: a}]", "spec.nodeTaints[0].effect", "Required value"),
        (
            "nodeTaints: [{key: a, effect: NoSchedule}, {key: a, value: b, effect: NoSchedule}]",
            "spec.nodeTaints[1]",
            "unique by key and effect",
        ),
        (
            "tolerations: [{operator: Equal, value: x}]",
            "spec.tolerations[0].operator",
            "operator must be Exists",
        ),
        ("tolerations: [{key: a, operator: Exists, value: x}]", "spec.tolerations[0].value", "must be empty"),
        ("tolerations: [{key: a, operator: Gt}]", "spec.tolerations[0].operator", 'Unsupported value: "Gt"'),
        (
            "tolerations: [{key: a, effect: NoSchedule, tolerationSeconds: 5}]",
            "spec.tolerations[0].effect",
            "must be 'NoExecute'",
        ),
        ("topologyName: default", "spec", "at least one nodeLabel is required"),
    ],
)
def test_invalid_resource_flavor(load: Loader, spec: str, path: str, message: str) -> None:
    _, problems = load(
        f"apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata:\n  name: f\nspec:\n  {spec}\n"
    )
    problem = only_problem(problems)
    assert (problem.kind, problem.path) == ("ResourceFlavor", path)
    assert message in problem.message


def test_admission_check(load: Loader) -> None:
    inputs, problems = load(
        """
        apiVersion: kueue.x-k8s.io/v1beta1
        kind: AdmissionCheck
        metadata: {name: prov}
        spec: {controllerName: kueue.x-k8s.io/provisioning-request, retryDelayMinutes: 15}
        ---
        apiVersion: kueue.x-k8s.io/v1beta2
        kind: AdmissionCheck
        metadata: {name: empty}
        spec: {controllerName: ""}
        """
    )
    assert inputs.admission_checks == [model.AdmissionCheck("prov", "kueue.x-k8s.io/provisioning-request")]
    problem = only_problem(problems)
    assert (problem.name, problem.path) == ("empty", "spec.controllerName")


def test_priority_classes(load: Loader) -> None:
    inputs, problems = load(
        """
        apiVersion: scheduling.k8s.io/v1
        kind: PriorityClass
        metadata: {name: high}
        value: 1000
        ---
        apiVersion: kueue.x-k8s.io/v1beta2
        kind: WorkloadPriorityClass
        metadata: {name: batch}
        value: -5
        ---
        apiVersion: scheduling.k8s.io/v1
        kind: PriorityClass
        metadata: {name: too-high}
        value: 1000000001
        ---
        apiVersion: scheduling.k8s.io/v1
        kind: PriorityClass
        metadata: {name: system-mine}
        value: 1
        ---
        apiVersion: kueue.x-k8s.io/v1beta2
        kind: WorkloadPriorityClass
        metadata: {name: no-value}
        """
    )
    assert inputs.priority_classes == {"high": 1000}
    assert inputs.workload_priority_classes == {"batch": -5}
    assert [(p.name, p.path) for p in problems] == [
        ("too-high", "value"),
        ("system-mine", "metadata.name"),
        ("no-value", "value"),
    ]


def test_namespaces_get_their_name_label_and_used_ones_exist(load: Loader) -> None:
    inputs, problems = load(
        """
        apiVersion: v1
        kind: Namespace
        metadata:
          name: team-a
          labels: {research-cohort: team-a-b}
        ---
        apiVersion: kueue.x-k8s.io/v1beta2
        kind: LocalQueue
        metadata: {name: lq, namespace: team-b}
        spec: {clusterQueue: cq}
        ---
        apiVersion: kueue.x-k8s.io/v1beta2
        kind: LocalQueue
        metadata: {name: lq, namespace: team-a}
        spec: {clusterQueue: cq}
        ---
        apiVersion: v1
        kind: Namespace
        metadata: {name: team.c}
        """
    )
    assert inputs.namespaces == [
        model.Namespace("team-a", {"research-cohort": "team-a-b", "kubernetes.io/metadata.name": "team-a"}),
        model.Namespace("team-b", {"kubernetes.io/metadata.name": "team-b"}),
    ]
    problem = only_problem(problems)
    assert (problem.kind, problem.name, problem.path) == ("Namespace", "team.c", "metadata.name")
    assert "RFC 1123 label" in problem.message
