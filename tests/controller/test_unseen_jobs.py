"""Issue 51's scenarios 1 and 5 through the controller's own handlers, with caches that are plain dicts:
what the engine counts is compared with what the job side would run.

The Configuration's ``managedJobsNamespaceSelector`` selects the namespaces labelled ``kueue=on``; the
test's namespace ``ns`` is not labelled (left out after its Job started), so Kueue no longer manages the
Job ``ns/j`` that owns the 3 cpu Workload ``ns/a`` on the 4 cpu ClusterQueue: nobody stops the Job, and
its quota must count for as long as it may run (upstream clears the admission only once the job is
inactive). Scenario 5: the Job ``ns/j`` of the Workload was deleted and re-created under its name."""

from __future__ import annotations

import asyncio
from typing import Any

from pykueue.api.priority import PriorityClasses
from pykueue.controller.jobs import owners
from pykueue.controller.jobs.reconciler import DELETED_WORKLOAD, JobKeys, JobReconciler
from pykueue.controller.manager import Controller
from pykueue.engine import model
from pykueue.engine.model import LabelSelector
from pykueue.engine.workload import State
from pykueue.jobs.framework.workload import RESOURCE_IN_USE_FINALIZER
from pykueue.kube import resources as r
from tests.controller.controllers import Store, controller_with, modified, workload

SELECTED = model.Config(managed_jobs_namespace_selector=LabelSelector(match_labels={"kueue": "on"}))


class Synced(Store):
    """An informer's cache whose first list is in."""

    def __init__(self, objects: dict[str, dict[str, Any]]) -> None:
        super().__init__(objects)
        self.synced = asyncio.Event()
        self.synced.set()


def _job(uid: str = "uid-j", *, suspend: bool = False, active: int = 1) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "j", "namespace": "ns", "uid": uid, "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
            "spec": {"suspend": suspend, "parallelism": 1}, "status": {"active": active}}


def _owned(obj: dict[str, Any], uid: str = "uid-j") -> dict[str, Any]:
    obj["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": uid,
                                           "controller": True}]
    return obj


def _running(job: dict[str, Any], config: model.Config = SELECTED) -> tuple[Controller, Synced]:
    """The Workload ``ns/a`` (3 cpu) of Job j admitted, the Job in the cache as given, the caches filled."""
    ctl, _ = controller_with(_owned(workload("a", "3")), config=config)
    jobs = Synced({"ns/j": job})
    ctl.informers[r.JOB.plural] = jobs  # type: ignore[assignment]
    ctl.job_keys.jobs = jobs.objects
    ctl.ready.set()
    ctl.run_cycle()
    assert ctl.engine.state_of("ns/a") is State.ADMITTED
    return ctl, jobs


def _job_changed(ctl: Controller, jobs: Synced, new: dict[str, Any] | None) -> None:
    """A Job watch event, as the informer delivers it: the cache holds the change first."""
    old = jobs.objects.get("ns/j")
    if new is None:
        del jobs.objects["ns/j"]
        ctl.on_job("DELETED", old, None)
    else:
        jobs.objects["ns/j"] = new
        ctl.on_job("MODIFIED", old, new)


def _cpu_held(ctl: Controller) -> bool:
    return ctl.engine.state_of("ns/a") in (State.ADMITTED, State.STOPPING)


def test_an_evicted_workload_whose_unmanaged_job_runs_holds_its_quota_until_the_job_stops() -> None:
    """Preempted while its Job (3 cpu) runs on, unmanaged: the quota is held (before, it was released at
    once: 3 cpu more admitted beside a Job nobody stops). The user suspends the Job; once its pods are
    gone the Job's own event releases the quota, with no Workload event."""
    ctl, jobs = _running(_job())
    ctl.engine.evict("ns/a", "Preempted", ctl.now_us() + 1, requeue_after_us=60_000_000)
    ctl.run_cycle()  # the eviction's event: nothing of the job has stopped
    assert ctl.engine.state_of("ns/a") is State.STOPPING and _cpu_held(ctl)
    ctl.resync()  # the periodic re-check agrees: it still runs
    assert ctl.engine.state_of("ns/a") is State.STOPPING
    _job_changed(ctl, jobs, _job(suspend=True, active=1))  # suspended, its pod still terminating
    assert ctl.engine.state_of("ns/a") is State.STOPPING
    _job_changed(ctl, jobs, _job(suspend=True, active=0))
    assert ctl.engine.state_of("ns/a") is State.PENDING  # released by the Job's event, queued again


