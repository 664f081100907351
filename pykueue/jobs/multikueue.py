"""What MultiKueue's manager needs to know of a job kind to run it on a worker (upstream's
``jobframework.MultiKueueAdapter``): one ``Adapter`` per kind, declared in its package
(``jobs/<kind>/multikueue.py``, upstream's ``*_multikueue_adapter.go``) and listed on its ``Integration``
record. Each adapter says

- which Workload owners are its kind (``owns``) and which local objects stand for one Workload
  (``local_objects``: the owner itself, or every Pod of a pod group);
- whether the manager may hand the object over (``unmanaged``: upstream's IsJobManagedByKueue; the kinds
  with ``spec.managedBy`` must carry ``kueue.x-k8s.io/multikueue``, so no controller runs them here);
- the object a worker gets (``clone``: name, namespace, labels and annotations, the spec, with the
  prebuilt-workload and origin labels and without ``managedBy``, so the worker's controller takes it);
- the status the local object mirrors from the remote one (``mirrored``; None: left as it is);
- the status it shows once its remote copies are given up (``given_up``; None: nothing to change).

Pure: the manager's reconciler (``controller/multikueue/workloads.py``) reads the caches and writes."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pykueue.engine import multikueue as mk
from pykueue.jobs.framework.workload import ORIGIN_UID_ANNOTATION
from pykueue.kube.resources import Resource

Obj = dict[str, Any]


def clone_meta(local: Mapping[str, Any], workload: str | None, origin: str) -> Obj:
    """Upstream's CloneObjectMetaForCreation plus SetMultiKueueMeta: name, namespace, labels and
    annotations, with the prebuilt Workload's name (unless None) and this manager's origin as labels."""
    meta = local["metadata"]
    labels = dict(meta.get("labels") or {})
    if workload is not None:
        labels[mk.PREBUILT_WORKLOAD_LABEL] = workload
    labels[mk.ORIGIN_LABEL] = origin
    out: Obj = {"name": meta["name"], "namespace": meta["namespace"], "labels": labels}
    if meta.get("annotations"):
        out["annotations"] = dict(meta["annotations"])
    return out


def managed_by_rule(local: Mapping[str, Any]) -> str | None:
    """Why the manager may not hand the object over (its ``spec.managedBy`` is not MultiKueue's), or None."""
    return mk.managed_by_reason((local.get("spec") or {}).get("managedBy") or "")


def always_managed(_local: Mapping[str, Any]) -> str | None:
    """A kind without ``spec.managedBy``: the manager's own integration holds it back (gated Pods)."""
    return None


def spec_without_managed_by(local: Mapping[str, Any]) -> Obj:
    spec = copy.deepcopy(local.get("spec") or {})
    spec.pop("managedBy", None)
    return spec


def whole_spec(local: Mapping[str, Any]) -> Obj:
    return copy.deepcopy(local.get("spec") or {})


def whole_status(_local: Mapping[str, Any], remote: Mapping[str, Any]) -> Obj | None:
    return copy.deepcopy(remote.get("status") or {})


def never_mirrored(_local: Mapping[str, Any], _remote: Mapping[str, Any]) -> Obj | None:
    """Nothing mirrored back: the manager's own controller keeps the status (no managedBy)."""
    return None


def nothing(_local: Mapping[str, Any]) -> Obj | None:
    return None


def prebuilt_workload(obj: Mapping[str, Any]) -> str:
    return str(((obj.get("metadata") or {}).get("labels") or {}).get(mk.PREBUILT_WORKLOAD_LABEL) or "")


def prebuilt_workloads(remote: Mapping[str, Any]) -> list[str]:
    name = prebuilt_workload(remote)
    return [name] if name else []


@dataclass(frozen=True, slots=True)
class Adapter:
    resource: Resource
    unmanaged: Callable[[Mapping[str, Any]], str | None] = managed_by_rule
    spec: Callable[[Mapping[str, Any]], Obj] = spec_without_managed_by
    mirrored: Callable[[Mapping[str, Any], Mapping[str, Any]], Obj | None] = whole_status
    given_up: Callable[[Mapping[str, Any]], Obj | None] = nothing
    group_members: bool = False  # a Workload stands for every owner of this kind (a pod group), not one
    origin_uid: bool = False  # the worker's copy names the manager's UID (its Workload is named after it)
    prebuilt: bool = True  # the worker's copy carries the prebuilt-workload label (not a LWS: several Workloads)
    # upstream's MultiKueueMultiWorkloadAdapter: how many Workloads the local object makes (None: one)
    expected_workloads: Callable[[Mapping[str, Any]], int] | None = None
    # upstream's WorkloadKeysFor: the manager Workloads a worker's object stands for (its prebuilt label)
    workloads_of: Callable[[Mapping[str, Any]], list[str]] = prebuilt_workloads

    def owns(self, owner: Mapping[str, Any]) -> bool:
        group = str(owner.get("apiVersion") or "").rpartition("/")[0]
        return owner.get("kind") == self.resource.kind and group == self.resource.group

    def clone(self, local: Mapping[str, Any], workload: str, origin: str) -> Obj:
        meta = clone_meta(local, workload if self.prebuilt else None, origin)
        if self.origin_uid:
            meta.setdefault("annotations", {})[ORIGIN_UID_ANNOTATION] = local["metadata"].get("uid", "")
        return {"apiVersion": self.resource.api_version, "kind": self.resource.kind, "metadata": meta,
                "spec": self.spec(local)}

    def local_objects(self, workload: Mapping[str, Any], store: Mapping[str, Obj]) -> list[Obj] | None:
        """The manager's objects behind ``workload`` (its owners of this kind, or the controller one);
        None while one of them is not cached yet."""
        meta = workload["metadata"]
        owners = [o for o in meta.get("ownerReferences") or [] if self.owns(o)]
        if not self.group_members:
            owners = [next((o for o in owners if o.get("controller")), owners[0])] if owners else []
        found = [store.get(f"{meta['namespace']}/{o['name']}") for o in owners]
        if not found or any(obj is None for obj in found):
            return None
        return [obj for obj in found if obj is not None]
