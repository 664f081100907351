"""MultiKueueConfig, MultiKueueCluster (v1beta2, and v1beta1 read as v1beta2) and the Configuration's
``multiKueue`` block, held to upstream's markers and defaults (apis/kueue/v1beta2/multikueue_types.go,
apis/config/v1beta2 defaults and validation)."""

import pytest

from pykueue.engine import model

from .helpers import Loader, only_problem

V2 = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"


def test_valid_objects_in_both_versions(load: Loader) -> None:
    _, problems = load(
        """
        apiVersion: kueue.x-k8s.io/v1beta2
        kind: MultiKueueConfig
        metadata: {name: mkc}
        spec: {clusters: [w1, w2]}
        ---
        apiVersion: kueue.x-k8s.io/v1beta2
        kind: MultiKueueCluster
        metadata: {name: w1}
        spec: {clusterSource: {kubeConfig: {location: w1-secret, locationType: Secret}}}
        ---
        apiVersion: kueue.x-k8s.io/v1beta1
        kind: MultiKueueCluster
        metadata: {name: w2}
        spec: {kubeConfig: {location: w2-secret, locationType: Secret}}
        ---
        apiVersion: kueue.x-k8s.io/v1beta1
        kind: MultiKueueConfig
        metadata: {name: old}
        spec: {clusters: [w2]}
        ---
        apiVersion: kueue.x-k8s.io/v1beta2
        kind: AdmissionCheck
        metadata: {name: mk}
        spec:
          controllerName: kueue.x-k8s.io/multikueue
          parameters: {apiGroup: kueue.x-k8s.io, kind: MultiKueueConfig, name: mkc}
        """
    )
    assert problems == []


def test_v1beta1_cluster_reads_as_v1beta2() -> None:
    from pykueue.api.models import kueue_v1beta1 as v1

    old = v1.MultiKueueCluster.model_validate({
        "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "MultiKueueCluster", "metadata": {"name": "w"},
        "spec": {"kubeConfig": {"location": "s", "locationType": "Path"}}})
    new = old.to_v1beta2()
    assert new.spec.cluster_source.kube_config is not None
    assert (new.spec.cluster_source.kube_config.location, new.spec.cluster_source.kube_config.location_type) == (
        "s", "Path")
    assert new.spec.cluster_source.cluster_profile_ref is None


@pytest.mark.parametrize(
    ("doc", "path", "message"),
    [
        ("kind: MultiKueueConfig\nspec: {clusters: []}", "spec.clusters", "Required value"),
        ("kind: MultiKueueConfig\nspec: {}", "spec.clusters", "Required value"),
        ("kind: MultiKueueConfig\nspec: {clusters: [a, b, a]}", "spec.clusters[2]", "Duplicate value"),
        ("kind: MultiKueueConfig\nspec: {clusters: [" + ", ".join(f"c{i}" for i in range(21)) + "]}",
         "spec.clusters", "Too many: 21"),
        ("kind: MultiKueueConfig\nspec: {clusters: [" + "x" * 257 + "]}", "spec.clusters[0]", "Too long"),
        ("kind: MultiKueueCluster\nspec: {clusterSource: {}}", "spec.clusterSource", "exactly one of"),
        ("kind: MultiKueueCluster\nspec: {clusterSource: {kubeConfig: {location: a}, clusterProfileRef: {name: b}}}",
         "spec.clusterSource", "exactly one of"),
        ("kind: MultiKueueCluster\nspec: {clusterSource: {kubeConfig: {location: ''}}}",
         "spec.clusterSource.kubeConfig.location", "Required value"),
        ("kind: MultiKueueCluster\nspec: {clusterSource: {kubeConfig: {location: a, locationType: Url}}}",
         "spec.clusterSource.kubeConfig.locationType", "Url"),
    ],
)
def test_invalid_objects(load: Loader, doc: str, path: str, message: str) -> None:
    _, problems = load("apiVersion: kueue.x-k8s.io/v1beta2\nmetadata: {name: x}\n" + doc + "\n")
    problem = only_problem(problems)
    assert problem.path == path
    assert message in problem.message


def test_multikueue_defaults_and_values(load: Loader) -> None:
    inputs, problems = load("", config=V2)
    assert problems == []
    assert inputs.config.multi_kueue == model.MultiKueue(60.0, "multikueue", 900.0, model.MULTIKUEUE_ALL_AT_ONCE)
    inputs, problems = load("", config=V2 + (
        "multiKueue:\n  gcInterval: 2s\n  origin: manager-1\n  workerLostTimeout: 30s\n"
        "  dispatcherName: kueue.x-k8s.io/multikueue-dispatcher-incremental\n"))
    assert problems == []
    assert inputs.config.multi_kueue == model.MultiKueue(2.0, "manager-1", 30.0, model.MULTIKUEUE_INCREMENTAL)


@pytest.mark.parametrize(
    ("block", "path", "message"),
    [
        ("  gcInterval: -1s\n", "multiKueue.gcInterval", "greater than or equal to 0"),
        ("  workerLostTimeout: soon\n", "multiKueue.workerLostTimeout", "invalid duration"),
        ("  origin: 'not a label'\n", "multiKueue.origin", "a valid label"),
        ("  gcIntervall: 1s\n", "multiKueue.gcIntervall", "unknown field"),
    ],
)
def test_invalid_multikueue_block(load: Loader, block: str, path: str, message: str) -> None:
    _, problems = load("", config=V2 + "multiKueue:\n" + block)
    problem = only_problem(problems)
    assert (problem.kind, problem.path) == ("Configuration", path)
    assert message in problem.message
