"""The manager's Job mirrors its remote Job's status through a merge patch that also removes what the
remote no longer has, at every depth (the API server refuses uids left in uncountedTerminatedPods)."""

from pykueue.controller.multikueue.workloads import merge_patch


def test_the_job_status_patch_removes_what_the_remote_no_longer_has() -> None:
    old = {"active": 1, "uncountedTerminatedPods": {"succeeded": ["u1"]}, "startTime": "t"}
    new = {"succeeded": 1, "uncountedTerminatedPods": {}, "startTime": "t"}
    assert merge_patch(old, new) == {"active": None, "succeeded": 1, "uncountedTerminatedPods": {"succeeded": None}}
