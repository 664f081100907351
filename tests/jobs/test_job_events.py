"""The Normal Events upstream's job reconciler records on the job (jobframework's ReasonStarted,
ReasonStopped, ReasonUpdatedWorkload, ReasonFinishedWorkload; ReasonCreatedWorkload is the controller's,
once the create has landed: tests/controller/test_job_warnings.py), each after the writes it
describes, with upstream's words (issue 53, item 16). Worked by hand on one Job ``ns/j`` (uid ``u``)."""

from __future__ import annotations

from pykueue.jobs.framework import Event, reconcile
from pykueue.jobs.job.generic import Job
from pykueue.jobs.pod.groups import Pod
from tests.jobs.test_framework import FLAVORS, _admitted, _evicted, _job, _pending, _pod


def _events(actions: list) -> list[tuple[str, str, str, str]]:
    return [(a.kind, a.name, a.reason, a.message) for a in actions if isinstance(a, Event)]


def test_a_started_job_records_started_with_its_cluster_queue_after_the_write() -> None:
    job = Job(_job(suspend=True))
    actions = reconcile(job, _admitted(job.workload_name(), count=2), FLAVORS)
    assert _events(actions) == [("Job", "j", "Started", "Admitted by clusterQueue cq")]
    assert isinstance(actions[-1], Event) and actions[-1].api_version == "batch/v1" and actions[-1].uid == "u"


def test_a_stopped_job_records_stopped_with_the_eviction_message_or_why_it_runs_unadmitted() -> None:
    running = _job(suspend=False)
    running["status"] = {"active": 2}
    evicted = _evicted(Job(running).workload_name())
    evicted["status"]["conditions"][-1]["message"] = "Preempted to accommodate a workload (UID: x, JobUID: y)"
    assert _events(reconcile(Job(running), evicted, FLAVORS)) == [
        ("Job", "j", "Stopped", "Preempted to accommodate a workload (UID: x, JobUID: y)")]
    suspended = {**running, "spec": {**running["spec"], "suspend": True}}
    assert _events(reconcile(Job(suspended), evicted, FLAVORS)) == []  # stopped already: said once
    job = Job(running)
    released = _pending(job.workload_name(), {"type": "QuotaReserved", "status": "False"})
    released["spec"] = job.build_workload()["spec"]
    assert _events(reconcile(job, released, FLAVORS)) == [("Job", "j", "Stopped", "Not admitted by cluster queue")]


def test_a_moved_suspended_job_and_a_finished_one_record_theirs() -> None:
    job = Job(_job(suspend=True))
    name = job.workload_name()
    moved = _pending(name)
    moved["spec"] = {**job.build_workload()["spec"], "queueName": "elsewhere"}
    assert _events(reconcile(job, moved, FLAVORS)) == [
        ("Job", "j", "UpdatedWorkload", f"Updated not matching Workload for suspended job: ns/{name}")]
    done = _job(suspend=False)
    done["status"] = {"conditions": [{"type": "Complete", "status": "True"}], "succeeded": 2}
    admitted = _admitted(name, count=2)
    assert ("Job", "j", "FinishedWorkload", f"Workload 'ns/{name}' is declared finished") in _events(
        reconcile(Job(done), admitted, FLAVORS))


def test_a_preempted_pod_records_its_own_stopped_once() -> None:
    running = _pod("p", gated=False, phase="Running")
    pod = Pod(running)
    evicted = _admitted(pod.workload_name(), extra=({"type": "Evicted", "status": "True", "reason": "Preempted",
                                                     "message": "Preempted"},))
    stopped = [e for e in _events(reconcile(pod, evicted, FLAVORS)) if e[2] == "Stopped"]
    assert len(stopped) == 1 and stopped[0][:2] == ("Pod", "p")
