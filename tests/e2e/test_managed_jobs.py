"""Which jobs Kueue manages, live on the tier-2 cluster, as upstream v0.18 decides it: a Configuration with
``manageJobsWithoutQueueName: true`` and a ``managedJobsNamespaceSelector`` selecting the namespaces
labelled ``kueue-managed=true``.

The module stops the session's controller and runs its own with that Configuration and its webhooks on
(registered for its loopback URL); afterwards the session's controller runs again. Each negative check
waits on a barrier instead of a fixed sleep: a Job created after the one checked, whose Workload appears
only once the controller has handled everything before it.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from pykueue.jobs.framework.workload import PREBUILT_WORKLOAD_LABEL
from pykueue.jobs.job.workload import workload_from_job
from tests.e2e.conftest import Kueue, controller_with_webhooks, eventually, is_true, settled
from tests.e2e.objects import PLAIN_FLAVOR, cluster_queue, local_queue

pytestmark = pytest.mark.e2e
SELECTED = "kueue-managed"
# a controller of its own: manageJobsWithoutQueueName and a namespace selector by label would change which
# jobs every other module's tests have Kueue manage
CONFIG = {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
          "manageJobsWithoutQueueName": True,
          "managedJobsNamespaceSelector": {"matchLabels": {SELECTED: "true"}},
          "integrations": {"frameworks": ["batch/job"]}}


def job(name: str, namespace: str, labels: dict[str, str] | None = None,
        owner: dict[str, Any] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": dict(labels or {})}
    if owner is not None:
        meta["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": owner["metadata"]["name"],
                                    "uid": owner["metadata"]["uid"], "controller": True}]
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": {
        "template": {"metadata": {"annotations": {"pod-complete.stage.kwok.x-k8s.io/delay": "600s"}},
                     "spec": {"restartPolicy": "Never",
                              "containers": [{"name": "main", "image": "busybox",
                                              "resources": {"requests": {"cpu": "100m"}}}]}}}}


def create(kueue: Kueue, obj: dict[str, Any]) -> dict[str, Any]:
    return json.loads(kueue.cluster.kubectl("create", "-f", "-", "-o", "json", input=json.dumps(obj)).stdout)


def namespace(kueue: Kueue, name: str, selected: bool) -> None:
    labels = {SELECTED: "true"} if selected else {}
    kueue.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}])


def barrier(kueue: Kueue, ns: str, name: str) -> dict[str, Any]:
    """A Job without a queue label in a selected namespace, created now: its Workload appears once the
    controller has been through every change before it."""
    create(kueue, job(name, ns))
    return eventually(lambda: kueue.workload_of(name, ns), 60, what=f"the Workload of the barrier Job {name}")


@pytest.fixture
def spaces(kueue: Kueue, ns: str) -> Iterator[tuple[str, str]]:
    """The test's namespace, selected, and one left out (``<ns>-out``)."""
    namespace(kueue, ns, selected=True)
    out = f"{ns[:44]}-out"
    namespace(kueue, out, selected=False)
    yield ns, out
    kueue.cluster.kubectl("delete", "namespace", out, "--wait=false", check=False)


def test_a_job_in_a_namespace_left_out_made_before_the_controller_started_is_left_alone(
        kueue: Kueue, spaces: tuple[str, str], tmp_path_factory: pytest.TempPathFactory) -> None:
    """The issue's row: upstream leaves it alone (not suspended, no Workload), though every job is managed."""
    ns, out = spaces
    early = create(kueue, job("early", out))  # the session's controller does not manage unlabelled Jobs
    assert early["spec"].get("suspend") is False
    with controller_with_webhooks(kueue, tmp_path_factory.mktemp("managed"), CONFIG, "managed-jobs") as mine:
        wl = barrier(mine, ns, "barrier")
        assert wl["spec"].get("queueName") in (None, "")  # managed without a queue name
        assert mine.get("job", "barrier", ns)["spec"]["suspend"] is True  # suspended by the webhook
        assert mine.workload_of("early", out) is None
        assert mine.get("job", "early", out)["spec"].get("suspend") is False
        # made now: the webhook leaves it alone too
        late = create(mine, job("late", out))
        assert late["spec"].get("suspend") is False
        barrier(mine, ns, "barrier-2")
        assert mine.workload_of("late", out) is None and mine.workload_of("early", out) is None


def test_a_job_owned_by_a_managed_job_is_its_child_and_never_queued_itself(
        kueue: Kueue, spaces: tuple[str, str], tmp_path_factory: pytest.TempPathFactory) -> None:
    """Upstream's FindAncestorJobManagedByKueue: a Job whose controller owner is a Job Kueue manages is
    neither suspended by the webhook nor given a Workload (its parent's, admitted, stands for it)."""
    ns, _ = spaces
    with controller_with_webhooks(kueue, tmp_path_factory.mktemp("managed"), CONFIG, "managed-jobs") as mine:
        mine.apply(PLAIN_FLAVOR)
        mine.apply(cluster_queue(ns, "4"))
        mine.apply(local_queue(ns, ns))
        parent = create(mine, job("parent", ns, {"kueue.x-k8s.io/queue-name": "lq"}))
        eventually(lambda: is_true(mine.workload_of("parent", ns), "Admitted"), 60, what="the parent admitted")
        # AssignQueueLabelsForPods: the admitted job's pods carry its LocalQueue's and ClusterQueue's names
        started = eventually(lambda: (j := mine.get("job", "parent", ns)) and j["spec"]["suspend"] is False and j,
                             60, what="the parent started")
        labels = started["spec"]["template"]["metadata"]["labels"]
        assert (labels["kueue.x-k8s.io/local-queue-name"], labels["kueue.x-k8s.io/cluster-queue-name"]) == ("lq", ns)
        child = create(mine, job("child", ns, owner=parent))
        assert child["spec"].get("suspend") is False  # not the webhook's to suspend
        barrier(mine, ns, "barrier")
        assert mine.workload_of("child", ns) is None
        assert mine.get("job", "child", ns)["spec"].get("suspend") is False


