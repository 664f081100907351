"""``framework.reconcile`` as the write-by-write tests read it: the writes, without the Normal Events
upstream's job reconciler records beside them (Started, Stopped, UpdatedWorkload, FinishedWorkload on the
job), which ``tests/jobs/test_job_events.py`` checks on their own. A Pod's own Stopped event (part of its
stop, upstream's pod controller's) is kept."""

from __future__ import annotations

from typing import Any

from pykueue.jobs import framework
from pykueue.jobs.framework.reconcile import FINISHED_WORKLOAD, STARTED_EVENT, STOPPED_EVENT, UPDATED_WORKLOAD

JOB_EVENTS = (STARTED_EVENT, STOPPED_EVENT, UPDATED_WORKLOAD, FINISHED_WORKLOAD)


def without_job_events(actions: list[framework.Action]) -> list[framework.Action]:
    return [a for a in actions if not (isinstance(a, framework.Event) and a.reason in JOB_EVENTS
                                       and not (a.kind == "Pod" and a.reason == STOPPED_EVENT))]


def reconcile(*args: Any, **kwargs: Any) -> list[framework.Action]:
    return without_job_events(framework.reconcile(*args, **kwargs))