def test_a_deleted_workload_whose_unmanaged_job_runs_keeps_its_finalizer_until_the_job_is_gone() -> None:
    ctl, jobs = _running(_job())
    deleting = _owned(workload("a", "3"))
    deleting["metadata"] |= {"deletionTimestamp": "2026-01-01T00:00:01Z", "finalizers": [RESOURCE_IN_USE_FINALIZER]}
    modified(ctl, deleting)
    assert ctl.engine.state_of("ns/a") is State.STOPPING and not ctl.engine.deleted_job_stopped("ns/a")
    _job_changed(ctl, jobs, None)  # the Job deleted: its pod may still be in its grace period
    assert not ctl.engine.deleted_job_stopped("ns/a") and "uid-j" in ctl.outliving_jobs
    api = Listing()
    ctl.kube = api  # type: ignore[assignment]
    api.found = [_pod() | {"metadata": {"name": "j-x", "namespace": "ns", "deletionTimestamp": "2099-01-01T00:00:00Z"}}]
    asyncio.run(ctl.recheck_outliving())  # terminating, its grace period not over
    assert not ctl.engine.deleted_job_stopped("ns/a")
    assert api.queries == [{"labelSelector": "batch.kubernetes.io/controller-uid=uid-j",
                            "fieldSelector": "metadata.namespace=ns"}]
    api.found = []
    asyncio.run(ctl.recheck_outliving())  # its pods are gone
    assert ctl.engine.deleted_job_stopped("ns/a") and not ctl.outliving_jobs  # its finalizer may go


def test_a_namespace_relabelled_after_its_job_stopped_releases_the_stopping_workload() -> None:
    """The Job is already suspended and idle (the user stopped it) when the namespace is left out: no
    Job event follows, and the Namespace's own event is where the release is seen."""
    config = model.Config(managed_jobs_namespace_selector=LabelSelector(match_labels={"kueue": "on"}))
    ctl, jobs = _running(_job(), config)
    namespaces = Synced({"ns": {"metadata": {"name": "ns", "labels": {"kueue": "on"}}}})
    ctl.informers[r.NAMESPACE.plural] = namespaces  # type: ignore[assignment]
    assert ctl.job_keys.load("ns/j") is not None  # managed now
    ctl.engine.evict("ns/a", "Preempted", ctl.now_us() + 1, requeue_after_us=60_000_000)
    ctl.run_cycle()
    jobs.objects["ns/j"] = _job(suspend=True, active=0)  # stopped; its reconciler's report is still to come
    assert ctl.engine.state_of("ns/a") is State.STOPPING
    namespaces.objects["ns"] = {"metadata": {"name": "ns", "labels": {}}}
    ctl._queue_object(r.NAMESPACE, "ns")
    assert ctl.engine.state_of("ns/a") is State.PENDING


def test_a_deleted_workload_of_an_earlier_job_of_the_same_name_is_released() -> None:
    """Scenario 5: Job j (uid-j) was deleted and re-created (uid-new) while its Workload stayed. The
    running successor is no job of the old Workload: deleted, it is released at once (before, it was
    matched by name and held its quota forever)."""
    ctl, jobs = _running(_job(uid="uid-new"), model.Config())
    assert ctl.job_keys.load("ns/j") is not None  # the successor is managed
    deleting = _owned(workload("a", "3"))
    deleting["metadata"] |= {"deletionTimestamp": "2026-01-01T00:00:01Z", "finalizers": [RESOURCE_IN_USE_FINALIZER]}
    modified(ctl, deleting)
    assert ctl.engine.deleted_job_stopped("ns/a")


class DeletingKube:
    """Records the deletes and creates the job side sends."""

    def __init__(self) -> None:
        self.deleted: list[tuple[str, str | None]] = []
        self.created: list[dict[str, Any]] = []

    async def delete(self, res: r.Resource, name: str, namespace: str | None = None, **_: Any) -> dict[str, Any]:
        self.deleted.append((name, namespace))
        return {}

    async def create(self, res: r.Resource, body: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
        self.created.append(body)
        return body


class Events:
    def __init__(self) -> None:
        self.emitted: list[tuple[str, str]] = []

    def emit(self, obj: dict[str, Any], reason: str, message: str, kind: str = "Normal") -> None:
        self.emitted.append((reason, message))


def test_the_job_side_deletes_the_workloads_of_an_earlier_object_of_its_name() -> None:
    """Upstream's ensureOneWorkload: reconciling the re-created Job j (uid-new), the Workload its
    predecessor (uid-j) owns is deleted (the Workload side then releases it, as above) and the new Job
    gets a Workload of its own, named from its own UID; one being deleted already is left to go."""
    old = _owned(workload("job-j-old", "3"))
    workloads = {"ns/job-j-old": old}
    index = owners.OwnerIndex()
    index.update("ns/job-j-old", old)
    kube, events = DeletingKube(), Events()
    job = _job(uid="uid-new", suspend=True, active=0)
    sync = JobReconciler(kube, JobKeys({"ns/j": job}, False), workloads, {},  # type: ignore[arg-type]
                         lambda: PriorityClasses({}, {}), lambda: 0.0, recorder=events, owners=index)  # type: ignore[arg-type]
    asyncio.run(sync.reconcile("ns/j"))
    assert kube.deleted == [("job-j-old", "ns")]
    (created,) = kube.created
    assert created["metadata"]["name"] != "job-j-old"
    assert events.emitted == [(DELETED_WORKLOAD, "Deleted not matching Workload: ns/job-j-old"),
                              ("CreatedWorkload", f"Created Workload: ns/{created['metadata']['name']}")]
    assert created["metadata"]["ownerReferences"][0]["uid"] == "uid-new"
    old["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:01Z"
    asyncio.run(sync.reconcile("ns/j"))
    assert kube.deleted == [("job-j-old", "ns")]  # not again


def _pod(*, managed: bool = True, phase: str = "Running") -> dict[str, Any]:
    labels = {"kueue.x-k8s.io/queue-name": "lq", **({"kueue.x-k8s.io/managed": "true"} if managed else {})}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns", "uid": "uid-p",
                                                            "labels": labels},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "3"}}}]},
            "status": {"phase": phase}}


