"""MultiKueue on real API servers: a manager cluster and two workers, each with its own etcd, API
server and `pykueue controller` (issue 42 items 1, 2 and 4).

The manager is tier 1 (etcd and kube-apiserver only): nothing runs there, since its Jobs carry
``spec.managedBy: kueue.x-k8s.io/multikueue`` and no Job controller acts on them, and a tier 1 cluster
spares the shared CPU a controller manager, scheduler and kwok. The workers are tier 2: their Job
controller makes the pods and kwok runs them. All three clusters and controllers start once for every
MultiKueue module (``multikueue_setup.SHARED``); the test that kills a worker's API server runs after
all the others that use them (``kills_a_worker``).

The invariant checked while jobs run: a job runs in at most one worker at any moment (its pods,
sampled on both workers every 0.3 s, are never active in both at once)."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from pykueue.devcluster.cluster import free_port
from pykueue.devcluster.rest import RestError
from tests.e2e.conftest import Kueue, condition, eventually, is_true
from tests.e2e.multikueue_setup import (  # noqa: F401 - cluster_queue: the faults module reads it here
    LOST_TIMEOUT,
    MANAGER_CONFIG,
    NS,
    ORIGIN,
    Clusters,
    cluster_queue,
    flattened,
    secret,
)


def job(name: str, run: str = "4s", managed: bool | str = True) -> str:
    """``managed``: True for MultiKueue's managedBy, a string for another, False for none (then the
    webhook defaults it to MultiKueue's)."""
    value = "kueue.x-k8s.io/multikueue" if managed is True else managed
    managed_by = f"  managedBy: {value}\n" if value else ""
    return f"""
apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
  namespace: {NS}
  labels: {{kueue.x-k8s.io/queue-name: lq}}
spec:
  suspend: true
{managed_by}  template:
    metadata: {{annotations: {{pod-complete.stage.kwok.x-k8s.io/delay: "{run}"}}}}
    spec:
      restartPolicy: Never
      containers: [{{name: main, image: busybox, resources: {{requests: {{cpu: "1"}}}}}}]
"""


def start(kueue: Kueue, config: Path | None) -> None:
    """The controller started, once ready and (when it serves them) its webhooks registered."""
    offset = kueue.log.stat().st_size if kueue.log.exists() else 0
    serves = any(a.startswith("--webhook-port=") and a != "--webhook-port=0" for a in kueue.args)
    kueue.start(config, ready=b"webhooks registered" if serves else b"controller ready")
    eventually(lambda: b"controller ready" in kueue.log.read_bytes()[offset:], 60, what="controller ready")


@pytest.fixture(scope="module")
def clusters(multikueue_clusters: Clusters) -> Clusters:
    """The session's manager and workers (``multikueue_setup.SHARED``)."""
    return multikueue_clusters


class Sampler:
    """Samples a job's pods on every worker; records any moment they are active in two at once."""

    def __init__(self, clusters: Clusters, name: str) -> None:
        self.clusters, self.name = clusters, name
        self.overlaps: list[dict[str, int]] = []
        self.seen: set[str] = set()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def active(self, kueue: Kueue) -> int:
        try:
            pods = kueue.items("pods", NS, f"batch.kubernetes.io/job-name={self.name}")
        except RestError:
            return 0  # an unreachable worker runs nothing anyone can see
        return sum(1 for p in pods if p["status"].get("phase") in ("Pending", "Running")
                   and not p["metadata"].get("deletionTimestamp"))

    def run(self) -> None:
        while not self.stop.is_set():
            counts = {w: self.active(k) for w, k in self.clusters.workers.items()}
            self.seen |= {w for w, n in counts.items() if n}
            if sum(1 for n in counts.values() if n) > 1:
                self.overlaps.append(counts)
            self.stop.wait(0.3)

    def finish(self) -> None:
        self.stop.set()
        self.thread.join(timeout=30)
        assert self.overlaps == [], f"job {self.name} ran in two workers at once: {self.overlaps}"


def workload_of(kueue: Kueue, job_name: str) -> dict[str, Any] | None:
    return kueue.workload_of(job_name, NS)


def check_state(wl: dict[str, Any] | None) -> dict[str, Any]:
    return next((c for c in (wl or {}).get("status", {}).get("admissionChecks") or [] if c["name"] == "mk"), {})


