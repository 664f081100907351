"""The writes the job framework returns: one frozen dataclass per kind of write, and ``Action``, their union.

``reconcile`` (and each kind's ``GenericJob``) answers with a list of these; the controller
(``pykueue.controller.jobs.reconciler``) carries them out, the tests compare them. They stand for what upstream's
``pkg/controller/jobframework/reconciler.go`` does through its client and its event recorder inline:
create or update a Workload, patch, replace or delete an object, record an event.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pykueue.jobs.framework.workload import Manifest


@dataclass(frozen=True, slots=True)
class CreateWorkload:
    """Create this Workload (its priority is resolved by the caller, who knows the classes)."""

    manifest: Manifest
    owner: str  # "Kind ns/name", for the log line


@dataclass(frozen=True, slots=True)
class WorkloadConditions:
    """Set these conditions (type, status, reason, message) on the Workload's status."""

    namespace: str
    name: str
    conditions: tuple[tuple[str, bool, str, str], ...]
    uid: str | None = None  # the Workload's, named in the write
    # a field manager of their own (server-side apply): another condition's write never drops these
    manager: str | None = None


@dataclass(frozen=True, slots=True)
class ReclaimablePods:
    namespace: str
    name: str
    pods: Mapping[str, int]
    uid: str | None = None  # the Workload's, named in the write


@dataclass(frozen=True, slots=True)
class Patch:
    """A JSON merge patch (``json=False``) or RFC 6902 patch (``json=True``) of one object."""

    kind: str
    namespace: str
    name: str
    body: Any
    subresource: str | None = None
    json: bool = False
    missing_ok: bool = False  # a 404 means the write is moot (the object is gone)


@dataclass(frozen=True, slots=True)
class Replace:
    """Replace the object: with ``obj`` (built from the cached copy, whose resourceVersion guards the
    write), or with what ``change`` makes of a fresh copy read just before writing."""

    kind: str
    namespace: str
    name: str
    obj: dict[str, Any] | None = None
    change: Callable[[dict[str, Any]], dict[str, Any]] | None = None


@dataclass(frozen=True, slots=True)
class Delete:
    kind: str
    namespace: str
    name: str


@dataclass(frozen=True, slots=True)
class SetPriority:
    """Give the Workload the priority class its job names now (``ref``, unresolved: None for the
    default); the caller resolves the value, as for ``CreateWorkload``."""

    namespace: str
    name: str
    uid: str | None
    ref: Mapping[str, str] | None


@dataclass(frozen=True, slots=True)
class JobStopped:
    """Nothing of the job runs any more while its Workload still holds an evicted (or deleted)
    reservation: the quota can be released (upstream clears the admission at this point).
    ``lingering``: label selectors of the job's Pods that its status does not count (a Ray cluster's,
    which KubeRay has asked to be deleted when it reports the cluster suspended): the controller lists
    them first, and releases only once none of them may still run. Beyond upstream, which releases at
    the suspended state while those Pods may be terminating."""

    namespace: str
    name: str
    lingering: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Hold:
    """Put the Workload on hold, or let it go (upstream's ``WorkloadOnHold``: a StatefulSet scaled to
    zero): the admission side gives its quota back once its job has stopped (``JobStopped``), writes
    ``QuotaReserved=False`` with reason ``OnHold`` and ``message``, and queues it again only once let go.
    Idempotent: the rules say it on every pass, whatever the status shows yet."""

    namespace: str
    name: str
    held: bool
    message: str = ""


@dataclass(frozen=True, slots=True)
class Event:
    """A Kubernetes Event on an object the integration manages (upstream's recorder, e.g. ``Stopped``)."""

    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str | None
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class Note:
    """A log line (and nothing else): what the integration did or why it did nothing."""

    message: str
    fields: Mapping[str, str] = field(default_factory=dict)
    warning: bool = False


@dataclass(frozen=True)
class Warn:
    """A Warning event on the submitted object: what its owner must fix before Kueue can queue it
    (upstream's ``ErrWorkloadCompose``), shown by ``kubectl describe`` and not only in the log."""

    obj: Mapping[str, Any]
    reason: str
    message: str


ERR_WORKLOAD_COMPOSE = "ErrWorkloadCompose"  # jobframework.ReasonErrWorkloadCompose

Action = (CreateWorkload | WorkloadConditions | ReclaimablePods | Patch | Replace | Delete | SetPriority | JobStopped
          | Hold | Event | Note | Warn)
