"""The QuotaReserved=False reason the controller writes, as upstream words it (issue 53, item 16):
upstream's ``UnadmittedWorkloadReasonWithFallback`` gives the granular reasons only behind its
``UnadmittedWorkloadsObservability`` gate (alpha, off by default); otherwise the scheduler's answers and a
requeue are ``Pending`` and what the queue says is ``Inadmissible``. The engine and ``simulate`` keep the
granular reasons (the simulator's fixed interface says so); only the API side translates."""

from __future__ import annotations

import pytest

from pykueue.controller.core.workload_status import api_reason, desired_status, invalid_status
from pykueue.engine import model
from pykueue.engine.workload import State
from tests.controller.test_workload_status import NOW, obj, view


@pytest.mark.parametrize(("engine", "default", "gated"), [
    ("PendingEvaluation", "Pending", "PendingEvaluation"),
    ("WaitingForQuota", "Pending", "WaitingForQuota"),
    ("NoMatchingFlavor", "Pending", "NoMatchingFlavor"),
    ("ExceedsMaxQuota", "Pending", "ExceedsMaxQuota"),
    ("WaitingForPreemptedWorkloads", "Pending", "WaitingForPreemptedWorkloads"),
    ("WaitingForPodsReady", "Pending", "WaitingForPodsReady"),
    ("Misconfigured", "Inadmissible", "Misconfigured"),  # LocalQueue missing, invalid
    ("Suspended", "Inadmissible", "Suspended"),  # its queue stopped or inactive
    ("Deactivated", "Pending", "PendingEvaluation"),  # Requeued=False says Deactivated
    ("OnHold", "OnHold", "OnHold"),  # its own reason either way
    ("Pending", "Pending", "Pending"),  # already the API's: unchanged (a condition written before)
])
def test_each_engine_reason_as_the_api_shows_it(engine: str, default: str, gated: str) -> None:
    assert api_reason(engine, granular=False) == default
    assert api_reason(engine, granular=True) == gated


def test_the_written_condition_and_the_invalid_workloads_follow_the_gate() -> None:
    message = "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor f, 1 more needed"
    waiting = view(State.PENDING, reason="WaitingForQuota", message=message)

    def reserved(status: dict) -> tuple[str, str, str]:
        (cond,) = [c for c in status["conditions"] if c["type"] == "QuotaReserved"]
        return cond["status"], cond["reason"], cond["message"]

    assert reserved(desired_status(waiting, obj(), None, None, NOW)) == ("False", "Pending", message)
    assert reserved(desired_status(waiting, obj(), None, None, NOW, granular=True)) == ("False", "WaitingForQuota",
                                                                                        message)
    assert reserved(invalid_status(obj(), "spec.podSets[0].count: bad", NOW))[1] == "Inadmissible"
    assert reserved(invalid_status(obj(), "spec.podSets[0].count: bad", NOW, granular=True))[1] == "Misconfigured"


def test_the_gate_is_off_by_default() -> None:
    """Upstream's default; tests/api/test_configuration.py reads it from ``featureGates``."""
    assert model.Config().granular_reasons is False
