"""A Workload's job found by its owner reference's UID, and the Workloads an earlier object of a name owns.

Upstream's job reconciler (``jobframework.ReconcileGenericJob``) skips the jobs Kueue no longer manages (a
namespace ``managedJobsNamespaceSelector`` leaves out now, a queue label removed, an integration off),
but it never clears their Workload's admission either: an evicted or deleted Workload whose job runs on
holds its quota until the job is inactive. Its ``ensureOneWorkload`` finalizes and deletes the Workloads
matched by the job's name whose owner is not the job as it is now (one deleted and re-created under its
name). Here both answers are pure functions of the informers' caches, so they are tested without a cluster:

- ``job_runs``: whether anything of a Workload's job may still run. Its job is the cached object its owner
  reference names *with the same UID*, whatever the managed rules say now: another object under that
  name is a successor, never its job. A managed one counts (its reconciler reports the stop, as
  ``framework.JobStopped``); one no longer managed counts until nothing of it may run or it is gone.
  Nobody stops it, as upstream leaves it, but its quota is not handed to a job that would run beside it.
  A deleted job whose pods may still run (``Kind.outliving``) counts too, beyond upstream, which
  releases the quota once the object is gone while its pods may be in their grace period.
- ``predecessors``: the Workloads an earlier object of a job's kind and name owns.

``OwnerIndex`` keeps the cached Workloads by owner name (upstream's owner field index), so neither walks
every Workload.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pykueue.jobs.framework import GenericJob, SuspendFlag
from pykueue.jobs.pod import groups as pods

Store = Mapping[str, dict[str, Any]]
OwnerKey = tuple[str, str, str, str]  # (API group, kind, namespace, name); the core group is ""
POD = ("", "Pod")


@dataclass(frozen=True, slots=True)
class Kind:
    """One job kind's cache as the lookup reads it.

    ``managed(key)`` is the integration's own load (None when Kueue does not manage the object now);
    ``wrap(obj)`` is any cached object of the kind as its GenericJob, managed or not. For Pods,
    ``group_managed`` and ``group`` do the same for a pod group, by its Workload's ``namespace/name``."""

    objects: Store
    synced: bool
    managed: Callable[[str], GenericJob | None]
    wrap: Callable[[dict[str, Any]], GenericJob]
    group_managed: Callable[[str], GenericJob | None] | None = None
    group: Callable[[str], GenericJob] | None = None
    # UIDs of deleted objects of the kind whose pods may still run (a deleted Job's, until a list of its
    # pods finds none running): such an object still counts as its Workload's running job
    outliving: Mapping[str, Any] = field(default_factory=dict)


# (API group, kind) -> its cache; None for a job kind pykueue knows whose objects it does not watch now
Kinds = Mapping[tuple[str, str], Kind | None]


def group_of(api_version: str) -> str:
    """The API group of an ``apiVersion`` ("batch/v1" is "batch", the core "v1" is "")."""
    return api_version.rpartition("/")[0]


def stopped(job: GenericJob) -> bool:
    """Nothing of ``job`` may run any more: suspended (by its own flag, whatever Kueue's bookkeeping of a
    stop in progress says), finished or being deleted, and nothing of it active (upstream's
    ``!IsActive()`` with the job suspended, the point where it clears an evicted Workload's admission)."""
    held = job.is_suspended() or (isinstance(job, SuspendFlag) and SuspendFlag.is_suspended(job))
    return (held or job.deleting() or job.finished()[0]) and not job.is_active()


def _same_object(obj: Mapping[str, Any], owner: Mapping[str, Any]) -> bool:
    """``obj`` is the object ``owner`` names: the API server requires an owner reference's UID, so a
    reference without one (a hand-made test object) is matched by name alone."""
    uid = owner.get("uid")
    return not uid or (obj.get("metadata") or {}).get("uid") == uid


def is_group_workload(workload: Mapping[str, Any]) -> bool:
    return ((workload["metadata"].get("annotations") or {}).get(pods.IS_GROUP_WORKLOAD)) == "true"


