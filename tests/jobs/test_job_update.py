"""Upstream's Job webhook on update (jobframework's ValidateJobOnUpdate, the Job's
validatePartialAdmissionUpdate) and the webhook handler that applies it; each message is upstream's,
as `field.ErrorList.ToAggregate()` prints it."""

from __future__ import annotations

import copy
from typing import Any

from pykueue.controller.webhooks import admission
from pykueue.jobs.job.webhook import validate_job_update

QUEUE = "kueue.x-k8s.io/queue-name"
CLASS = "kueue.x-k8s.io/priority-class"
MIN = "kueue.x-k8s.io/job-min-parallelism"


def job(suspend: bool = True, labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None,
        parallelism: int = 3) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "j", "namespace": "ns", "labels": {QUEUE: "lq", **(labels or {})},
                         "annotations": dict(annotations or {})},
            "spec": {"suspend": suspend, "parallelism": parallelism, "completions": parallelism,
                     "template": {"spec": {"containers": [{"name": "c"}]}}}}


def changed(old: dict[str, Any], **labels: str | None) -> dict[str, Any]:
    new = copy.deepcopy(old)
    for key, value in labels.items():
        key = {"queue": QUEUE, "klass": CLASS}[key]
        if value is None:
            new["metadata"]["labels"].pop(key, None)
        else:
            new["metadata"]["labels"][key] = value
    return new


def messages(old: dict[str, Any], new: dict[str, Any], default: bool = False) -> list[str]:
    return [str(e) for e in validate_job_update(old, new, lambda ns: default and ns == "ns")]


def test_a_running_jobs_queue_is_immutable_a_suspended_ones_is_not() -> None:
    running = job(suspend=False)
    assert messages(running, changed(running, queue="other")) == [
        'metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "other": field is immutable']
    assert messages(job(), changed(job(), queue="other")) == []


def test_the_queue_label_may_not_be_dropped_where_a_default_queue_exists() -> None:
    assert messages(job(), changed(job(), queue=None), default=True) == [
        'metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "": queue-name must not be empty in '
        "namespace with default queue"]
    assert messages(job(), changed(job(), queue=None)) == []


def test_a_workload_priority_class_is_changed_any_time_added_only_while_suspended_never_removed() -> None:
    running = job(suspend=False, labels={CLASS: "low"})
    assert messages(running, changed(running, klass="high")) == []
    plain = job(suspend=False)
    assert messages(plain, changed(plain, klass="high")) == [
        'metadata.labels[kueue.x-k8s.io/priority-class]: Invalid value: "high": WorkloadPriorityClass cannot be '
        "added to a non-suspended workload"]
    assert messages(job(), changed(job(), klass="high")) == []
    for suspend in (True, False):
        classed = job(suspend=suspend, labels={CLASS: "low"})
        assert messages(classed, changed(classed, klass=None)) == [
            'metadata.labels[kueue.x-k8s.io/priority-class]: Invalid value: "": WorkloadPriorityClass cannot be '
            "removed from a workload"]


def test_a_running_partially_admitted_job_keeps_its_parallelism() -> None:
    running = job(suspend=False, annotations={MIN: "1"})
    grown = copy.deepcopy(running)
    grown["spec"]["parallelism"] = 4
    assert messages(running, grown) == [
        "spec.parallelism: Forbidden: cannot change when partial admission is enabled and the job is not suspended"]
    suspended = job(annotations={MIN: "1"})
    grown = copy.deepcopy(suspended)
    grown["spec"]["parallelism"] = 4
    assert messages(suspended, grown) == []


def test_an_execution_limit_changes_only_between_two_suspended_states() -> None:
    key = "kueue.x-k8s.io/max-exec-time-seconds"
    before = job(suspend=False, labels={key: "60"})
    after = copy.deepcopy(before)
    after["metadata"]["labels"][key] = "120"
    assert messages(before, after) == [f'metadata.labels[{key}]: Invalid value: "120": field is immutable']
    before["spec"]["suspend"] = after["spec"]["suspend"] = True
    assert messages(before, after) == []


def test_the_min_parallelism_annotation_is_checked_again_only_when_it_changes() -> None:
    """A bad annotation that is already there is not the update's fault (upstream checks it only when
    it changed); a new bad one is refused with the create rule's message."""
    old = job(annotations={MIN: "1"})
    bad = copy.deepcopy(old)
    bad["metadata"]["annotations"][MIN] = "abc"
    assert messages(old, bad) == [
        'metadata.annotations[kueue.x-k8s.io/job-min-parallelism]: Invalid value: "abc": '
        'strconv.Atoi: parsing "abc": invalid syntax']


def test_the_webhook_refuses_a_bad_create_and_a_forbidden_update_in_upstreams_words() -> None:
    handle = admission.validator_for_jobs("Job", ("batch/job",))
    created = job(annotations={MIN: "abc"})
    out = handle({"uid": "1", "operation": "CREATE", "namespace": "ns", "object": created})
    assert not out["allowed"] and out["status"]["code"] == 403
    assert out["status"]["message"] == ('metadata.annotations[kueue.x-k8s.io/job-min-parallelism]: Invalid value: '
                                        '"abc": strconv.Atoi: parsing "abc": invalid syntax')
    running = job(suspend=False)
    out = handle({"uid": "2", "operation": "UPDATE", "namespace": "ns", "object": changed(running, queue="b"),
                  "oldObject": running})
    assert not out["allowed"] and "field is immutable" in out["status"]["message"]
    assert handle({"uid": "3", "operation": "CREATE", "namespace": "ns", "object": job()})["allowed"]
    # the integration off: a hook left registered lets everything through
    off = admission.validator_for_jobs("Job", ("pod",))
    assert off({"uid": "4", "operation": "CREATE", "namespace": "ns", "object": created})["allowed"]
