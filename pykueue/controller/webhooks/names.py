"""The webhooks' names, paths and rules: one table shared by the server, the CRD generator and the chart's test.

Kept free of heavy imports so that ``pykueue.manifests.crds`` can read it. The names follow upstream's
(``mjob.kb.io``, ``vclusterqueue.kb.io``, controller-runtime's ``/mutate-<group>-<version>-<kind>``
paths, ``/convert``), with ``pykueue`` where upstream says ``kueue``.
"""

from __future__ import annotations

from dataclasses import dataclass

from pykueue.jobs import registry

GROUP = "kueue.x-k8s.io"
VERSION = "v1beta2"
NAMESPACE = "pykueue-system"  # the release manifest's namespace (config/manifests.yaml)
SERVICE = "pykueue-webhook-service"
SECRET = "pykueue-webhook-server-cert"
PORT = 9443  # upstream's (controller-runtime's) webhook port
SERVICE_PORT = 443
CONVERT_PATH = "/convert"
SERVICE_SUFFIX = "-webhook-service"
VISIBILITY_PORT = 8082  # upstream's visibility server (visibilityServer.bindPort)
VISIBILITY_SUFFIX = "-visibility-server"

# The CRDs whose versions differ in shape, so the API server asks the webhook to convert them (upstream's
# cert controller lists the same four, plus MultiKueueCluster which pykueue does not serve).
CONVERTED_PLURALS = ("clusterqueues", "cohorts", "localqueues", "workloads", "multikueueclusters")


def configuration_names(service: str) -> tuple[str, str]:
    """(mutating, validating) configuration names, derived from the Service's as upstream derives them."""
    base = service.removesuffix(SERVICE_SUFFIX)
    return f"{base}-mutating-webhook-configuration", f"{base}-validating-webhook-configuration"


def visibility_service(service: str) -> str:
    """The visibility API's Service, named beside the webhook Service as upstream's chart names both
    (``<fullname>-webhook-service``, ``<fullname>-visibility-server``)."""
    return service.removesuffix(SERVICE_SUFFIX) + VISIBILITY_SUFFIX


def crd_name(plural: str) -> str:
    return f"{plural}.{GROUP}"


@dataclass(frozen=True, slots=True)
class Hook:
    """One webhook of a configuration: what the API server sends, and where."""

    name: str
    path: str
    group: str
    version: str
    resources: tuple[str, ...]
    operations: tuple[str, ...]
    kind: str
    frameworks: tuple[str, ...] = ()  # registered while one of these integrations is on (none: always)
    managed_only: bool = False  # sent only objects labelled kueue.x-k8s.io/managed (MANAGED_PODS)


def _path(prefix: str, group: str, version: str, kind: str) -> str:
    return f"/{prefix}-{group.replace('.', '-')}-{version}-{kind.lower()}"


def turned_on_by(integration: registry.Integration) -> tuple[str, ...]:
    """The frameworks whose being on registers this kind's hooks: its own, and those that imply it (the
    Pods of a Deployment, a StatefulSet or a LeaderWorkerSet are gated by the Pod's)."""
    return (integration.framework,
            *(i.framework for i in registry.INTEGRATIONS if integration.framework in i.implies))


def _job_hook(prefix: str, integration: registry.Integration, operations: tuple[str, ...],
              frameworks: tuple[str, ...], managed_only: bool = False) -> Hook:
    res = integration.resource
    return Hook(f"{prefix[0]}{res.kind.lower()}.kb.io", _path(prefix, res.group, res.version, res.kind), res.group,
                res.version, (res.plural,), operations, res.kind, frameworks, managed_only)


POD_FRAMEWORKS = turned_on_by(registry.BY_KIND["Pod"])  # their Pods are gated too

# One mutating hook per kind, registered while its integration is on (the Job's always, as its webhook
# also leaves alone what it does not manage).
MUTATING: tuple[Hook, ...] = tuple(
    _job_hook("mutate", i, i.mutates_on, () if i.mutating_always else turned_on_by(i)) for i in registry.INTEGRATIONS)


def mutating_for(frameworks: tuple[str, ...] | list[str]) -> tuple[Hook, ...]:
    """The mutating hooks registered for these integrations: a Pod hook only while Pods are queued, so
    that a cluster's every Pod creation does not wait on Kueue for nothing."""
    return tuple(h for h in MUTATING if not h.frameworks or set(h.frameworks) & set(frameworks))

VALIDATED_KINDS = (
    ("ResourceFlavor", "resourceflavors"),
    ("ClusterQueue", "clusterqueues"),
    ("Cohort", "cohorts"),
    ("LocalQueue", "localqueues"),
    ("Workload", "workloads"),
    ("WorkloadPriorityClass", "workloadpriorityclasses"),
    ("AdmissionCheck", "admissionchecks"),
)
# Kinds whose every rule upstream declares in the CRD schema (markers and CEL), with no webhook of theirs.
SCHEMA_VALIDATED_KINDS = ("MultiKueueConfig", "MultiKueueCluster")


def _validating(kind: str, plural: str) -> Hook:
    # as upstream, a Workload's status writes are validated too: they carry its admission
    resources = (plural, f"{plural}/status") if kind == "Workload" else (plural,)
    return Hook(f"v{kind.lower()}.kb.io", _path("validate", GROUP, VERSION, kind), GROUP, VERSION, resources,
                ("CREATE", "UPDATE"), kind)


VALIDATING: tuple[Hook, ...] = tuple(_validating(kind, plural) for kind, plural in VALIDATED_KINDS)

# The job kinds' validating hooks, registered only while their integration is on (as the mutating ones).
# The Pod's is sent only Pods Kueue manages (the mutating hook labels them ``kueue.x-k8s.io/managed``,
# and an update matches when the old or the new Pod carries it): a hook failing closed on every Pod would
# stop the cluster's Pods while the controller is away.
MANAGED_PODS = {"matchExpressions": [{"key": "kueue.x-k8s.io/managed", "operator": "Exists"}]}

VALIDATING_JOBS: tuple[Hook, ...] = tuple(
    _job_hook("validate", i, ("CREATE", "UPDATE"), turned_on_by(i), i.validates_managed_only)
    for i in registry.INTEGRATIONS)


def validating_jobs_for(frameworks: tuple[str, ...] | list[str]) -> tuple[Hook, ...]:
    """The job kinds' validating hooks registered for these integrations."""
    return tuple(h for h in VALIDATING_JOBS if set(h.frameworks) & set(frameworks))
