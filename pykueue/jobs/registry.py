"""The job kinds pykueue integrates, registered once: one line per kind, in upstream's order of
``integrations.frameworks`` names (upstream's ``jobframework.RegisterIntegration`` calls). Each record
lives in its kind's package (``jobs/<kind>/__init__.py``); the tables generic code reads (which kind is
which framework, which frameworks turn the pod integration on, which kinds queue through the pod
integration) are read off them here.

Above the kinds: the API layer and the controller read it; the kinds and the job framework beneath
them never do (they are handed a ``Frameworks``)."""

from __future__ import annotations

from collections.abc import Iterable

from pykueue.jobs import (
    deployment,
    jaxjob,
    job,
    jobset,
    leaderworkerset,
    mpijob,
    paddlejob,
    pod,
    pytorchjob,
    ray,
    statefulset,
    tfjob,
    xgboostjob,
)
from pykueue.jobs.integration import Frameworks, Integration

INTEGRATIONS: tuple[Integration, ...] = (
    job.INTEGRATION,
    pod.INTEGRATION,
    *ray.INTEGRATIONS,
    statefulset.INTEGRATION,
    deployment.INTEGRATION,
    jobset.INTEGRATION,
    leaderworkerset.INTEGRATION,
    pytorchjob.INTEGRATION,
    tfjob.INTEGRATION,
    xgboostjob.INTEGRATION,
    paddlejob.INTEGRATION,
    jaxjob.INTEGRATION,
    mpijob.INTEGRATION,
)

FRAMEWORKS: tuple[str, ...] = tuple(i.framework for i in INTEGRATIONS)
# Upstream Kueue v0.18's integrations that pykueue does not have yet: a Configuration may name them, as
# upstream's does, but the controller does not start with one (its jobs would run outside any quota).
NOT_INTEGRATED = ("trainer.kubeflow.org/trainjob", "workload.codeflare.dev/appwrapper",
                  "sparkoperator.k8s.io/sparkapplication")
BY_KIND: dict[str, Integration] = {i.kind: i for i in INTEGRATIONS}
BY_OWNER: dict[tuple[str, str], Integration] = {(i.group, i.kind): i for i in INTEGRATIONS}


def with_implied(listed: Iterable[str]) -> frozenset[str]:
    """The frameworks on: those listed and those they imply."""
    named = list(listed)
    implied = (f for i in INTEGRATIONS if i.framework in named for f in i.implies)
    return frozenset([*named, *implied])


def enabled(listed: Iterable[str]) -> Frameworks:
    """The integrations on: those listed in ``integrations.frameworks`` and those they imply, with
    what the kinds beneath the registry need to know of each other."""
    return Frameworks(with_implied(listed), INTEGRATIONS)


ALL = enabled(FRAMEWORKS)  # every integration on: a webhook's default when no Configuration narrows it
