"""Upstream's validating webhooks for every job kind, live on the tier-2 cluster: for Pods, Deployments,
StatefulSets, RayClusters and RayJobs at least one create and one update the API server refuses with
upstream's message, through the controller's own registration (``names.validating_jobs_for``); Pods
Kueue does not manage never reach the Pod hook. And what no webhook catches (a pod group whose members
name different queues) is reported as a Warning event ``ErrWorkloadCompose`` on the object.

The module starts the Ray addon for its CRDs and runs its own controller with every integration on, as
the pod and Ray integration modules do; afterwards the session's controller runs again.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from pykueue.controller.webhooks import names
from tests.e2e.conftest import INTEGRATIONS_CONFIG, Kueue, eventually
from tests.e2e.objects import refused
from tests.e2e.ray_objects import raycluster, rayjob

pytestmark = pytest.mark.e2e
FRAMEWORKS = INTEGRATIONS_CONFIG["integrations"]["frameworks"]
QUEUE = "kueue.x-k8s.io/queue-name"
IMMUTABLE = f'metadata.labels[{QUEUE}]: Invalid value: "lq": field is immutable'


@pytest.fixture
def hooks(integrations_kueue: Kueue) -> Kueue:
    """The shared integrations controller (tests/e2e/conftest.py's ``integrations_kueue``)."""
    return integrations_kueue


def create(kueue: Kueue, manifest: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    return kueue.cluster.kubectl("create", "-f", "-", input=json.dumps(manifest), check=False)


def pod(name: str, ns: str, labels: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "labels": dict(labels or {}),
                         "annotations": dict(annotations or {})},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox",
                                                               "resources": {"requests": {"cpu": "1"}}}]}}


