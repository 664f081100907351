"""``pykueue get|describe|stop|resume|pending`` on the real API server, checked against what
``kubectl kueue`` (kueuectl) shows and changes: its columns and their values, the merge patches of
stop and resume, and the pending workloads in admission order, computed client-side while the
cluster serves no visibility API, and taken from the visibility API once one is served (an
aggregated API reached through the API server, as upstream serves it).
"""

from __future__ import annotations

import json
import ssl
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from pykueue.devcluster import pki
from pykueue.devcluster.cluster import DevCluster, free_port
from tests.kubectl.conftest import apply, get, headers, patch_status, rows, run, verb

pytestmark = pytest.mark.cluster

NS, NS_B = "kctl-a", "kctl-b"
CQ, EMPTY_CQ, STOP_CQ = "kctl-cq", "kctl-empty", "kctl-stop-cq"
JOB_UID = "11111111-2222-3333-4444-555555555555"


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _workload(name: str, namespace: str = NS, queue: str = "user-queue", priority: int = 0,
              owner: tuple[str, str, str] | None = None, active: bool = True, labels: dict[str, str] | None = None
              ) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": labels or {}}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": owner[0], "kind": owner[1], "name": owner[2], "uid": JOB_UID}]
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": meta,
        "spec": {
            "queueName": queue, "priority": priority, "active": active,
            "podSets": [{"name": "main", "count": 2, "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "image": "busybox",
                                "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}}],
        },
    }


def _condition(kind: str, status: str, reason: str, message: str, at: str) -> dict[str, str]:
    return {"type": kind, "status": status, "reason": reason, "message": message, "lastTransitionTime": at}


ADMISSION = {"clusterQueue": CQ, "podSetAssignments": [{
    "name": "main", "count": 2, "flavors": {"cpu": "kctl-default", "memory": "kctl-default"},
    "resourceUsage": {"cpu": "2", "memory": "2Gi"}}]}
PENDING_MESSAGE = ("couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor "
                   "kctl-default, 3 more needed")


@pytest.fixture(scope="module")
def cluster(kueue_cluster: DevCluster) -> Iterator[DevCluster]:
    """Two namespaces' queues on one ClusterQueue, and workloads in every state kueuectl tells apart."""
    c = kueue_cluster
    quota = [{"coveredResources": ["cpu", "memory"], "flavors": [{"name": "kctl-default", "resources": [
        {"name": "cpu", "nominalQuota": 4, "borrowingLimit": 2}, {"name": "memory", "nominalQuota": "8Gi"}]}]}]
    # without a cohort a borrowingLimit is refused (upstream's CEL rule on the CRD)
    alone = [{"coveredResources": ["cpu", "memory"], "flavors": [{"name": "kctl-default", "resources": [
        {"name": "cpu", "nominalQuota": 4}, {"name": "memory", "nominalQuota": "8Gi"}]}]}]
    apply(c,
          {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
          {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS_B}},
          {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "kctl-default"}},
          {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": CQ},
           "spec": {"cohortName": "kctl-team", "namespaceSelector": {}, "resourceGroups": quota}},
          {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": EMPTY_CQ},
           "spec": {"namespaceSelector": {}, "resourceGroups": alone}},
          {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": STOP_CQ},
           "spec": {"namespaceSelector": {}, "resourceGroups": alone}},
          {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "user-queue", "namespace": NS},
           "spec": {"clusterQueue": CQ}},
          {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "stop-lq", "namespace": NS},
           "spec": {"clusterQueue": STOP_CQ}},
          {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "team-b", "namespace": NS_B},
           "spec": {"clusterQueue": CQ}},
          {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "idle", "namespace": NS},
           "spec": {"clusterQueue": EMPTY_CQ}})
    # Same priority, created a second apart: FIFO puts the older first although its name sorts last.
    apply(c, _workload("old-zebra", owner=("batch/v1", "Job", "zebra-job")))
    time.sleep(1.1)
    apply(c,
          _workload("new-aardvark", owner=("kubeflow.org/v1", "PyTorchJob", "pt-job"), labels={"team": "red"}),
          _workload("top-priority", priority=100, owner=("batch/v1", "Job", "top-job"), labels={"team": "red"}),
          _workload("done-admitted", owner=("batch/v1", "Job", "sample-job")),
          _workload("finished-one"),
          _workload("reserved-one"),
          _workload("stopped-one", active=False),
          _workload("orphan", queue="missing-lq"),
          _workload("wl-toggle", queue="stop-lq"),
          _workload("b-mid", namespace=NS_B, queue="team-b", priority=50))
    now = datetime.now(UTC)
    patch_status(c, "workload", "done-admitted", {
        "conditions": [_condition("QuotaReserved", "True", "QuotaReserved", f"Quota reserved in ClusterQueue {CQ}",
                                  _stamp(now)),
                       _condition("Admitted", "True", "Admitted", "The workload is admitted", _stamp(now))],
        "admission": ADMISSION}, NS)
    patch_status(c, "workload", "reserved-one", {
        "conditions": [_condition("QuotaReserved", "True", "QuotaReserved", "reserved", _stamp(now))],
        "admission": ADMISSION}, NS)
    patch_status(c, "workload", "finished-one", {"conditions": [
        _condition("QuotaReserved", "True", "QuotaReserved", "reserved", "2024-01-01T00:00:00Z"),
        _condition("Admitted", "True", "Admitted", "admitted", "2024-01-01T00:00:00Z"),
        _condition("Finished", "True", "Succeeded", "Job finished successfully", "2024-01-01T01:30:00Z")],
        "admission": ADMISSION}, NS)
    patch_status(c, "workload", "old-zebra", {
        "conditions": [
            _condition("QuotaReserved", "False", "Pending", PENDING_MESSAGE, _stamp(now)),
            _condition("Evicted", "True", "PodsReadyTimeout", "Exceeded the PodsReady timeout", _stamp(now))],
        "requeueState": {"count": 2, "requeueAt": _stamp(now + timedelta(hours=1))},
        "admissionChecks": [{"name": "prov-check", "state": "Pending", "message": "waiting for the provisioning request",
                             "lastTransitionTime": _stamp(now)}]}, NS)
    patch_status(c, "clusterqueue", CQ, {
        "pendingWorkloads": 4, "reservingWorkloads": 2, "admittedWorkloads": 1,
        "conditions": [_condition("Active", "True", "Ready", "Can admit new workloads", _stamp(now))],
        "flavorsReservation": [{"name": "kctl-default", "resources": [
            {"name": "cpu", "total": "4", "borrowed": "0"}, {"name": "memory", "total": "4Gi", "borrowed": "0"}]}],
        "flavorsUsage": [{"name": "kctl-default", "resources": [
            {"name": "cpu", "total": "2", "borrowed": "0"}, {"name": "memory", "total": "2Gi", "borrowed": "0"}]}]})
    patch_status(c, "localqueue", "user-queue", {
        "pendingWorkloads": 3, "reservingWorkloads": 2, "admittedWorkloads": 1,
        "flavorsUsage": [{"name": "kctl-default", "resources": [{"name": "cpu", "total": "2"}]}]}, NS)
    uid = get(c, "workload", "old-zebra", NS)["metadata"]["uid"]
    c.kubectl("create", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Event", "metadata": {"name": "old-zebra.pending", "namespace": NS},
        "involvedObject": {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "name": "old-zebra",
                           "namespace": NS, "uid": uid},
        "reason": "Pending", "message": PENDING_MESSAGE, "type": "Warning", "source": {"component": "kueue-admission"},
        "firstTimestamp": _stamp(now - timedelta(minutes=10)), "lastTimestamp": _stamp(now), "count": 4}))
    yield c