def test_clusters_and_check_turn_active(clusters: Clusters) -> None:
    manager = clusters.manager
    for name in ("w1", "w2"):
        eventually(lambda name=name: is_true(manager.get("multikueuecluster", name), "Active"), 60,
                   what=f"MultiKueueCluster {name} Active")
        assert condition(manager.get("multikueuecluster", name), "Active")["reason"] == "Active"
    active = eventually(lambda: (c := condition(manager.get("admissioncheck", "mk"), "Active")) and c["reason"] == "Active"
                        and c, 60, what="AdmissionCheck mk Active with both clusters")
    assert (active["status"], active["message"]) == ("True", "The admission check is active")


def test_a_job_is_dispatched_runs_on_one_worker_and_finishes(clusters: Clusters) -> None:
    manager = clusters.manager
    sampler = Sampler(clusters, "first")
    manager.apply(job("first"))
    wl = eventually(lambda: (w := workload_of(manager, "first")) and is_true(w, "Admitted") and w, 90,
                    what="the manager's Workload admitted")
    chosen = wl["status"]["clusterName"]
    assert chosen in ("w1", "w2") and not wl["status"].get("nominatedClusterNames")
    assert check_state(wl)["state"] == "Ready"
    assert check_state(wl)["message"] == f'The workload got reservation on "{chosen}"'
    other = "w2" if chosen == "w1" else "w1"
    remote = eventually(lambda: clusters.workers[chosen].get("job", "first", NS), 60, what="the remote Job")
    labels = remote["metadata"]["labels"]
    assert labels["kueue.x-k8s.io/prebuilt-workload-name"] == wl["metadata"]["name"]
    assert labels["kueue.x-k8s.io/multikueue-origin"] == ORIGIN
    assert "managedBy" not in remote["spec"]
    # the copy in the other worker is removed, and no Job is made there
    eventually(lambda: clusters.workers[other].get("workload", wl["metadata"]["name"], NS) is None, 60,
               what=f"the copy in {other} removed")
    assert clusters.workers[other].get("job", "first", NS) is None
    # the manager's Job mirrors the remote one, completes, and its Workload finishes
    done = eventually(lambda: is_true(j := manager.get("job", "first", NS), "Complete") and j, 120,
                      what="the manager's Job Complete")
    assert done["status"].get("succeeded") == 1
    eventually(lambda: is_true(workload_of(manager, "first"), "Finished"), 60, what="the manager's Workload Finished")
    eventually(lambda: clusters.workers[chosen].get("workload", wl["metadata"]["name"], NS) is None
               and clusters.workers[chosen].get("job", "first", NS) is None, 60, what="the remote objects deleted")
    sampler.finish()
    assert sampler.seen == {chosen}


def test_a_job_not_managed_by_multikueue_is_rejected(clusters: Clusters) -> None:
    manager = clusters.manager
    manager.apply(job("plain", managed="example.com/elsewhere"))  # with none, the webhook would set MultiKueue's
    wl = eventually(lambda: (w := workload_of(manager, "plain")) and check_state(w).get("state") == "Rejected" and w,
                    60, what="the check Rejected")
    assert check_state(wl)["message"] == ('The owner is not managed by Kueue: Expecting spec.managedBy to be '
                                          '"kueue.x-k8s.io/multikueue" not "example.com/elsewhere"')
    eventually(lambda: workload_of(manager, "plain")["spec"].get("active") is False, 60, what="deactivated")
    for worker in clusters.workers.values():
        assert worker.get("job", "plain", NS) is None


