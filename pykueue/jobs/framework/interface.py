"""The interface every integration implements: ``GenericJob`` (upstream's ``jobframework.GenericJob``,
``pkg/controller/jobframework/interface.go``) and the base classes most kinds build on: ``OneObject``
(one API object stands for the job), ``SuspendFlag`` (stopped through its own ``spec.suspend``) and
``TemplatesBySuspend`` (started by writing each pod set's flavors into its own template)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from pykueue.jobs.framework.actions import Action, Note, Patch, Replace
from pykueue.jobs.framework.podset import pod_set_info_from_pod_set
from pykueue.jobs.framework.workload import Manifest


class GenericJob(Protocol):
    """What an integration tells the reconciler about the objects it manages (upstream's GenericJob)."""

    kind: str  # the submitted object's kind, for log lines
    # its Workload is checked against it on every reconcile (upstream's EquivalentToWorkload): every
    # one-object kind (a single Pod's spec is immutable but for what Kueue itself changes, so what
    # differs is its labels); a pod group is matched by its own rule (``sync_workload``, upstream's
    # FindMatchingWorkloads for a group) and read only for its queue and priority class (``labelled``)
    compared_whole: bool

    @property
    def namespace(self) -> str: ...

    def describe(self) -> str:
        """``Kind ns/name`` for log lines."""

    def workload_name(self) -> str:
        """The name of the Workload that stands for it."""

    def deleting(self) -> bool:
        """Gone or going: only its finalizers are left to remove."""

    def is_suspended(self) -> bool:
        """No pod of it may run (a suspended Job, gated or terminated Pods)."""

    def finished(self) -> tuple[bool, bool, str]:
        """(finished, succeeded, message)."""

    def is_active(self) -> bool:
        """Some pod of it may still run (upstream's IsActive): quota it holds after an eviction is
        released only once this is False."""

    def pods_ready(self) -> bool: ...

    def reclaimable_pods(self) -> dict[str, int]: ...

    def build_workload(self) -> Manifest | None:
        """The Workload to create, or None while it cannot be built yet (a pod group still arriving).
        Raises ValueError (with the reason) for an object that can never be queued."""

    def suspend(self) -> list[Action]:
        """Stop a running object that has no Workload yet."""

    def run(self, infos: Sequence[Mapping[str, Any]], workload: Mapping[str, Any]) -> list[Action]:
        """Start it with the admitted pod sets' node selectors and tolerations."""

    def stop(self, workload: Mapping[str, Any], evicted: bool) -> list[Action]:
        """Stop it because its Workload is not (or no longer) admitted; restore what ``run`` injected."""

    def workload_deleted(self, workload: Mapping[str, Any]) -> list[Action]:
        """Stop it because its Workload is being deleted (upstream's stop with reason WorkloadDeleted)."""
        ...

    def finalize(self) -> list[Action]:
        """Remove the finalizers that kept its objects until the Workload was updated."""

    def cleanup(self) -> list[Action]:
        """Writes due whatever the Workload says (a group's replaced Pods losing their finalizer)."""

    def sync_workload(self, workload: Mapping[str, Any]) -> list[Action]:
        """Writes that keep an existing Workload and the objects behind it matched (upstream's
        ComposableJob FindMatchingWorkloads: a pod group's excess Pods go, its members own it)."""

    def labelled(self) -> Manifest | None:
        """For a job not ``compared_whole``: a Workload built only to read the queue and the
        priority class the job names now (a pod group's: one member's), or None."""

    def lingering_pods(self) -> tuple[str, ...]:
        """Label selectors of its Pods that may outlive what its status says (``JobStopped.lingering``);
        none for kinds whose status counts terminating Pods (a Job's ``status.terminating``) or whose
        Pods Kueue watches itself."""


class OneObject:
    """The part of a GenericJob that stands for one API object (a Job, a Pod, a RayCluster ...): its
    namespace, how log lines name it, and whether it is being deleted. ``api_version``: what an owner
    reference to it says when the object came without one (a list's items); ``sliced``: an elastic one's
    Workloads are slices (ElasticJobsViaWorkloadSlices), which the controller keeps."""

    kind: str
    api_version: str
    compared_whole = True
    sliced = False

    def __init__(self, obj: dict[str, Any]) -> None:
        self.obj = obj
        self.meta = obj["metadata"]
        # the names of objects it controlled that are gone (a RayJob's deleted RayClusters), whose Pods
        # may still be terminating: set by the controller's index of its children
        self.ended_children: tuple[str, ...] = ()

    def lingering_pods(self) -> tuple[str, ...]:
        return ()

    @property
    def namespace(self) -> str:
        return self.meta["namespace"]

    def describe(self) -> str:
        return f"{self.kind} {self.namespace}/{self.meta['name']}"

    def deleting(self) -> bool:
        return bool(self.meta.get("deletionTimestamp"))

    def sync_workload(self, workload: Mapping[str, Any]) -> list[Action]:
        return []  # one object, one owner: nothing to keep matched beyond the equivalence check

    def labelled(self) -> Manifest | None:
        return None  # compared_whole: the whole Workload is built and compared

    def gated_pods_selector(self) -> str | None:
        """The label selector of its pods that may wait at the elastic-job gate (``sliced`` kinds)."""
        return None

    def slice_pod_set(self, pod: Mapping[str, Any], names: list[str]) -> str | None:
        """Which of its Workload's pod sets (``names``) a pod of it counts in (``sliced`` kinds)."""
        return None

    def slicing_annotations(self) -> dict[str, str]:
        """What an elastic job sized by something live records of it on itself before its slices are
        decided (a RayJob's live cluster); nothing for most kinds. May raise ValueError."""
        return {}

    def stop(self, workload: Mapping[str, Any], evicted: bool) -> list[Action]:
        raise NotImplementedError

    def workload_deleted(self, workload: Mapping[str, Any]) -> list[Action]:
        return self.stop(workload, False)  # one object: stopped as for a Workload not admitted


class SuspendFlag(OneObject):
    """A kind Kueue stops through its own ``spec.suspend`` (a Job, a RayCluster, a RayJob)."""

    def is_suspended(self) -> bool:
        return bool((self.obj.get("spec") or {}).get("suspend"))


class TemplatesBySuspend(SuspendFlag):
    """A custom resource started by writing each pod set's flavors into its own template and stopped by
    ``spec.suspend`` with the templates restored (a RayCluster, a RayJob, a JobSet): the kind says how
    its templates take the pod sets' infos (``with_pod_sets_info``); no finalizer of Kueue's."""

    def with_pod_sets_info(self, obj: Mapping[str, Any], infos: Sequence[Mapping[str, Any]], *,
                           restore: bool) -> dict[str, Any]:
        raise NotImplementedError

    def suspend(self) -> list[Action]:
        # no webhook suspended it: stop it before its operator makes its Pods
        return [Patch(self.kind, self.namespace, self.meta["name"], {"spec": {"suspend": True}}),
                Note("suspended until its workload is admitted", {"object": self.describe()})]

    def run(self, infos: Sequence[Mapping[str, Any]], workload: Mapping[str, Any]) -> list[Action]:
        started = self.with_pod_sets_info(self.obj, infos, restore=False)
        return [Replace(self.kind, self.namespace, self.meta["name"], obj=started),
                Note("started", {"object": self.describe()})]

    def stop(self, workload: Mapping[str, Any], evicted: bool) -> list[Action]:
        if self.is_suspended():
            return []
        pod_sets = (workload.get("spec") or {}).get("podSets") or []
        infos = [pod_set_info_from_pod_set(p) for p in pod_sets]
        return [Replace(self.kind, self.namespace, self.meta["name"],
                        change=lambda fresh: self.with_pod_sets_info(fresh, infos, restore=True)),
                Note("suspended: its workload is not admitted", {"object": self.describe()})]

    def finalize(self) -> list[Action]:
        return []

    def cleanup(self) -> list[Action]:
        return []
