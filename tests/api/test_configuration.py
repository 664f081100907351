"""Kueue's Configuration, from ``--config`` or among the inputs, in both versions, with upstream defaults."""

import pytest

from pykueue.engine import model
from pykueue.jobs import managed

from .helpers import Loader, only_problem

V2 = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
V1 = "apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (V2, model.Config()),
        (
            V2 + "waitForPodsReady:\n  timeout: 10m\n",
            model.Config(
                wait_for_pods_ready=model.WaitForPodsReady(
                    True, 600.0, 600.0, False, model.RequeuingStrategy()
                )
            ),
        ),
        (
            V2
            + "waitForPodsReady:\n  timeout: 10m\n  recoveryTimeout: 0s\n  blockAdmission: true\n"
            + "  requeuingStrategy: {timestamp: Creation, backoffLimitCount: 3, backoffBaseSeconds: 5, backoffMaxSeconds: 50}\n",
            model.Config(
                wait_for_pods_ready=model.WaitForPodsReady(
                    True, 600.0, None, True, model.RequeuingStrategy("Creation", 3, 5, 50)
                )
            ),
        ),
        (
            V1 + "waitForPodsReady:\n  enable: true\n",
            model.Config(
                wait_for_pods_ready=model.WaitForPodsReady(
                    True, 300.0, 300.0, True, model.RequeuingStrategy()
                )
            ),
        ),
        (V1 + "waitForPodsReady:\n  enable: false\n  timeout: 1m\n", model.Config()),
        (V2 + "featureGates: {UnadmittedWorkloadsObservability: true}\n", model.Config(granular_reasons=True)),
        (V1 + "featureGates: {UnadmittedWorkloadsObservability: false}\n", model.Config()),
        (
            V2
            + "fairSharing:\n  preemptionStrategies: [LessThanInitialShare]\nmanageJobsWithoutQueueName: true\n",
            model.Config(
                fair_sharing=model.FairSharing(True, ("LessThanInitialShare",)),
                manage_jobs_without_queue_name=True,
            ),
        ),
        (V1 + "fairSharing:\n  enable: true\n", model.Config(fair_sharing=model.FairSharing(enable=True))),
        (V1 + "fairSharing:\n  enable: false\n", model.Config()),
        (
            V2 + "integrations:\n  frameworks: [batch/job]\nfeatureGates: {PartialAdmission: true}\n",
            model.Config(),
        ),
        (
            V2 + "metrics:\n  bindAddress: :8443\n  enableClusterQueueResources: true\n",
            model.Config(metrics=model.Metrics(cluster_queue_resources=True, local_queues=True)),
        ),
        (
            V1 + "featureGates: {LocalQueueMetrics: false}\n",
            model.Config(metrics=model.Metrics(cluster_queue_resources=False, local_queues=False)),
        ),
        # the controller's own namespace, where upstream reads its MultiKueue Secrets (issue 53, item 15)
        # (the default managedJobsNamespaceSelector leaves it out too)
        (V2 + "namespace: queues-system\n", model.Config(
            namespace="queues-system", managed_jobs_namespace_selector=managed.default_selector("queues-system"))),
    ],
    ids=[
        "empty",
        "v1beta2 presence enables",
        "v1beta2 everything set",
        "v1beta1 enable with defaults",
        "v1beta1 disabled",
        "granular pending reasons gated on",
        "granular pending reasons gated off",
        "v1beta2 fair sharing",
        "v1beta1 fair sharing defaults",
        "v1beta1 fair sharing off",
        "unused sections are accepted",
        "cluster queue resource metrics",
        "local queue metrics gated off",
        "the controller's namespace",
    ],
)
def test_configuration_from_flag(load: Loader, text: str, expected: model.Config) -> None:
    inputs, problems = load("", config=text)
    assert problems == []
    assert inputs.config == expected


def test_configuration_among_inputs(load: Loader) -> None:
    inputs, problems = load(V2 + "fairSharing:\n  preemptionStrategies: [LessThanOrEqualToFinalShare]\n")
    assert problems == []
    assert inputs.config.fair_sharing == model.FairSharing(True, ("LessThanOrEqualToFinalShare",))


