"""The job kinds pykueue integrates, registered once: one record per kind, in upstream's order of
``integrations.frameworks`` names (upstream's ``jobframework.RegisterIntegration``; its
``IntegrationCallbacks`` hold the same facts). The tables generic code used to write by hand (which
kind is which framework, which frameworks turn the pod integration on, whose Pods a kind manages itself,
which kinds queue through the pod integration) are read off these records.

Plain data, importing nothing of pykueue, so that the API layer, the kinds and the controller can all
read it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Integration:
    """One kind: its ``integrations.frameworks`` name, its API group ("" for the core group) and kind;
    ``implies``: frameworks it turns on (upstream's ImplicitlyEnabledFrameworkNames); ``owns_pods``: its
    integration manages the Pods it controls itself (the Pod webhook leaves them alone); ``serving``:
    queued through the pod integration, its Pods gated as the Pod webhook gates them."""

    framework: str
    group: str
    kind: str
    implies: tuple[str, ...] = ()
    owns_pods: bool = False
    serving: bool = False


INTEGRATIONS: tuple[Integration, ...] = (
    Integration("batch/job", "batch", "Job", owns_pods=True),
    Integration("pod", "", "Pod"),
    Integration("ray.io/rayjob", "ray.io", "RayJob"),
    Integration("ray.io/raycluster", "ray.io", "RayCluster", owns_pods=True),
    Integration("ray.io/rayservice", "ray.io", "RayService"),
    Integration("statefulset", "apps", "StatefulSet", implies=("pod",), owns_pods=True, serving=True),
    Integration("deployment", "apps", "Deployment", implies=("pod",), serving=True),
    Integration("jobset.x-k8s.io/jobset", "jobset.x-k8s.io", "JobSet"),
    Integration("leaderworkerset.x-k8s.io/leaderworkerset", "leaderworkerset.x-k8s.io", "LeaderWorkerSet",
                implies=("pod",), serving=True),
)

FRAMEWORKS: tuple[str, ...] = tuple(i.framework for i in INTEGRATIONS)
# Upstream Kueue v0.18's integrations that pykueue does not have yet: a Configuration may name them, as
# upstream's does, but the controller does not start with one (its jobs would run outside any quota).
NOT_INTEGRATED = ("kubeflow.org/mpijob", "kubeflow.org/paddlejob", "kubeflow.org/pytorchjob", "kubeflow.org/tfjob",
                  "kubeflow.org/xgboostjob", "kubeflow.org/jaxjob", "trainer.kubeflow.org/trainjob",
                  "workload.codeflare.dev/appwrapper", "sparkoperator.k8s.io/sparkapplication")
BY_KIND: dict[str, Integration] = {i.kind: i for i in INTEGRATIONS}
BY_OWNER: dict[tuple[str, str], Integration] = {(i.group, i.kind): i for i in INTEGRATIONS}


def with_implied(listed: Iterable[str]) -> frozenset[str]:
    """The frameworks on: those listed and those they imply."""
    named = list(listed)
    implied = (f for i in INTEGRATIONS if i.framework in named for f in i.implies)
    return frozenset([*named, *implied])
