"""A workload that holds quota in a ClusterQueue whose admission checks no longer include an entry its
status lists (the queue has no checks now, or other ones) still gets its status written, on the real API
server. The entry was written by Kueue (``lastTransitionTime``, ``message``) and then set by its check's
controller, naming only ``name`` and ``state``; an apply of Kueue's that leaves the entry out drops the
fields Kueue owned, the merged entry misses required fields and the server refuses the write (422,
"Required value"). Kueue's apply carries such an entry as the API shows it."""

from __future__ import annotations

import dataclasses
import json

import pytest

from pykueue.controller.core import workload_writer
from pykueue.controller.core.workload_status import WorkloadView, apply_body, desired_status
from pykueue.devcluster.cluster import DevCluster
from pykueue.engine import model
from pykueue.engine.workload import State

pytestmark = pytest.mark.cluster
NAMESPACE = "pykueue-check-entries-left"
EPOCH = "1970-01-01T00:00:00Z"  # the reservation, written at clock 0
WORKLOAD = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": "w", "namespace": NAMESPACE},
            "spec": {"queueName": "q", "podSets": [{"name": "main", "count": 1, "template": {"spec": {
                "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}]}}
SPEC = model.Workload(NAMESPACE, "w", "q", (model.PodSet("main", 1, {"cpu": 1000}),))
ADMISSION = model.Admission("cq", (model.PodSetAssignment("main", 1, {"cpu": "f"}),))
HELD = WorkloadView(state=State.ADMITTED, cluster_queue="cq", admission=ADMISSION, reason=None, message="",
                    requeue_count=0, requeue_at=None, evictions=0, spec=SPEC, check_states={})


def _apply(cluster: DevCluster, body: dict, manager: str):
    return cluster.kubectl("apply", "--server-side", "--force-conflicts", "--subresource=status",
                           f"--field-manager={manager}", "-f", "-", input=json.dumps(body), check=False)


def _get(cluster: DevCluster) -> dict:
    return json.loads(cluster.kubectl("get", "workload", "w", "-n", NAMESPACE, "-o", "json").stdout)


def _reserved_with_check_a_set_ready(cluster: DevCluster) -> None:
    """Kueue reserves with checks `a` and `b` (both Pending, written in full); `a`'s controller sets it
    Ready naming only the entry's key and state."""
    cluster.kubectl("create", "namespace", NAMESPACE, check=False)
    cluster.kubectl("delete", "workload", "w", "-n", NAMESPACE, "--ignore-not-found")
    cluster.kubectl("apply", "--server-side", "-f", "-", input=json.dumps(WORKLOAD))
    checking = dataclasses.replace(HELD, state=State.QUOTA_RESERVED, check_states={"a": "Pending", "b": "Pending"})
    obj = _get(cluster)
    done = _apply(cluster, apply_body(obj, desired_status(checking, obj, None, None, 0.0)), workload_writer.MANAGER)
    assert done.returncode == 0, done.stderr
    check = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": {"name": "w", "namespace": NAMESPACE},
             "status": {"admissionChecks": [{"name": "a", "state": "Ready"}]}}
    done = _apply(cluster, check, "check-controller")
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("queue_checks", [{}, {"b": "Ready"}], ids=["no-checks", "other-checks"])
def test_a_held_workloads_status_is_written_while_it_lists_an_entry_its_queue_no_longer_has(
        crd_cluster: DevCluster, queue_checks: dict[str, str]) -> None:
    """The ClusterQueue's checks changed to none (or to `b` only, now Ready): the workload is admitted and
    its status apply succeeds; `a` stays as its controller set it (Ready, with the time and message Kueue
    wrote at the reservation)."""
    _reserved_with_check_a_set_ready(crd_cluster)
    obj = _get(crd_cluster)
    view = dataclasses.replace(HELD, check_states=queue_checks)
    done = _apply(crd_cluster, apply_body(obj, desired_status(view, obj, None, None, 60.0)), workload_writer.MANAGER)
    assert done.returncode == 0, done.stderr
    status = _get(crd_cluster)["status"]
    assert {c["type"]: c["status"] for c in status["conditions"]}["Admitted"] == "True"
    entries = {e["name"]: e for e in status["admissionChecks"]}
    assert entries["a"] == {"name": "a", "state": "Ready", "lastTransitionTime": EPOCH, "message": ""}
    if queue_checks:  # `b` is the queue's: Kueue writes its new state, stamped now
        assert entries["b"] == {"name": "b", "state": "Ready", "lastTransitionTime": "1970-01-01T00:01:00Z",
                                "message": ""}