@pytest.fixture
def wide(monkeypatch: pytest.MonkeyPatch) -> None:
    """A console wide enough for kueuectl's full headers (off a terminal the tables fit 80 columns)."""
    monkeypatch.setenv("COLUMNS", "250")


# --- get ------------------------------------------------------------------------------------------------


def test_get_workloads_shows_kueuectls_columns_and_values(cluster: DevCluster, capsys, wide) -> None:
    r = verb(cluster, capsys, "get", "workloads", "-n", NS)
    assert r.code == 0, r.err
    assert headers(r.out) == [
        "NAME", "JOB TYPE", "JOB NAME", "LOCALQUEUE", "CLUSTERQUEUE", "STATUS", "POSITION IN QUEUE", "EXEC TIME", "AGE"]
    got = {row["NAME"]: row for row in rows(r.out)}
    assert set(got) == {"old-zebra", "new-aardvark", "top-priority", "done-admitted", "finished-one", "reserved-one",
                        "stopped-one", "orphan", "wl-toggle"}
    admitted = got["done-admitted"]
    assert (admitted["JOB TYPE"], admitted["JOB NAME"], admitted["LOCALQUEUE"], admitted["CLUSTERQUEUE"],
            admitted["STATUS"], admitted["POSITION IN QUEUE"]) == ("job.batch", "sample-job", "user-queue", CQ,
                                                                  "ADMITTED", "")
    assert admitted["EXEC TIME"].endswith("s") and admitted["AGE"]
    assert got["new-aardvark"]["JOB TYPE"] == "pytorchjob.kubeflow...."  # kueuectl cuts types at 20 characters
    assert got["finished-one"]["STATUS"] == "FINISHED" and got["finished-one"]["EXEC TIME"] == "90m"
    assert got["reserved-one"]["STATUS"] == "QUOTARESERVED" and got["reserved-one"]["EXEC TIME"] == ""
    # Queued ones in admission order in their LocalQueue: priority first, then the older one.
    positions = {n: got[n]["POSITION IN QUEUE"] for n in ("top-priority", "old-zebra", "new-aardvark")}
    assert positions == {"top-priority": "0", "old-zebra": "1", "new-aardvark": "2"}
    assert got["stopped-one"]["STATUS"] == "PENDING" and got["stopped-one"]["POSITION IN QUEUE"] == ""
    assert got["orphan"]["CLUSTERQUEUE"] == "" and got["orphan"]["POSITION IN QUEUE"] == ""
    assert r.err == ""


