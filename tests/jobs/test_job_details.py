"""batch/v1 Job details the reconciler reads from the Job's status and writes on stop, each worked out by
hand from upstream's Job integration (``job_controller.go``: PodsReady, ReclaimablePods, Stop) and
jobframework's reconciler (the PodsReady condition under waitForPodsReady, FailedToStart)."""

from __future__ import annotations

import copy
from typing import Any

from pykueue.jobs.framework import JobStopped, Note, Patch, Replace, WorkloadConditions
from pykueue.jobs.job.generic import STOPPING_ANNOTATION, Job
from tests.jobs.writes import reconcile

FLAVORS = {"on-demand": {"metadata": {"name": "on-demand"}, "spec": {"nodeLabels": {"instance": "on-demand"}}}}
STOP = {"metadata": {"annotations": {STOPPING_ANNOTATION: "true"}}, "spec": {"suspend": True}}


def _job(suspend: bool = False, parallelism: int = 2, completions: int | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"suspend": suspend, "parallelism": parallelism, **spec,
                            "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}
    if completions is not None:
        body["completions"] = completions
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "j", "namespace": "ns", "uid": "u", "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
            "spec": body}


def _workload(job: dict[str, Any], *conditions: dict[str, Any], admitted: bool = True) -> dict[str, Any]:
    pending = copy.deepcopy(job)
    pending["spec"]["suspend"] = True
    wl: dict[str, Any] = {"metadata": {"name": Job(job).workload_name(), "namespace": "ns", "uid": "w"},
                          "spec": Job(pending).build_workload()["spec"], "status": {"conditions": list(conditions)}}
    if admitted:
        wl["status"]["conditions"] += [{"type": "QuotaReserved", "status": "True"}, {"type": "Admitted", "status": "True"}]
        wl["status"]["admission"] = {"clusterQueue": "cq", "podSetAssignments": [
            {"name": "main", "count": job["spec"]["parallelism"], "flavors": {"cpu": "on-demand"}}]}
    return wl


def _started(job: dict[str, Any]) -> dict[str, Any]:
    """The (suspended) Job as admission on the on-demand flavor starts it."""
    job = copy.deepcopy(job)
    job["spec"]["suspend"] = True
    (start, _note) = reconcile(Job(job), _workload(job), FLAVORS)
    assert isinstance(start, Replace) and start.obj is not None
    return start.obj


# ---- pods ready and reclaimable pods from the Job's status ----------------------------------------------


def test_a_pod_the_job_controller_has_not_counted_yet_counts_as_succeeded_for_readiness() -> None:
    """Parallelism 3, completions 3: two pods ready, one succeeded whose UID is still in
    uncountedTerminatedPods (status.succeeded 0): 2 + 1 >= 3, ready."""
    job = _job(parallelism=3, completions=3)
    job["status"] = {"ready": 2, "succeeded": 0, "uncountedTerminatedPods": {"succeeded": ["uid-a"]}}
    assert Job(job).pods_ready()
    job["status"]["uncountedTerminatedPods"] = {"failed": ["uid-a"]}  # a failed one is no progress
    assert not Job(job).pods_ready()


def test_uncounted_succeeded_pods_make_their_quota_reclaimable() -> None:
    """NonIndexed, parallelism 3, completions 4: 1 counted + 2 uncounted succeeded = 3 done, 1 to go,
    so 3 - 1 = 2 pods' quota is reclaimable."""
    job = _job(parallelism=3, completions=4)
    job["status"] = {"succeeded": 1, "uncountedTerminatedPods": {"succeeded": ["a", "b"]}}
    assert Job(job).reclaimable_pods() == {"main": 2}


def test_an_indexed_jobs_completed_and_failed_indexes_make_quota_reclaimable() -> None:
    """Indexed, completions 6, parallelism 3, backoffLimitPerIndex: indexes 0-2 completed, 3 and 4
    failed for good: only index 5 remains, so 3 - 1 = 2 pods are reclaimable (counting succeeded
    pods alone, 6 - 3 = 3 would remain and nothing would be)."""
    job = _job(parallelism=3, completions=6, completionMode="Indexed", backoffLimitPerIndex=0)
    job["status"] = {"succeeded": 3, "failed": 2, "completedIndexes": "0-2", "failedIndexes": "3,4"}
    assert Job(job).reclaimable_pods() == {"main": 2}
    job["status"].update(completedIndexes="0,2", failedIndexes="")  # 2 done, 4 remain >= 3: none
    assert Job(job).reclaimable_pods() == {}


