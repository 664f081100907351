"""What one job kind tells generic code about itself (upstream's ``jobframework.IntegrationCallbacks``),
and the set of integrations that are on.

Each kind's package declares its ``Integration`` record in its ``__init__``; ``jobs/registry.py`` lists
them (upstream's ``RegisterIntegration`` calls) and builds ``Frameworks`` from ``integrations.frameworks``.
Code beneath the kinds (the job framework, the pod integration) never reads the registry: it is handed a
``Frameworks``, which carries what it needs to know of the other kinds (whose children an object is,
whose Pods their own integration manages) without naming one.

Plain data, importing nothing of pykueue but the resource table."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pykueue.kube.resources import Resource

Manifest = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Webhooks:
    """A kind's webhooks (upstream's ``Default``, ``ValidateCreate`` and ``ValidateUpdate`` of its
    ``pkg/controller/jobs/<kind>/*_webhook.go``), each handed the object with its namespace filled in
    and the ``jobs.hooks.HookContext``: ``default(obj, ctx)`` answers JSON patch operations (None: the
    kind has no mutating webhook), ``validate_create(obj, ctx)`` and ``validate_update(old, new, ctx)``
    the refusals (``JobConversionError``)."""

    default: Callable[[Manifest, Any], list[dict[str, Any]]] | None
    validate_create: Callable[[Manifest, Any], list[Any]]
    validate_update: Callable[[Manifest, Manifest, Any], list[Any]]


@dataclass(frozen=True, slots=True)
class Reading:
    """How the simulator reads one object of a kind the way the controller builds its Workloads
    (``api.workloads.Workloads.from_integration``): ``validate`` lists every refusal of the API server
    and of Kueue's webhook; ``workloads`` gives ``(name, Workload)`` per Workload the object stands for
    (raising the refusal it meets); ``template_paths``, where each pod set's template sits in the
    object (so a problem in a Workload names the object's own field); ``priority_class_path``, where
    the object names its pods' PriorityClass when not in the usual place; ``members``: each Workload
    is a member of its own (a Deployment's replicas, a LeaderWorkerSet's groups), which the simulator
    cannot scale while its clock runs."""

    validate: Callable[[Mapping[str, Any]], list[Any]]
    workloads: Callable[[Mapping[str, Any]], list[tuple[str, Manifest]]]
    template_paths: Callable[[Mapping[str, Any]], list[str]]
    priority_class_path: Callable[[Mapping[str, Any]], str | None] | None = None
    members: bool = False
    # whether an object of the kind is Kueue's at all (a RayJob that only selects an existing cluster is not)
    queued: Callable[[Mapping[str, Any]], bool] | None = None


@dataclass(frozen=True, slots=True)
class Live:
    """How the controller's job reconciler reads an object of a custom kind, one Workload each (upstream's
    ``IntegrationCallbacks.NewJob`` and the kind's gate before it reconciles): ``managed(obj,
    manage_without_queue_name)``: whether Kueue queues it at all; ``wrap(obj, children)``: its GenericJob,
    handed the cached objects of ``children`` it controls (a JobSet's Jobs, a RayJob's RayClusters: what
    it reads to know whether it runs, or how big it is), found by ``parent_of(child)``: the name of the
    object of this kind that controls a child, if one does."""

    managed: Callable[[Manifest, bool], bool]
    wrap: Callable[[Manifest, Sequence[Manifest]], Any]
    children: Resource | None = None
    parent_of: Callable[[Mapping[str, Any]], str | None] | None = None


@dataclass(frozen=True, slots=True)
class GroupOwner:
    """How the controller keeps the Workloads of a kind whose Pods run as pod groups of the pod
    integration (upstream's statefulset and leaderworkerset reconcilers with their Pod reconcilers; the
    generic side is ``controller/jobs/group_owners.py``, which watches the kind and names none): a Workload
    names its object through its owner reference; ``key_for_pod(pod)``: the ``namespace/name`` of the
    object a Pod's group belongs to, if any; ``reconcile(obj, workloads, pods, label_keys)``: the writes
    for a live object, handed every cached Workload by ``namespace/name``, its namespace's managed Pods
    and ``integrations.labelKeysToCopy``; ``reconcile_gone(namespace, name, pods)``: those for one that
    is gone (its ending Pods' finalizers); ``crd``: the kind is a CRD its operator installs, waited for
    before the informer starts."""

    key_for_pod: Callable[[Mapping[str, Any]], str | None]
    reconcile: Callable[[Manifest, Mapping[str, Manifest], Sequence[Manifest], tuple[str, ...]], list[Any]]
    reconcile_gone: Callable[[str, str, Iterable[Mapping[str, Any]]], list[Any]]
    crd: bool = False


@dataclass(frozen=True, slots=True)
class Grant:
    """One rule of the controller's ClusterRole that a kind's integration needs while it is on (the
    chart's ``clusterrole.yaml`` renders them from the registry, ``pykueue.manifests.chart_tables``, as
    upstream's kubebuilder RBAC markers sit beside each kind's reconciler): ``resources`` of the kind's
    API group (``group`` for another), ``verbs``, and ``why``, the rule's comment in the chart."""

    resources: tuple[str, ...]
    verbs: tuple[str, ...]
    why: str
    group: str | None = None


def custom_kind_grants(resource: Resource) -> tuple[Grant, ...]:
    """What the job reconciler does to a custom kind it queues (a Ray kind, a JobSet): an informer on it,
    suspend, start (the flavors' node selectors and tolerations in its pod templates) and stop (get,
    update, patch); a Workload owned by one sets blockOwnerDeletion (its ``/finalizers``)."""
    plural = resource.plural
    return (Grant((plural,), ("get", "list", "patch", "update", "watch"),
                  f"{plural}: an informer; suspend, start with the flavors' node selectors and tolerations in "
                  "their pod templates, stop (get, update, patch)"),
            Grant((f"{plural}/finalizers",), ("update",),
                  f"a Workload owned by one sets blockOwnerDeletion ({plural}/finalizers)"))


@dataclass(frozen=True, slots=True)
class Integration:
    """One kind: its ``integrations.frameworks`` name and its resource (group, version, plural, kind);
    ``implies``: frameworks it turns on (upstream's ImplicitlyEnabledFrameworkNames); ``owns_pods``: its
    integration manages the Pods it controls itself (the Pod webhook leaves them alone); ``serving``:
    queued through the pod integration, its Pods gated as the Pod webhook gates them. Its webhooks
    (``controller/webhooks/names.py`` names them from here): the mutating one is sent ``mutates_on``,
    and registered whatever the frameworks with ``mutating_always``; the validating one, CREATE and
    UPDATE, only objects Kueue manages with ``validates_managed_only``. ``own_controller``: see below."""

    framework: str
    resource: Resource
    implies: tuple[str, ...] = ()
    owns_pods: bool = False
    serving: bool = False
    mutates_on: tuple[str, ...] = ("CREATE",)
    mutating_always: bool = False
    defaults_off: bool = False  # its Default runs while it is off (a Pod its parent marked is gated regardless)
    validates_managed_only: bool = False
    # the kind's own controller: with none, the one value of spec.managedBy that MultiKueue's webhook
    # default replaces (upstream's ApplyDefaultForManagedBy); None: the kind has no managedBy rule
    own_controller: str | None = None
    # where the kind's managedBy sits under ``spec`` (a Kubeflow job's ``spec.runPolicy.managedBy``)
    managed_by_at: tuple[str, ...] = ("managedBy",)
    reading: Reading | None = None  # None: the Job and the Pod, which the simulator reads as Workloads of their own
    webhooks: Webhooks | None = None
    # the labels its integration names for a Pod it controls that only the Pod webhook can add (a
    # StatefulSet's group, named after its UID); the Pod webhook applies every integration's
    pod_marks: Callable[[Mapping[str, Any]], dict[str, str]] | None = None
    multikueue: Any = None  # its jobs.multikueue.Adapter; None: MultiKueue does not dispatch the kind
    live: Live | None = None  # None: the Job and the Pod (their own keys), the kinds queued through Pods
    groups: GroupOwner | None = None  # a kind that keeps its Pods' group Workloads itself (StatefulSet, LWS)
    # the ClusterRole rules it needs while it (or a framework that implies it) is on; the Job's are every
    # install's (the chart's fixed rules)
    grants: tuple[Grant, ...] = ()

    @property
    def group(self) -> str:
        return self.resource.group

    @property
    def managed_by_field(self) -> str:
        """The managedBy field's path, as upstream's messages name it (``spec.runPolicy.managedBy``)."""
        return ".".join(("spec", *self.managed_by_at))

    def managed_by(self, obj: Mapping[str, Any]) -> str | None:
        """The object's managedBy as written, if it is a non-empty string (None for a kind without one)."""
        if self.own_controller is None:
            return None
        node: Any = obj.get("spec")
        for key in self.managed_by_at:
            node = node.get(key) if isinstance(node, Mapping) else None
        return node if isinstance(node, str) and node else None

    @property
    def kind(self) -> str:
        return self.resource.kind


class Frameworks(frozenset[str]):
    """The frameworks that are on (those listed and those they imply), with the registry's answer to
    "which integration is this owner reference's kind?": an object whose controller owner is a kind
    that is on is that kind's child, never queued by itself (upstream's IsOwnerManagedByKueue)."""

    _owners: Mapping[tuple[str, str], Integration]

    def __new__(cls, on: Iterable[str], integrations: Iterable[Integration]) -> Frameworks:
        self = super().__new__(cls, on)
        self._owners = {(i.group, i.kind): i for i in integrations}
        return self

    def owner_integration(self, group: str, kind: str) -> Integration | None:
        """The integration of an owner reference's (group, kind), if pykueue has one that is on."""
        found = self._owners.get((group, kind))
        return found if found is not None and found.framework in self else None