def test_get_fits_80_columns_off_a_terminal(cluster: DevCluster, capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    for argv in (["get", "wl", "-n", NS], ["get", "wl", "-A", "-o", "wide"], ["get", "cq", "-o", "wide"],
                 ["get", "lq", "-A", "-o", "wide"], ["pending", "cq", CQ], ["describe", "wl", "old-zebra", "-n", NS],
                 ["describe", "cq", CQ]):
        r = verb(cluster, capsys, *argv)
        assert r.code == 0, (argv, r.err)
        assert max(len(line) for line in r.out.splitlines()) <= 80, (argv, r.out)
    r = verb(cluster, capsys, "get", "wl", "-n", NS)
    assert r.out.splitlines()[0].split() == ["NAME", "TYPE", "JOB", "LQ", "CQ", "STATUS", "POS", "EXEC", "AGE"]
    assert all(name in r.out for name in ("old-zebra", "new-aardvark", "done-admitted"))  # names are never cut


def test_get_workloads_of_all_namespaces_filters_and_selectors(cluster: DevCluster, capsys, wide) -> None:
    r = verb(cluster, capsys, "get", "wl", "-A", "--status", "pending", "--clusterqueue", CQ)
    got = {(row["NAMESPACE"], row["NAME"]): row for row in rows(r.out, "NAMESPACE")}
    assert set(got) == {(NS, "old-zebra"), (NS, "new-aardvark"), (NS, "top-priority"), (NS, "stopped-one"),
                        (NS_B, "b-mid")}
    assert got[(NS_B, "b-mid")]["POSITION IN QUEUE"] == "0"  # first in its own LocalQueue
    # A label selector narrows the rows, not the queue the positions are counted in.
    r = verb(cluster, capsys, "get", "wl", "-n", NS, "-l", "team=red")
    assert {row["NAME"]: row["POSITION IN QUEUE"] for row in rows(r.out)} == {"top-priority": "0", "new-aardvark": "2"}
    r = verb(cluster, capsys, "get", "wl", "-n", NS, "--status", "admitted", "--status", "finished")
    assert {row["NAME"] for row in rows(r.out)} == {"done-admitted", "finished-one"}
    r = verb(cluster, capsys, "get", "wl", "-n", NS, "--localqueue", "missing-lq")
    assert [row["NAME"] for row in rows(r.out)] == ["orphan"]
    r = verb(cluster, capsys, "get", "wl", "-n", NS, "-o", "wide")
    wide_rows = {row["NAME"]: row for row in rows(r.out)}
    assert wide_rows["top-priority"]["PRIORITY"] == "100" and wide_rows["done-admitted"]["FLAVORS"] == "kctl-default"


def test_get_cluster_queues_and_local_queues(cluster: DevCluster, capsys, wide) -> None:
    r = verb(cluster, capsys, "get", "clusterqueues")
    assert headers(r.out) == [
        "NAME", "COHORT", "PENDING WORKLOADS", "ADMITTED WORKLOADS", "ACTIVE", "AGE"]
    got = {row["NAME"]: row for row in rows(r.out)}
    assert {k: got[CQ][k] for k in ("COHORT", "PENDING WORKLOADS", "ADMITTED WORKLOADS", "ACTIVE")} == {
        "COHORT": "kctl-team", "PENDING WORKLOADS": "4", "ADMITTED WORKLOADS": "1", "ACTIVE": "true"}
    assert {k: got[EMPTY_CQ][k] for k in ("COHORT", "PENDING WORKLOADS", "ADMITTED WORKLOADS", "ACTIVE")} == {
        "COHORT": "", "PENDING WORKLOADS": "0", "ADMITTED WORKLOADS": "0", "ACTIVE": "false"}
    r = verb(cluster, capsys, "get", "cq", CQ, "-o", "wide")
    assert rows(r.out) == [{**rows(r.out)[0], "STRATEGY": "BestEffortFIFO", "STOP POLICY": "None",
                            "RESERVING WORKLOADS": "2"}]
    r = verb(cluster, capsys, "get", "localqueues", "-n", NS)
    assert headers(r.out) == [
        "NAME", "CLUSTERQUEUE", "PENDING WORKLOADS", "ADMITTED WORKLOADS", "AGE"]
    got = {row["NAME"]: row for row in rows(r.out)}
    assert (got["user-queue"]["CLUSTERQUEUE"], got["user-queue"]["PENDING WORKLOADS"],
            got["user-queue"]["ADMITTED WORKLOADS"]) == (CQ, "3", "1")
    r = verb(cluster, capsys, "get", "lq", "-A")
    assert {(row["NAMESPACE"], row["NAME"]) for row in rows(r.out, "NAMESPACE")} >= {
        (NS, "user-queue"), (NS, "stop-lq"), (NS_B, "team-b")}


def test_get_outputs_json_yaml_and_names(cluster: DevCluster, capsys) -> None:
    r = verb(cluster, capsys, "get", "wl", "-n", NS, "-o", "json")
    doc = json.loads(r.out)
    assert doc["kind"] == "List" and len(doc["items"]) == 9
    assert all(i["kind"] == "Workload" and "managedFields" not in i["metadata"] for i in doc["items"])
    r = verb(cluster, capsys, "get", "wl", "top-priority", "-n", NS, "-o", "yaml")
    one = yaml.safe_load(r.out)
    assert (one["kind"], one["metadata"]["name"], one["spec"]["priority"]) == ("Workload", "top-priority", 100)
    r = verb(cluster, capsys, "get", "cq", CQ, EMPTY_CQ, "-o", "name")
    assert r.out.splitlines() == [f"clusterqueue.kueue.x-k8s.io/{CQ}", f"clusterqueue.kueue.x-k8s.io/{EMPTY_CQ}"]


def test_get_by_name_reports_the_missing_ones(cluster: DevCluster, capsys, wide) -> None:
    r = verb(cluster, capsys, "get", "wl", "top-priority", "nope", "-n", NS)
    assert r.code == 1
    assert [row["NAME"] for row in rows(r.out)] == ["top-priority"]
    assert r.err == f'pykueue get: error: workloads.kueue.x-k8s.io "nope" not found in namespace "{NS}"\n'
    r = verb(cluster, capsys, "get", "wl", "-n", "kctl-nothing-here")
    assert (r.code, r.out, r.err) == (0, "", "No resources found in kctl-nothing-here namespace.\n")


# --- describe -------------------------------------------------------------------------------------------


def test_describe_pending_workload_says_why_it_waits(cluster: DevCluster, capsys, wide) -> None:
    r = verb(cluster, capsys, "describe", "workload", "old-zebra", "-n", NS)
    assert r.code == 0, r.err
    out = r.out
    for expected in ("Name:", "old-zebra", f"Namespace:      {NS}", "Owner:          Job/zebra-job (batch/v1)",
                     "LocalQueue:     user-queue", f"ClusterQueue:   {CQ}", "Status:         PENDING, position 1",
                     "main:  2 pod(s), each cpu=1, memory=1Gi", "Admission:  <none>",
                     "Requeue State:  requeued 2 time(s); requeue at", "(in 5", "prov-check", "Pending",
                     "waiting for the provisioning request"):
        assert expected in out, (expected, out)
    conditions = out[out.index("Conditions:"):out.index("Events:")]
    assert "QuotaReserved  False   Pending" in conditions and PENDING_MESSAGE in conditions
    assert "Evicted        True    PodsReadyTimeout" in conditions and "Exceeded the PodsReady timeout" in conditions
    events = out[out.index("Events:"):]
    assert "Warning  Pending" in events and "(x4 over 10m)" in events and "kueue-admission" in events
    assert PENDING_MESSAGE in events


def test_describe_admitted_workload_shows_its_flavors(cluster: DevCluster, capsys, wide) -> None:
    r = verb(cluster, capsys, "describe", "wl", "done-admitted", "-n", NS)
    assert "Status:         ADMITTED" in r.out
    assert "Pod Set main:  2 pod(s); flavors cpu=kctl-default, memory=kctl-default; usage cpu=2, memory=2Gi" in r.out
    assert "Admitted       True    Admitted" in r.out and "Events:  <none>" in r.out


def test_describe_queues(cluster: DevCluster, capsys, wide) -> None:
    r = verb(cluster, capsys, "describe", "clusterqueue", CQ)
    assert r.code == 0, r.err
    for expected in (f"Name:                {CQ}", "Cohort:              kctl-team", "Stop Policy:         None",
                     "Workloads:           4 pending, 2 reserving quota, 1 admitted",
                     f"Local Queues:        {NS}/user-queue\n                     {NS_B}/team-b"):
        assert expected in r.out, (expected, r.out)
    quota = r.out[r.out.index("Quota:"):r.out.index("Conditions:")].splitlines()
    assert quota[1].split() == ["FLAVOR", "RESOURCE", "NOMINAL", "BORROWING", "LIMIT", "LENDING", "LIMIT", "RESERVED",
                                "IN", "USE", "BORROWED"]
    assert quota[2].split() == ["kctl-default", "cpu", "4", "2", "4", "2", "0"]
    assert quota[3].split() == ["memory", "8Gi", "4Gi", "2Gi", "0"]
    assert "Active  True    Ready" in r.out and "Can admit new workloads" in r.out
    r = verb(cluster, capsys, "describe", "lq", "user-queue", "-n", NS)
    assert f"ClusterQueue:  {CQ}" in r.out and "Workloads:     3 pending, 2 reserving quota, 1 admitted" in r.out
    usage = r.out[r.out.index("Usage:"):r.out.index("Conditions:")].splitlines()
    assert usage[2].split() == ["kctl-default", "cpu", "0", "2"]


# --- stop / resume ----------------------------------------------------------------------------------------


def test_stop_and_resume_a_workload_toggle_spec_active(cluster: DevCluster, capsys) -> None:
    r = verb(cluster, capsys, "stop", "workload", "wl-toggle", "-n", NS)
    assert (r.code, r.out) == (0, "workload.kueue.x-k8s.io/wl-toggle stopped\n")
    assert get(cluster, "workload", "wl-toggle", NS)["spec"]["active"] is False
    r = verb(cluster, capsys, "resume", "wl", "wl-toggle", "-n", NS, "--dry-run=server", "-o", "json")
    assert json.loads(r.out)["spec"]["active"] is True  # what it would be ...
    assert get(cluster, "workload", "wl-toggle", NS)["spec"]["active"] is False  # ... but it was not kept
    r = verb(cluster, capsys, "resume", "wl", "wl-toggle", "-n", NS)
    assert (r.code, r.out) == (0, "workload.kueue.x-k8s.io/wl-toggle resumed\n")
    assert get(cluster, "workload", "wl-toggle", NS)["spec"]["active"] is True


def test_stop_and_resume_queues_set_their_stop_policy(cluster: DevCluster, capsys) -> None:
    assert verb(cluster, capsys, "stop", "clusterqueue", STOP_CQ).out == f"clusterqueue.kueue.x-k8s.io/{STOP_CQ} stopped\n"
    assert get(cluster, "clusterqueue", STOP_CQ)["spec"]["stopPolicy"] == "HoldAndDrain"
    verb(cluster, capsys, "stop", "cq", STOP_CQ, "--keep-already-running")
    assert get(cluster, "clusterqueue", STOP_CQ)["spec"]["stopPolicy"] == "Hold"
    assert verb(cluster, capsys, "resume", "cq", STOP_CQ).code == 0
    assert get(cluster, "clusterqueue", STOP_CQ)["spec"]["stopPolicy"] == "None"
    r = verb(cluster, capsys, "stop", "localqueue", "stop-lq", "-n", NS, "--keep-already-running")
    assert (r.code, r.out) == (0, "localqueue.kueue.x-k8s.io/stop-lq stopped\n")
    assert get(cluster, "localqueue", "stop-lq", NS)["spec"]["stopPolicy"] == "Hold"
    verb(cluster, capsys, "stop", "lq", "stop-lq", "-n", NS, "--dry-run=client")
    assert get(cluster, "localqueue", "stop-lq", NS)["spec"]["stopPolicy"] == "Hold"
    verb(cluster, capsys, "stop", "lq", "stop-lq", "-n", NS)
    assert get(cluster, "localqueue", "stop-lq", NS)["spec"]["stopPolicy"] == "HoldAndDrain"
    verb(cluster, capsys, "resume", "lq", "stop-lq", "-n", NS)
    assert get(cluster, "localqueue", "stop-lq", NS)["spec"]["stopPolicy"] == "None"


# --- pending -----------------------------------------------------------------------------------------------


def test_pending_cluster_queue_in_admission_order_computed_client_side(cluster: DevCluster, capsys, wide) -> None:
    r = verb(cluster, capsys, "pending", "clusterqueue", CQ)
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert lines[0] == f"Pending workloads of ClusterQueue {CQ}"
    assert lines[1].startswith("Computed client-side from the Workloads") and "visibility.kueue.x-k8s.io" in lines[1]
    got = [(row["POSITION IN CLUSTERQUEUE"], row["NAMESPACE"], row["NAME"], row["LOCALQUEUE"], row["PRIORITY"],
            row["POSITION IN LOCALQUEUE"]) for row in rows(r.out, "POSITION")]
    assert got == [("0", NS, "top-priority", "user-queue", "100", "0"), ("1", NS_B, "b-mid", "team-b", "50", "0"),
                   ("2", NS, "old-zebra", "user-queue", "0", "1"), ("3", NS, "new-aardvark", "user-queue", "0", "2")]
    r = verb(cluster, capsys, "pending", "cq", CQ, "-o", "json", "--offset", "1", "--limit", "2")
    summary = json.loads(r.out)
    assert summary["kind"] == "PendingWorkloadsSummary"
    assert [(i["metadata"]["name"], i["positionInClusterQueue"]) for i in summary["items"]] == [
        ("b-mid", 1), ("old-zebra", 2)]
    assert r.err.startswith("Note: computed client-side")


def test_pending_local_queue(cluster: DevCluster, capsys, wide) -> None:
    r = verb(cluster, capsys, "pending", "lq", "user-queue", "-n", NS)
    assert r.out.splitlines()[0] == f"Pending workloads of LocalQueue {NS}/user-queue"
    got = [(row["POSITION IN LOCALQUEUE"], row["NAME"], row["PRIORITY"], row["POSITION IN CLUSTERQUEUE"])
           for row in rows(r.out, "POSITION")]
    assert got == [("0", "top-priority", "100", "0"), ("1", "old-zebra", "0", "2"), ("2", "new-aardvark", "0", "3")]
    r = verb(cluster, capsys, "pending", "lq", "idle", "-n", NS)
    assert r.code == 0 and r.out.splitlines()[-1] == "No pending workloads."


def _batch_user(cluster: DevCluster, directory: Path) -> Path:
    """A kubeconfig for a user who may only read workloads and local queues in ``NS``, as a batch
    user of a shared cluster: a client certificate from the cluster's CA and a namespaced Role."""
    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    ca_dir = cluster.directory / "pki"
    ca = x509.load_pem_x509_certificate((ca_dir / "ca.crt").read_bytes())
    ca_key = load_pem_private_key((ca_dir / "ca.key").read_bytes(), None)
    user = pki.make_leaf(directory, "batch-user", ca, ca_key, "kctl-batch-user", client=True)  # type: ignore[arg-type]
    apply(cluster,
          {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "kctl-reader", "namespace": NS},
           "rules": [{"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads", "localqueues"],
                      "verbs": ["get", "list"]}]},
          {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
           "metadata": {"name": "kctl-reader", "namespace": NS},
           "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "kctl-reader"},
           "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "kctl-batch-user"}]})
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    config["users"][0]["user"] = {"client-certificate": str(user.cert), "client-key": str(user.key)}
    config["contexts"][0]["context"]["namespace"] = NS
    path = directory / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path


def test_a_batch_user_sees_their_namespace(cluster: DevCluster, capsys, wide, tmp_path: Path) -> None:
    """RBAC answers before the API server looks for a route: without rights on the visibility API a
    user gets 403, and pending positions are computed from the namespace they may list."""
    kubeconfig = str(_batch_user(cluster, tmp_path))
    r = run(capsys, "pending", "lq", "user-queue", "--kubeconfig", kubeconfig)  # the context's namespace
    assert r.code == 0, r.err
    assert "is not allowed for this user; positions in the ClusterQueue unknown" in " ".join(r.out.split())
    assert [(row["POSITION IN LOCALQUEUE"], row["NAME"], row["POSITION IN CLUSTERQUEUE"])
            for row in rows(r.out, "POSITION")] == [("0", "top-priority", ""), ("1", "old-zebra", ""),
                                                    ("2", "new-aardvark", "")]
    r = run(capsys, "get", "wl", "--kubeconfig", kubeconfig)
    assert {row["NAME"]: row["POSITION IN QUEUE"] for row in rows(r.out)}["old-zebra"] == "1"
    r = run(capsys, "get", "cq", "--kubeconfig", kubeconfig)
    assert r.code == 1 and r.err == (
        'pykueue get: error: Forbidden: clusterqueues.kueue.x-k8s.io is forbidden: User "kctl-batch-user" cannot '
        'list resource "clusterqueues" in API group "kueue.x-k8s.io" at the cluster scope\n')
    r = run(capsys, "describe", "wl", "old-zebra", "--kubeconfig", kubeconfig)
    assert r.code == 0 and "Events:  <unavailable: Forbidden: events is forbidden" in r.out


# --- the visibility API, when the cluster serves it ----------------------------------------------------------


class _Visibility(BaseHTTPRequestHandler):
    """A stand-in for Kueue's visibility server behind the aggregator: discovery and one answer."""

    answer: dict[str, Any] = {}
    seen: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        path = self.path.split("?")[0]
        if path == "/apis/visibility.kueue.x-k8s.io/v1beta2":
            body: dict[str, Any] = {"kind": "APIResourceList", "apiVersion": "v1",
                                    "groupVersion": "visibility.kueue.x-k8s.io/v1beta2",
                                    "resources": [{"name": "clusterqueues/pendingworkloads", "namespaced": False,
                                                   "kind": "PendingWorkloadsSummary", "verbs": ["get"]}]}
        elif path.startswith("/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/"):
            self.seen.append(self.path)
            body = self.answer
        else:
            self.send_response(404)
            self.end_headers()
            return
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


def _api_service(port: int | None) -> dict[str, Any]:
    service = {"name": "kctl-visibility", "namespace": NS} | ({"port": port} if port else {})
    return {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": "v1beta2.visibility.kueue.x-k8s.io"},
            "spec": {"group": "visibility.kueue.x-k8s.io", "version": "v1beta2", "groupPriorityMinimum": 100,
                     "versionPriority": 100, "insecureSkipTLSVerify": True, "service": service}}


def test_pending_prefers_the_visibility_api_and_falls_back_when_it_is_unavailable(
        cluster: DevCluster, capsys, wide, tmp_path: Path) -> None:
    """Registered but unavailable (503: no such Service), the API is passed over; served (an
    ExternalName Service pointing the aggregator at a local server), its answer is what is shown."""
    try:
        apply(cluster, _api_service(None))
        r = verb(cluster, capsys, "pending", "cq", CQ)
        assert r.code == 0 and "Computed client-side" in r.out and "top-priority" in r.out
        # and the stale APIService is named as the problem it is, with the way out
        said = " ".join(r.out.split())
        assert "registered but unavailable (503): nothing serves its APIService" in said
        assert "namespace deletion hang" in said and "kubectl delete apiservice v1beta2.visibility.kueue.x-k8s.io" in said

        _, ca, key = pki.make_ca(tmp_path, "ca", "visibility-ca")
        serving = pki.make_leaf(tmp_path, "serving", ca, key, "localhost", server_names=("localhost", "127.0.0.1"))
        port = free_port()
        server = ThreadingHTTPServer(("127.0.0.1", port), _Visibility)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(serving.cert), str(serving.key))
        server.socket = context.wrap_socket(server.socket, server_side=True)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        _Visibility.answer = {"kind": "PendingWorkloadsSummary", "apiVersion": "visibility.kueue.x-k8s.io/v1beta2",
                              "metadata": {}, "items": [
                                  {"metadata": {"name": "top-priority", "namespace": NS,
                                                "creationTimestamp": "2024-01-01T00:00:00Z"},
                                   "priority": 100, "localQueueName": "user-queue", "positionInClusterQueue": 5,
                                   "positionInLocalQueue": 7}]}
        try:
            apply(cluster, {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "kctl-visibility", "namespace": NS},
                            "spec": {"type": "ExternalName", "externalName": "localhost", "ports": [{"port": port}]}},
                  _api_service(port))
            cluster.kubectl("wait", "--for=condition=Available", "apiservice/v1beta2.visibility.kueue.x-k8s.io",
                            "--timeout=60s")
            r = verb(cluster, capsys, "pending", "cq", CQ)
            assert r.code == 0, r.err
            assert r.out.splitlines()[1] == "From the visibility API visibility.kueue.x-k8s.io."
            assert [(row["POSITION IN CLUSTERQUEUE"], row["NAME"]) for row in rows(r.out, "POSITION")] == [
                ("5", "top-priority")]
            assert _Visibility.seen[-1].endswith(f"/clusterqueues/{CQ}/pendingworkloads?limit=1000&offset=0")
            # kueuectl's POSITION IN QUEUE is the API's position in the LocalQueue too.
            r = verb(cluster, capsys, "get", "wl", "top-priority", "-n", NS)
            assert rows(r.out)[0]["POSITION IN QUEUE"] == "7"
        finally:
            cluster.kubectl("delete", "apiservice", "v1beta2.visibility.kueue.x-k8s.io", "--ignore-not-found")
            server.shutdown()
            server.server_close()
    finally:
        cluster.kubectl("delete", "apiservice", "v1beta2.visibility.kueue.x-k8s.io", "--ignore-not-found")
        cluster.kubectl("delete", "service", "kctl-visibility", "-n", NS, "--ignore-not-found")