# ---- stop ---------------------------------------------------------------------------------------------------


def test_an_evicted_job_is_suspended_with_the_stopping_annotation_then_restored_without_it() -> None:
    running = _started(_job())
    running["status"] = {"active": 2, "startTime": "2026-01-01T00:00:00Z"}
    evicted = _workload(_job(), {"type": "Evicted", "status": "True", "reason": "Preempted"})
    actions = reconcile(Job(running), evicted, FLAVORS)
    suspend, reset, restore, note = actions
    assert isinstance(suspend, Patch) and suspend.body == STOP
    assert isinstance(reset, Patch) and reset.subresource == "status" and reset.body == {"status": {"startTime": None}}
    assert isinstance(restore, Replace) and restore.change is not None and isinstance(note, Note)
    mid_stop = copy.deepcopy(running)
    mid_stop["metadata"]["annotations"] = {STOPPING_ANNOTATION: "true"}
    mid_stop["spec"]["suspend"] = True
    done = restore.change(copy.deepcopy(mid_stop))
    assert done["spec"]["suspend"] is True
    assert "annotations" not in done["metadata"]
    assert "nodeSelector" not in done["spec"]["template"]["spec"]


def test_a_stop_cut_short_is_finished_before_the_quota_goes() -> None:
    """Suspended with the stopping annotation still on (the restore never happened) and no pod active:
    not yet stopped, so the stop is done again and the quota is not released; once restored, it is."""
    mid_stop = _started(_job())
    mid_stop["metadata"]["annotations"] = {STOPPING_ANNOTATION: "true"}
    mid_stop["spec"]["suspend"] = True
    mid_stop["status"] = {"active": 0}
    evicted = _workload(_job(), {"type": "Evicted", "status": "True", "reason": "Preempted"})
    actions = reconcile(Job(mid_stop), evicted, FLAVORS)
    assert not any(isinstance(a, JobStopped) for a in actions)
    restore = next(a for a in actions if isinstance(a, Replace))
    assert restore.change is not None
    restored = restore.change(copy.deepcopy(mid_stop))
    assert reconcile(Job(restored), evicted, FLAVORS) == [JobStopped("ns", Job(mid_stop).workload_name())]


def test_an_already_suspended_job_still_carrying_its_admission_is_restored() -> None:
    """Suspended by someone else while admitted, then evicted: no suspend write, but the flavor's node
    selector still in the template is taken out (upstream calls Stop whatever IsSuspended says)."""
    suspended = _started(_job())
    suspended["spec"]["suspend"] = True
    evicted = _workload(_job(), {"type": "Evicted", "status": "True", "reason": "Preempted"})
    actions = reconcile(Job(suspended), evicted, FLAVORS)
    assert not any(isinstance(a, Patch) for a in actions)
    restore = next(a for a in actions if isinstance(a, Replace))
    assert restore.change is not None
    assert "nodeSelector" not in restore.change(copy.deepcopy(suspended))["spec"]["template"]["spec"]


# ---- PodsReady under waitForPodsReady -------------------------------------------------------------------------


def _pods_ready(status: bool, reason: str) -> dict[str, Any]:
    return {"type": "PodsReady", "status": "True" if status else "False", "reason": reason}


def _ready_write(actions: list[Any]) -> tuple[Any, ...] | None:
    writes = [a for a in actions if isinstance(a, WorkloadConditions)]
    return writes[0].conditions[0][:3] if writes else None


