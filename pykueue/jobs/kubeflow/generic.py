"""A Kubeflow job on the job framework: the GenericJob the controller reconciles for it (upstream's
``kubeflowjob.KubeflowJob``, and ``mpijob.MPIJob`` over the MPI operator's types).

The Workload it becomes is ``workload.py``'s (shared with the simulator); this adds what upstream reads of
the live object and the writes that suspend, start and stop it:

- suspended: ``spec.runPolicy.suspend``; the operator creates no Pods while it is true and deletes them
  when it becomes true;
- start (``RunWithPodSetsInfo``): ``runPolicy.suspend`` false, each pod set's admission info (the
  flavors' node labels and tolerations, the queue labels) merged into its replica type's template, in
  pod-set order;
- stop (``RestorePodSetsInfo``): ``runPolicy.suspend`` true and each template as the Workload recorded it;
- finished: the ``Succeeded`` or ``Failed`` condition is true;
- active: some replica status counts active Pods;
- pods ready: the ``Running`` condition is true.

No reclaimable pods (upstream's kinds do not report them) and no finalizer of Kueue's."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from pykueue.jobs.framework import Action, Note, Patch, TemplatesBySuspend
from pykueue.jobs.framework import workload as framework_workload
from pykueue.jobs.framework.podset import PodSetInfoError, merge_template
from pykueue.jobs.framework.workload import workload_name_for_owner
from pykueue.jobs.kubeflow import workload
from pykueue.jobs.kubeflow.kind import TrainingKind


def is_managed(obj: Mapping[str, Any], manage_without_queue_name: bool) -> bool:
    """Kueue queues it: it names a LocalQueue, or every object is queued."""
    return framework_workload.is_managed(obj) or manage_without_queue_name


def with_pod_sets_info(kind: TrainingKind, obj: Mapping[str, Any], infos: Sequence[Mapping[str, Any]], *,
                       restore: bool) -> dict[str, Any]:
    """``RunWithPodSetsInfo`` (``restore=False``) or ``RestorePodSetsInfo`` plus ``Suspend``
    (``restore=True``), as a new object; one info per ordered replica type, else ``PodSetInfoError``."""
    new = copy.deepcopy(dict(obj))
    types = workload.replica_types(kind, new)
    if len(infos) != len(types):
        raise PodSetInfoError(f"invalid podset infos: expecting {len(types)} podsets, got {len(infos)}")
    spec = new.setdefault("spec", {})
    policy = spec.get("runPolicy")
    spec["runPolicy"] = {**(policy if isinstance(policy, dict) else {}), "suspend": restore}
    for replica_type, info in zip(types, infos, strict=True):
        replica = spec[kind.replica_specs][replica_type]
        replica["template"] = merge_template(copy.deepcopy(replica.get("template") or {}), info, restore)
    return new


JOB_NAME_LABEL = "training.kubeflow.org/job-name"  # the operators' JobNameLabel, on every Pod of a job

class TrainingJob(TemplatesBySuspend):
    """A managed Kubeflow job of ``training``'s kind."""

    def __init__(self, training: TrainingKind, obj: dict[str, Any]) -> None:
        super().__init__(obj)
        self.training = training
        self.kind = training.kind
        self.api_version = training.resource.api_version

    def workload_name(self) -> str:
        return workload_name_for_owner(self.kind, self.training.resource.group, self.meta["name"],
                                       self.meta.get("uid") or None)

    def is_suspended(self) -> bool:
        return workload.suspended(self.obj)

    def suspend(self) -> list[Action]:
        # no webhook suspended it: stop it before its operator makes its Pods
        return [Patch(self.kind, self.namespace, self.meta["name"], {"spec": {"runPolicy": {"suspend": True}}}),
                Note("suspended until its workload is admitted", {"object": self.describe()})]

    def _status(self) -> Mapping[str, Any]:
        status = self.obj.get("status")
        return status if isinstance(status, Mapping) else {}

    def _condition(self, *types: str) -> Mapping[str, Any] | None:
        for cond in self._status().get("conditions") or []:
            if cond.get("status") == "True" and cond.get("type") in types:
                return cond
        return None

    def finished(self) -> tuple[bool, bool, str]:
        cond = self._condition("Succeeded", "Failed")
        if cond is None:
            return False, False, ""
        return True, cond["type"] == "Succeeded", cond.get("message") or ""

    def is_active(self) -> bool:
        statuses = self._status().get("replicaStatuses") or {}
        return any((s or {}).get("active") for s in statuses.values()) if isinstance(statuses, Mapping) else False

    def pods_ready(self) -> bool:
        return self._condition("Running") is not None

    def lingering_pods(self) -> tuple[str, ...]:
        """Its Pods, by the ``training.kubeflow.org/job-name`` label both operators put on them: on suspend
        the training-operator deletes them and sets every replica's ``active`` to 0 at once, while they
        run on through their termination grace period; so the quota is released only once none of them
        may still run (``JobStopped.lingering``). Beyond upstream, which releases at ``active: 0``."""
        return (f"{JOB_NAME_LABEL}={self.meta.get('name')}",)

    def reclaimable_pods(self) -> dict[str, int]:
        return {}

    def build_workload(self) -> dict[str, Any] | None:
        return workload.workload(self.training, self.obj)

    def with_pod_sets_info(self, obj: Mapping[str, Any], infos: Sequence[Mapping[str, Any]], *,
                           restore: bool) -> dict[str, Any]:
        return with_pod_sets_info(self.training, obj, infos, restore=restore)