def test_cluster_conditions_follow_its_secret(clusters: Clusters, tmp_path: Path) -> None:
    """Missing Secret, an insecure kubeconfig, hostile ones (an exec plugin behind integer names, a
    non-list, 500-deep nesting: refused, nothing run, the other clusters still Active), an unreachable
    worker, then a rotated good one."""
    manager = clusters.manager
    manager.apply("""
apiVersion: kueue.x-k8s.io/v1beta2
kind: MultiKueueCluster
metadata: {name: w3}
spec: {clusterSource: {kubeConfig: {location: w3-secret}}}
""")

    def reason() -> str | None:
        return (condition(manager.get("multikueuecluster", "w3"), "Active") or {}).get("reason")

    eventually(lambda: reason() == "BadKubeConfig", 60, what="BadKubeConfig")
    assert 'secrets "w3-secret" not found' in condition(manager.get("multikueuecluster", "w3"), "Active")["message"]
    good = yaml.safe_load(flattened(clusters.workers["w1"].cluster))
    insecure = json.loads(json.dumps(good))
    insecure["clusters"][0]["cluster"]["insecure-skip-tls-verify"] = True
    manager.apply([secret("w3-secret", yaml.safe_dump(insecure))])
    eventually(lambda: reason() == "InsecureKubeConfig", 60, what="InsecureKubeConfig")
    # an exec plugin on a user named by the integer 1, which the context names by 1 as well: refused as
    # every user is checked, whatever its name's type (the command would create the marker)
    marker = tmp_path / "ran"
    hostile = json.loads(json.dumps(good))
    hostile["contexts"][0]["context"]["user"] = 1
    hostile["users"] = [{"name": 1, "user": {"exec": {"apiVersion": "client.authentication.k8s.io/v1",
                                                      "command": "/bin/sh", "args": ["-c", f"touch {marker}"]}}}]
    manager.apply([secret("w3-secret", yaml.safe_dump(hostile))])

    def message() -> str:
        return (condition(manager.get("multikueuecluster", "w3"), "Active") or {}).get("message") or ""

    eventually(lambda: "users[0].name: Input should be a valid string" in message(), 60, what="the integer name refused")
    assert reason() == "BadKubeConfig" and not marker.exists()
    not_a_list = yaml.safe_dump({**good, "users": 1})
    for malformed, said in ((not_a_list, "users: Input should be a valid list"),
                            ("clusters: " + "[" * 500 + "]" * 500 + "\n", "nested deeper than 32 levels")):
        manager.apply([secret("w3-secret", malformed)])
        eventually(lambda said=said: reason() == "BadKubeConfig" and said in message(),  # type: ignore[misc]
                   60, what=f"BadKubeConfig: {said}")
    assert all(is_true(manager.get("multikueuecluster", w), "Active") for w in ("w1", "w2")), "another cluster fell"
    assert manager.process is not None and manager.process.poll() is None
    dead = json.loads(json.dumps(good))
    dead["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{free_port()}"
    manager.apply([secret("w3-secret", yaml.safe_dump(dead))])
    eventually(lambda: reason() == "ClientConnectionFailed", 60, what="ClientConnectionFailed")
    assert not is_true(manager.get("multikueuecluster", "w3"), "Active")
    manager.apply([secret("w3-secret", yaml.safe_dump(good))])  # rotated to a working one
    eventually(lambda: reason() == "Active", 60, what="Active again after the rotation")
    manager.cluster.kubectl("delete", "multikueuecluster", "w3")


def test_orphans_of_this_origin_are_collected(clusters: Clusters) -> None:
    """A remote Workload with this manager's origin label and no Workload on the manager is deleted
    within gcInterval (2 s here); one of another origin is left alone."""
    worker = clusters.workers["w1"]
    template = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                "spec": {"queueName": "lq", "active": False, "podSets": [{"name": "main", "count": 1, "template": {
                    "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}]}}
    worker.apply([{**template, "metadata": {"name": name, "namespace": NS, "labels": {
        "kueue.x-k8s.io/multikueue-origin": origin}}} for name, origin in (("orphan", ORIGIN), ("foreign", "other"))])
    eventually(lambda: worker.get("workload", "orphan", NS) is None, 60, what="the orphan collected")
    assert worker.get("workload", "foreign", NS) is not None
    worker.cluster.kubectl("delete", "workload", "foreign", "-n", NS)


def test_an_external_dispatcher_nominates_through_the_status(clusters: Clusters, tmp_path: Path) -> None:
    """With a dispatcherName that is not Kueue's, nothing is copied until status.nominatedClusterNames
    names workers; then only those get a copy."""
    manager = clusters.manager
    config = tmp_path / "external.yaml"
    config.write_text(yaml.safe_dump({**MANAGER_CONFIG, "multiKueue": {
        **MANAGER_CONFIG["multiKueue"], "dispatcherName": "example.com/external"}}))
    original = manager.log.parent / "manager-config.yaml"
    manager.stop()
    start(manager, config)
    try:
        manager.apply(job("external"))
        wl = eventually(lambda: (w := workload_of(manager, "external")) and is_true(w, "QuotaReserved")
                        and check_state(w).get("state") == "Pending" and w, 60, what="quota reserved, check Pending")
        assert not wl["status"].get("nominatedClusterNames")
        manager.cluster.kubectl("patch", "workload", wl["metadata"]["name"], "-n", NS, "--subresource=status",
                                "--type=merge", "-p", json.dumps({"status": {"nominatedClusterNames": ["w2"]}}))
        done = eventually(lambda: (w := workload_of(manager, "external")) and is_true(w, "Admitted") and w, 90,
                          what="admitted through the nominated worker")
        assert done["status"]["clusterName"] == "w2"
        assert clusters.workers["w1"].get("workload", wl["metadata"]["name"], NS) is None
        eventually(lambda: is_true(manager.get("job", "external", NS), "Complete"), 120, what="completed")
    finally:
        manager.stop()
        start(manager, original)
    # finished: its copy and remote Job are deleted, whichever manager saw it finish
    eventually(lambda: clusters.workers["w2"].get("workload", wl["metadata"]["name"], NS) is None
               and clusters.workers["w2"].get("job", "external", NS) is None, 60, what="the finished copy deleted")


@pytest.mark.kills_a_worker
def test_a_lost_worker_gives_its_workload_to_the_other(clusters: Clusters) -> None:
    """Its API server killed while it runs a job: the cluster turns inactive; after workerLostTimeout
    the workload is requeued and runs on the other worker."""
    manager = clusters.manager
    sampler = Sampler(clusters, "long")
    manager.apply(job("long", run="600s"))
    wl = eventually(lambda: (w := workload_of(manager, "long")) and is_true(w, "Admitted") and w, 90,
                    what="admitted")
    lost = wl["status"]["clusterName"]
    other = "w2" if lost == "w1" else "w1"
    eventually(lambda: sampler.seen == {lost}, 60, what=f"the job running in {lost}")
    apiserver = next(p for p in clusters.workers[lost].cluster.processes if p.name == "kube-apiserver")
    os.kill(apiserver.pid, signal.SIGKILL)
    killed = time.monotonic()
    eventually(lambda: not is_true(manager.get("multikueuecluster", lost), "Active"), 30, what=f"{lost} inactive")
    assert condition(manager.get("multikueuecluster", lost), "Active")["reason"] == "ClientConnectionFailed"
    remote = eventually(lambda: clusters.workers[other].get("job", "long", NS), LOST_TIMEOUT + 90,
                        what=f"the job dispatched to {other}")
    assert time.monotonic() - killed >= LOST_TIMEOUT - 1, "requeued before workerLostTimeout"
    assert remote["metadata"]["labels"]["kueue.x-k8s.io/multikueue-origin"] == ORIGIN
    eventually(lambda: (w := workload_of(manager, "long")) and (w.get("status") or {}).get("clusterName") == other
               and is_true(w, "Admitted"), 90, what=f"the Workload admitted through {other}")
    eventually(lambda: other in sampler.seen, 60, what=f"the job running in {other}")
    sampler.finish()


def test_a_priority_changed_while_the_copy_runs_reaches_the_worker(clusters: Clusters) -> None:
    """Upstream's spec (multikueue e2e_test.go :1210), read and worked out here: a Job's
    WorkloadPriorityClass label changed while its copy runs on a worker. The manager's Workload takes
    the new priority (the job side), and the copy on the worker is updated to it (before: a copy was
    never written after its creation, so the worker kept ordering and preempting by the old one)."""
    manager = clusters.manager
    classes = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {name: mk-low}
value: 100
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {name: mk-high}
value: 5000
"""
    for kueue in (manager, *clusters.workers.values()):
        kueue.apply(classes)
    manager.apply(job("prio", run="120s").replace("labels: {kueue.x-k8s.io/queue-name: lq}",
                                                  "labels: {kueue.x-k8s.io/queue-name: lq, "
                                                  "kueue.x-k8s.io/priority-class: mk-low}"))
    try:
        wl = eventually(lambda: (w := workload_of(manager, "prio")) and is_true(w, "Admitted") and w, 90,
                        what="the manager's Workload admitted")
        chosen, name = wl["status"]["clusterName"], wl["metadata"]["name"]
        copy = eventually(lambda: clusters.workers[chosen].get("workload", name, NS), 60, what="the copy")
        assert copy["spec"]["priority"] == 100
        manager.cluster.kubectl("label", "job", "prio", "-n", NS, "kueue.x-k8s.io/priority-class=mk-high", "--overwrite")
        eventually(lambda: (workload_of(manager, "prio") or {}).get("spec", {}).get("priority") == 5000, 60,
                   what="the manager's Workload at the new priority")
        synced = eventually(lambda: (c := clusters.workers[chosen].get("workload", name, NS)) and (
            c["spec"].get("priority") == 5000) and c, 60, what="the worker's copy at the new priority")
        assert synced["spec"]["priorityClassRef"]["name"] == "mk-high"
    finally:
        manager.cluster.kubectl("delete", "job", "prio", "-n", NS, "--ignore-not-found", "--wait=false")