def test_the_pods_ready_condition_goes_through_upstreams_reasons() -> None:
    job = _job()
    job["status"] = {"ready": 1}
    assert _ready_write(reconcile(Job(job), _workload(job), FLAVORS)) is None  # no waitForPodsReady: never written
    assert _ready_write(reconcile(Job(job), _workload(job), FLAVORS, wait_for_pods_ready=True)) == (
        "PodsReady", False, "WaitForStart")
    job["status"] = {"ready": 2}
    assert _ready_write(reconcile(Job(job), _workload(job, _pods_ready(False, "WaitForStart")), FLAVORS,
                                  wait_for_pods_ready=True)) == ("PodsReady", True, "Started")
    assert _ready_write(reconcile(Job(job), _workload(job, _pods_ready(True, "Started")), FLAVORS,
                                  wait_for_pods_ready=True)) is None  # as it is
    job["status"] = {"ready": 1, "failed": 1}
    assert _ready_write(reconcile(Job(job), _workload(job, _pods_ready(True, "Started")), FLAVORS,
                                  wait_for_pods_ready=True)) == ("PodsReady", False, "WaitForRecovery")
    job["status"] = {"ready": 2, "failed": 1}
    assert _ready_write(reconcile(Job(job), _workload(job, _pods_ready(False, "WaitForRecovery")), FLAVORS,
                                  wait_for_pods_ready=True)) == ("PodsReady", True, "Recovered")


def test_a_pending_workload_waits_for_start() -> None:
    job = _job(suspend=True)
    actions = reconcile(Job(job), _workload(job, admitted=False), FLAVORS, wait_for_pods_ready=True)
    assert _ready_write(actions) == ("PodsReady", False, "WaitForStart")


# ---- a template that contradicts its flavor -------------------------------------------------------------------


def test_a_template_contradicting_its_flavor_finishes_the_workload_failed_to_start() -> None:
    """The Job selects instance=spot, its admission's flavor sets instance=on-demand: podset.Merge's
    conflict is permanent, so the Workload finishes FailedToStart (its quota goes) and the Job stays
    suspended."""
    job = _job(suspend=True)
    job["spec"]["template"]["spec"]["nodeSelector"] = {"instance": "spot"}
    actions = reconcile(Job(job), _workload(job), FLAVORS)
    finish = actions[0]
    assert isinstance(finish, WorkloadConditions)
    (kind, status, reason, message), = finish.conditions
    assert (kind, status, reason) == ("Finished", True, "FailedToStart")
    assert message == ("invalid admission check PodSetUpdate: conflict for nodeSelector: "
                       "conflict for key=instance, value1=spot, value2=on-demand")
    assert not any(isinstance(a, (Replace, Patch)) for a in actions)


def _checked(job: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    wl = _workload(job)
    wl["status"]["admissionChecks"] = [{"name": "prov", "state": "Ready", "podSetUpdates": [{"name": "main", **update}]}]
    return wl


def test_an_admission_checks_pod_set_update_is_injected_with_the_flavor() -> None:
    """getPodSetsInfoFromStatus: the check's nodeSelector and toleration join the flavor's."""
    job = _job(suspend=True)
    toleration = {"key": "reserved", "operator": "Exists", "effect": "NoSchedule"}
    (start, _note) = reconcile(Job(job), _checked(job, {"nodeSelector": {"zone": "a"}, "tolerations": [toleration]}),
                               FLAVORS)
    assert isinstance(start, Replace) and start.obj is not None
    spec = start.obj["spec"]["template"]["spec"]
    assert spec["nodeSelector"] == {"instance": "on-demand", "zone": "a"}
    assert spec["tolerations"] == [toleration]


def test_an_admission_check_contradicting_the_template_or_the_flavor_finishes_the_workload_failed_to_start() -> None:
    """Against the template the conflict shows when the info is merged into it (value1 the template's);
    against the flavor, when the check's update is merged into the flavor's info, named by its check."""
    job = _job(suspend=True)
    job["spec"]["template"]["spec"]["nodeSelector"] = {"zone": "a"}
    (finish, _note) = reconcile(Job(job), _checked(job, {"nodeSelector": {"zone": "b"}}), FLAVORS)
    assert isinstance(finish, WorkloadConditions)
    assert finish.conditions == (("Finished", True, "FailedToStart",
                                  "invalid admission check PodSetUpdate: conflict for "
                                  "nodeSelector: conflict for key=zone, value1=a, value2=b"),)
    (finish, _note) = reconcile(Job(job), _checked(job, {"nodeSelector": {"instance": "spot"}}), FLAVORS)
    assert isinstance(finish, WorkloadConditions)
    assert finish.conditions[0][3] == ('in admission check "prov": invalid admission check PodSetUpdate: conflict '
                                       "for nodeSelector: conflict for key=instance, value1=on-demand, value2=spot")