def workload_set(kind: str, name: str, ns: str, queue: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": kind,
            "metadata": {"name": name, "namespace": ns, "labels": {QUEUE: queue}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}


def test_the_controller_registers_a_validating_hook_per_kind(hooks: Kueue) -> None:
    _, validating = names.configuration_names(names.SERVICE)
    config = json.loads(hooks.cluster.kubectl("get", "validatingwebhookconfiguration", validating, "-o",
                                              "json").stdout)
    got = {w["name"]: w for w in config["webhooks"]}
    for hook in names.validating_jobs_for(FRAMEWORKS):
        assert hook.name in got, hook.name
    assert got["vpod.kb.io"]["objectSelector"] == names.MANAGED_PODS


def test_pods_group_metadata_refused_at_create_and_the_group_kept_on_update(hooks: Kueue, ns: str) -> None:
    refused(create(hooks, pod("lonely", ns, {QUEUE: "lq", "kueue.x-k8s.io/pod-group-name": "g"})), "vpod.kb.io",
            "metadata.annotations[kueue.x-k8s.io/pod-group-total-count]: Required value: both the "
            "'kueue.x-k8s.io/pod-group-total-count' annotation and the 'kueue.x-k8s.io/pod-group-name' label "
            "should be set")
    member = pod("member", ns, {QUEUE: "lq", "kueue.x-k8s.io/pod-group-name": "g"},
                 {"kueue.x-k8s.io/pod-group-total-count": "3"})
    assert create(hooks, member).returncode == 0
    refused(hooks.cluster.kubectl("label", "pod", "member", "-n", ns, "kueue.x-k8s.io/pod-group-name=h",
                                  "--overwrite", check=False),
            "vpod.kb.io", 'metadata.labels[kueue.x-k8s.io/pod-group-name]: Invalid value: "h": field is immutable')
    # a Pod Kueue does not manage is never sent to the hook, whatever it carries
    stray = pod("stray", ns, annotations={"kueue.x-k8s.io/pod-group-total-count": "abc"})
    made = create(hooks, stray)
    assert made.returncode == 0, made.stderr


def test_deployments_queue_refused_when_invalid_and_never_dropped(hooks: Kueue, ns: str) -> None:
    refused(create(hooks, workload_set("Deployment", "bad", ns, "Bad_Q")), "vdeployment.kb.io",
            f'metadata.labels[{QUEUE}]: Invalid value: "Bad_Q"')
    assert create(hooks, workload_set("Deployment", "web", ns, "lq")).returncode == 0
    refused(hooks.cluster.kubectl("label", "deployment", "web", "-n", ns, f"{QUEUE}-", check=False),
            "vdeployment.kb.io", IMMUTABLE)


def test_statefulsets_queue_refused_when_invalid_and_never_dropped(hooks: Kueue, ns: str) -> None:
    refused(create(hooks, workload_set("StatefulSet", "bad", ns, "Bad_Q")), "vstatefulset.kb.io",
            f'metadata.labels[{QUEUE}]: Invalid value: "Bad_Q"')
    assert create(hooks, workload_set("StatefulSet", "db", ns, "lq")).returncode == 0
    refused(hooks.cluster.kubectl("label", "statefulset", "db", "-n", ns, f"{QUEUE}-", check=False),
            "vstatefulset.kb.io", IMMUTABLE)
    # an update of the object itself (upstream's hook, like this one, does not cover the scale subresource)
    def resize(replicas: int) -> subprocess.CompletedProcess[str]:
        return hooks.cluster.kubectl("patch", "statefulset", "db", "-n", ns, "--type=merge", "-p",
                                     json.dumps({"spec": {"replicas": replicas}}), check=False)

    refused(resize(2), "vstatefulset.kb.io", "spec.replicas: Invalid value: 2: field is immutable")
    scaled = resize(0)
    assert scaled.returncode == 0, scaled.stderr


def test_rayclusters_autoscaling_refused_at_create_and_on_update(hooks: Kueue, ns: str) -> None:
    message = ("spec.enableInTreeAutoscaling: Invalid value: true: a kueue managed job can use autoscaling only "
               "when the ElasticJobsViaWorkloadSlices feature gate is on and the job is an elastic job")
    scaling = raycluster("scaling", ns)
    scaling["spec"]["enableInTreeAutoscaling"] = True
    refused(create(hooks, scaling), "vraycluster.kb.io", message)
    assert create(hooks, raycluster("fixed", ns)).returncode == 0
    refused(hooks.cluster.kubectl("patch", "raycluster", "fixed", "-n", ns, "--type=merge", "-p",
                                  '{"spec": {"enableInTreeAutoscaling": true}}', check=False),
            "vraycluster.kb.io", message)


def test_rayjobs_cluster_rules_refused_at_create_and_on_update(hooks: Kueue, ns: str) -> None:
    both = rayjob("both", ns)
    both["spec"]["clusterSelector"] = {"ray.io/cluster": "elsewhere"}
    refused(create(hooks, both), "vrayjob.kb.io",
            "spec.clusterSelector: Invalid value: map[ray.io/cluster:elsewhere]: a kueue managed job should not "
            "use an existing cluster")
    assert create(hooks, rayjob("keeps", ns)).returncode == 0
    refused(hooks.cluster.kubectl("patch", "rayjob", "keeps", "-n", ns, "--type=merge", "-p",
                                  '{"spec": {"shutdownAfterJobFinishes": false}}', check=False),
            "vrayjob.kb.io", "spec.shutdownAfterJobFinishes: Invalid value: false: a kueue managed job should "
                             "delete the cluster after finishing")


def test_what_no_webhook_catches_is_a_warning_event_on_the_object(hooks: Kueue, ns: str) -> None:
    """Each member of the group is valid alone; together they name two queues, so the controller cannot
    build the group's Workload: it says so on the Pod, not only in its log."""
    for name, queue in (("a", "lq"), ("b", "lq2")):
        member = pod(name, ns, {QUEUE: queue, "kueue.x-k8s.io/pod-group-name": "split"},
                     {"kueue.x-k8s.io/pod-group-total-count": "2"})
        made = create(hooks, member)
        assert made.returncode == 0, made.stderr

    def warning() -> dict[str, Any] | None:
        events = json.loads(hooks.cluster.kubectl("get", "events", "-n", ns, "-o", "json").stdout)["items"]
        return next((e for e in events if e.get("reason") == "ErrWorkloadCompose" and e.get("type") == "Warning"
                     and e["involvedObject"].get("kind") == "Pod"), None)

    event = eventually(warning, 60, what="an ErrWorkloadCompose Warning event on a member Pod")
    assert "name different queues" in event["message"], event