def garbage_collector_follows_workloads(kueue: Kueue, ns: str, timeout: float = 180.0) -> None:
    """Return once kube-controller-manager's garbage collector watches Workloads: it learns a new CRD's
    kind at its next discovery pass, and until then an owner deleted with orphan propagation goes without
    its Workloads being orphaned (their dangling reference then gets them deleted). Shown by a probe
    Workload owned by a ConfigMap: collected once the ConfigMap is deleted."""
    deadline = time.monotonic() + timeout
    for attempt in itertools.count():
        owner = create(kueue, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"gc-probe-{attempt}",
                                                                                      "namespace": ns}})
        create(kueue, {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": {
            "name": f"gc-probe-{attempt}", "namespace": ns, "ownerReferences": [
                {"apiVersion": "v1", "kind": "ConfigMap", "name": owner["metadata"]["name"],
                 "uid": owner["metadata"]["uid"]}]},
            "spec": {"queueName": "no-such-queue", "podSets": [{"name": "main", "count": 1, "template": {
                "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}]}})
        kueue.cluster.kubectl("delete", "configmap", owner["metadata"]["name"], "-n", ns)
        with contextlib.suppress(AssertionError):
            eventually(lambda a=attempt: kueue.get("workloads.kueue.x-k8s.io", f"gc-probe-{a}", ns) is None, 15,
                       what="the probe Workload collected")
            return
        assert time.monotonic() < deadline, "the garbage collector never followed Workloads"


def test_a_job_deleted_with_orphan_propagation_finishes_its_workload(kueue: Kueue, ns: str) -> None:
    """FinishOrphanedWorkloads (on by default in v0.18): the Workload left without its Job is finished
    (OwnerNotFound), its quota released and its resource-in-use finalizer removed."""
    kueue.apply(PLAIN_FLAVOR)
    kueue.apply(cluster_queue(ns, "4"))
    kueue.apply(local_queue(ns, ns))
    queued = job("orphaned", ns, {"kueue.x-k8s.io/queue-name": "lq"})
    queued["spec"]["suspend"] = True  # the session's controller runs without webhooks
    create(kueue, queued)
    wl = eventually(lambda: (w := kueue.workload_of("orphaned", ns)) and is_true(w, "Admitted") and w, 60,
                    what="the Workload admitted")
    assert "kueue.x-k8s.io/resource-in-use" in wl["metadata"]["finalizers"]
    garbage_collector_follows_workloads(kueue, ns)  # so the Workload is orphaned, not left dangling
    kueue.cluster.kubectl("delete", "job", "orphaned", "-n", ns, "--cascade=orphan")

    def finished() -> dict[str, Any] | None:
        now = kueue.get("workloads.kueue.x-k8s.io", wl["metadata"]["name"], ns)
        return now if is_true(now, "Finished") and "kueue.x-k8s.io/resource-in-use" not in (
            now["metadata"].get("finalizers") or []) else None

    done = eventually(finished, 60, what="the orphaned Workload finished and its finalizer removed")
    cond = next(c for c in done["status"]["conditions"] if c["type"] == "Finished")
    assert (cond["reason"], cond["message"]) == ("OwnerNotFound", "The workload's owner no longer exists")
    cq = eventually(lambda: (c := kueue.get("clusterqueue", ns)) and (c.get("status") or {}).get(
        "reservingWorkloads") == 0 and c, 60, what="the ClusterQueue's quota released")
    assert cq["status"].get("admittedWorkloads") == 0


def test_a_prebuilt_workload_is_adopted_and_a_missing_one_never_made(kueue: Kueue, ns: str) -> None:
    """kueue.x-k8s.io/prebuilt-workload-name: the named Workload gets the Job as its controller owner and
    runs it; a Job naming one that does not exist stays suspended and no Workload is made for it."""
    kueue.apply(PLAIN_FLAVOR)
    kueue.apply(cluster_queue(ns, "4"))
    kueue.apply(local_queue(ns, ns))
    labels = {"kueue.x-k8s.io/queue-name": "lq", PREBUILT_WORKLOAD_LABEL: "pre"}
    spec = job("with-prebuilt", ns, labels)
    spec["spec"]["suspend"] = True  # the session's controller runs without webhooks
    pre = workload_from_job(spec)
    pre["metadata"] = {"name": "pre", "namespace": ns}
    create(kueue, pre)
    made = create(kueue, spec)
    eventually(lambda: ((kueue.get("job", "with-prebuilt", ns) or {}).get("spec") or {}).get("suspend") is False,
               60, what="the Job started by its prebuilt Workload")
    wl = kueue.get("workloads.kueue.x-k8s.io", "pre", ns)
    (owner,) = wl["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == ("Job", "with-prebuilt",
                                                                                  made["metadata"]["uid"], True)
    assert wl["metadata"]["labels"]["kueue.x-k8s.io/job-uid"] == made["metadata"]["uid"]
    assert [w["metadata"]["name"] for w in kueue.items("workloads.kueue.x-k8s.io", ns)] == ["pre"]

    missing = job("missing-prebuilt", ns, {"kueue.x-k8s.io/queue-name": "lq", PREBUILT_WORKLOAD_LABEL: "none"})
    missing["spec"]["suspend"] = True
    create(kueue, missing)
    settled(kueue, ns)
    assert kueue.workload_of("missing-prebuilt", ns) is None
    assert kueue.get("job", "missing-prebuilt", ns)["spec"]["suspend"] is True