class Listing:
    """The API answering the departed Pod's fetch (a list by name) with ``found``."""

    def __init__(self) -> None:
        self.found: list[dict[str, Any]] = []
        self.queries: list[dict[str, Any]] = []

    async def list(self, res: r.Resource, **query: Any) -> dict[str, Any]:
        self.queries.append(query)
        return {"items": self.found}


def test_a_pod_that_lost_kueues_label_alive_holds_its_quota_until_it_has_ended() -> None:
    """Issue 51 scenario 1 for a plain Pod: its ``kueue.x-k8s.io/managed`` label removed while it runs,
    the label-selected watch reports it deleted (carrying it as it was, labelled, with no deletion
    timestamp: a managed Pod really deleted has one, Kueue's finalizer being on it). Then it is preempted: its
    quota is held while it runs (before: it looked gone, and 3 cpu more were admitted beside it), and
    released once a fetch finds it Succeeded."""
    wl = workload("a", "3")
    wl["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "uid-p",
                                          "controller": True}]
    ctl, _ = controller_with(wl, config=model.Config(frameworks=("pod",)))
    pods = Synced({"ns/p": _pod()})
    ctl.informers[r.POD.plural] = pods  # type: ignore[assignment]
    ctl.pod_keys.pods = pods.objects
    ctl.ready.set()
    ctl.run_cycle()
    assert ctl.engine.state_of("ns/a") is State.ADMITTED
    del pods.objects["ns/p"]
    ctl.on_pod("DELETED", None, _pod())  # left the watch's selector: reported deleted, as it was
    ctl.engine.evict("ns/a", "Preempted", ctl.now_us() + 1, requeue_after_us=60_000_000)
    ctl.run_cycle()
    ctl.resync()
    assert ctl.engine.state_of("ns/a") is State.STOPPING  # held: it may still run
    api = Listing()
    ctl.kube = api  # type: ignore[assignment]
    api.found = [_pod(managed=False)]
    asyncio.run(ctl.recheck_departed())
    assert ctl.engine.state_of("ns/a") is State.STOPPING and "ns/p" in ctl.pod_keys.departed
    assert api.queries == [{"fieldSelector": "metadata.namespace=ns,metadata.name=p"}]
    api.found = [_pod(managed=False, phase="Succeeded")]
    asyncio.run(ctl.recheck_departed())
    assert ctl.engine.state_of("ns/a") is State.PENDING and not ctl.pod_keys.departed


def test_a_pod_deleted_for_good_is_not_taken_for_departed() -> None:
    from pykueue.controller.jobs.reconciler import PodKeys

    keys = PodKeys({})
    gone = _pod()
    gone["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    keys.track(gone, deleted=True)  # deleted from the API, its last copy still labelled
    keys.track(_pod(managed=False, phase="Failed"), deleted=True)  # ended, then unlabelled: nothing runs
    assert keys.departed == {}


def test_a_pod_may_run_until_it_has_ended_or_its_grace_period_is_over() -> None:
    now = 1_800_000_000.0
    assert owners.pod_may_run(_pod(), now, None)
    assert owners.pod_may_run(_pod(), now, now + 30)  # terminating: SIGTERM sent, the container may run on
    assert not owners.pod_may_run(_pod(), now, now - 1)  # past its deletionTimestamp: the kubelet killed it
    assert not owners.pod_may_run(_pod(phase="Succeeded"), now, None)