@pytest.mark.parametrize(
    ("text", "path", "message"),
    [
        (V2 + "waitForPodsReady:\n  blockAdmission: true\n", "waitForPodsReady.timeout", "Required value"),
        (
            V2 + "waitForPodsReady:\n  enable: true\n  timeout: 5m\n",
            "waitForPodsReady.enable",
            "unknown field",
        ),
        (V2 + "waitForPodsReady:\n  timeout: soon\n", "waitForPodsReady.timeout", "invalid duration"),
        (V2 + "fairSharing: {}\n", "fairSharing.preemptionStrategies", "Required value"),
        (
            V2
            + "fairSharing:\n  preemptionStrategies: [LessThanInitialShare, LessThanOrEqualToFinalShare]\n",
            "fairSharing.preemptionStrategies",
            "Unsupported value",
        ),
        (
            V1 + "waitForPodsReady:\n  enable: true\n  requeuingStrategy: {timestamp: Now}\n",
            "waitForPodsReady.requeuingStrategy.timestamp",
            "Unsupported value",
        ),
        (V2 + "waitForPodReady: {}\n", "waitForPodReady", "unknown field"),
        (
            V2 + "metrics:\n  enableClusterQueueResources: maybe\n",
            "metrics.enableClusterQueueResources",
            "must be a boolean",
        ),
        (V2 + "metrics: [enableClusterQueueResources]\n", "metrics", "must be an object"),
        (V2 + "integrations:\n  frameworks: [batch/job, example.com/widget]\n", "integrations.frameworks[1]",
         'Unsupported value: "example.com/widget": supported values: "batch/job", "pod"'),
    ],
)
def test_invalid_configuration(load: Loader, text: str, path: str, message: str) -> None:
    inputs, problems = load("", config=text)
    problem = only_problem(problems)
    assert (problem.kind, problem.path) == ("Configuration", path)
    assert message in problem.message
    assert inputs.config == model.Config()


def test_two_configurations_are_an_error(load: Loader) -> None:
    inputs, problems = load(
        V2 + "manageJobsWithoutQueueName: true\n",
        config=V2 + "fairSharing:\n  preemptionStrategies: [LessThanInitialShare]\n",
    )
    problem = only_problem(problems)
    assert problem.source.file.endswith("input.yaml")
    assert problem.message.startswith("a second Configuration (the first is at ")
    assert inputs.config.fair_sharing.enable is True
    assert inputs.config.manage_jobs_without_queue_name is False


def test_config_flag_must_hold_a_configuration(load: Loader) -> None:
    _, problems = load("", config="apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n")
    problem = only_problem(problems)
    assert (problem.kind, problem.path) == ("Namespace", "kind")


def test_integrations_frameworks_default_to_batch_job_alone() -> None:
    """Upstream's default enables the batch/job integration only; a Configuration names the rest."""
    from pykueue.api.loader import load_documents

    base = {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration"}
    inputs, problems = load_documents([base], "c.yaml")
    assert not problems and inputs.config.frameworks == ("batch/job",)
    inputs, problems = load_documents([{**base, "integrations": {"frameworks": ["pod", "batch/job"]}}], "c.yaml")
    assert not problems and inputs.config.frameworks == ("pod", "batch/job")


def test_a_kueue_integration_pykueue_lacks_is_accepted_by_the_configuration_but_not_by_the_controller(
        load: Loader) -> None:
    """upstream's own Configuration lists kinds pykueue lacks (Kubeflow's TrainJob): the Configuration (and ``simulate``) take it,
    and the controller refuses to start with it, naming what pykueue integrates (those jobs would
    otherwise run outside any quota)."""
    from pykueue.controller.command import not_integrated

    inputs, problems = load("", config=V2 + "integrations:\n  frameworks: [batch/job, trainer.kubeflow.org/trainjob]\n")
    assert problems == []
    assert inputs.config.frameworks == ("batch/job", "trainer.kubeflow.org/trainjob")
    said = not_integrated(inputs.config)
    assert said is not None and said.startswith('"trainer.kubeflow.org/trainjob": Kueue integrates it but pykueue does not')
    assert '"jobset.x-k8s.io/jobset"' in said and said.count('"batch/job"') == 1
    assert not_integrated(model.Config()) is None