def job_runs(workload: Mapping[str, Any], kinds: Kinds) -> bool | None:
    """Whether anything of ``workload``'s job may still run (see the module's docstring); None while a
    cache it could be in is not filled, or its kind is not watched (quota over-held, never overrun).
    An owner of a kind that is no job kind (a bare Workload's) names no job."""
    meta = workload["metadata"]
    namespace = meta["namespace"]
    if is_group_workload(workload):
        # a pod group is its Pods under the group's name (the Workload's), whoever owns it now
        kind = kinds.get(POD)
        if kind is None or not kind.synced or kind.group is None or kind.group_managed is None:
            return None
        key = f"{namespace}/{meta['name']}"
        return kind.group_managed(key) is not None or not stopped(kind.group(key))
    unknown = False
    for owner in meta.get("ownerReferences") or []:
        ident = (group_of(str(owner.get("apiVersion") or "")), str(owner.get("kind") or ""))
        if ident not in kinds:
            continue
        kind = kinds[ident]
        if kind is None or not kind.synced:
            unknown = True
            continue
        key = f"{namespace}/{owner.get('name')}"
        obj = kind.objects.get(key)
        if obj is None or not _same_object(obj, owner):
            if owner.get("uid") in kind.outliving:
                return True  # deleted, but its pods may still run (in their grace period)
            continue  # gone, or a successor of the same name: not this Workload's job
        if kind.managed(key) is not None or not stopped(kind.wrap(obj)):
            return True
    return None if unknown else False


def pod_may_run(pod: Mapping[str, Any], now: float, deleting_at: float | None) -> bool:
    """Some container of ``pod`` may still run at ``now``: not Succeeded or Failed, and, once it is being
    deleted, not past its ``deletionTimestamp`` (``deleting_at``: where its grace period ends; the kubelet
    has stopped it by then, though a finalizer may keep the object)."""
    if pods.terminated(pod):
        return False
    return deleting_at is None or now < deleting_at


def owner_keys(workload: Mapping[str, Any]) -> Iterator[OwnerKey]:
    meta = workload["metadata"]
    for owner in meta.get("ownerReferences") or []:
        yield (group_of(str(owner.get("apiVersion") or "")), str(owner.get("kind") or ""),
               str(meta.get("namespace") or ""), str(owner.get("name") or ""))


class OwnerIndex:
    """The cached Workloads' keys by owner (upstream's ``GetOwnerKey`` field index): kept equal to the
    Workload cache by ``update`` from its informer's handler."""

    def __init__(self) -> None:
        self._by_owner: dict[OwnerKey, set[str]] = {}
        self._owners: dict[str, tuple[OwnerKey, ...]] = {}

    def update(self, key: str, workload: Mapping[str, Any] | None) -> None:
        """``workload``: the cached Workload under ``key`` now (None: there is none)."""
        for owner in self._owners.pop(key, ()):
            keys = self._by_owner.get(owner)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._by_owner[owner]
        if workload is None:
            return
        owners = tuple(dict.fromkeys(owner_keys(workload)))
        if owners:
            self._owners[key] = owners
            for owner in owners:
                self._by_owner.setdefault(owner, set()).add(key)

    def owned(self, group: str, kind: str, namespace: str, name: str) -> list[str]:
        """The keys of the cached Workloads an object of this kind and name owns (any UID)."""
        return sorted(self._by_owner.get((group, kind, namespace, name), ()))

    def __len__(self) -> int:
        return len(self._owners)


def predecessors(index: OwnerIndex, workloads: Store, obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The cached Workloads an earlier object of ``obj``'s kind and name owns: every owner reference to
    that name carries another UID (upstream's ``ensureOneWorkload``: matched by owner name, not the job
    now). A pod group's Workload is its group's, whoever owned it, and is never one of them."""
    meta = obj["metadata"]
    uid = meta.get("uid")
    if not uid:
        return []
    group, kind = group_of(str(obj.get("apiVersion") or "")), str(obj.get("kind") or "")
    namespace, name = str(meta.get("namespace") or ""), str(meta["name"])
    found = []
    for key in index.owned(group, kind, namespace, name):
        workload = workloads.get(key)
        if workload is None or is_group_workload(workload):
            continue
        refs = [o for o in workload["metadata"].get("ownerReferences") or []
                if (group_of(str(o.get("apiVersion") or "")), o.get("kind"), o.get("name")) == (group, kind, name)]
        if refs and all(o.get("uid") and o.get("uid") != uid for o in refs):
            found.append(workload)
    return found
