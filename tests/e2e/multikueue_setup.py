"""The MultiKueue e2e tests' clusters: a tier 1 manager and tier 2 workers, each with its own etcd, API
server and `pykueue controller`; the manager holds a kubeconfig Secret per worker, an AdmissionCheck
``mk`` of MultiKueue naming the MultiKueueConfig ``mkc`` of every worker, and the ClusterQueue ``cq``
with that check.

One set serves every MultiKueue module (``SHARED``, the session's ``multikueue_clusters`` fixture):
every controller serves its webhooks (the Pod integration gates through them) with the union of the
modules' frameworks, and the workers run JobSet's, KubeRay's and LeaderWorkerSet's controllers (whose
CRDs the manager gets too). The tests share the namespace ``NS`` and leave no job holding quota; the one
that kills a worker's API server runs last (``kills_a_worker``)."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pykueue.devcluster import archived, kuberay
from pykueue.devcluster.cluster import DevCluster, free_port
from tests.e2e.conftest import CRDS, Kueue

NS = "mk-e2e"
ORIGIN = "mk-manager"
LOST_TIMEOUT = 20  # seconds: multiKueue.workerLostTimeout of the manager's Configuration
# Every MultiKueue module's kinds: the Pod integration (pod groups, Deployments' and StatefulSets' Pods),
# JobSets, Ray and LeaderWorkerSets beside batch/v1 Jobs.
FRAMEWORKS = ["batch/job", "pod", "statefulset", "deployment", "jobset.x-k8s.io/jobset", "ray.io/rayjob",
              "ray.io/raycluster", "leaderworkerset.x-k8s.io/leaderworkerset"]
WORKER_CONFIG = {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
                 "integrations": {"frameworks": FRAMEWORKS}}
MANAGER_CONFIG = {**WORKER_CONFIG,
                  "multiKueue": {"gcInterval": "2s", "origin": ORIGIN, "workerLostTimeout": f"{LOST_TIMEOUT}s"}}
NODE = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-0"}}]

QUEUES = f"""
apiVersion: v1
kind: Namespace
metadata: {{name: {NS}}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {{name: default}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {{name: lq, namespace: {NS}}}
spec: {{clusterQueue: cq}}
"""


def cluster_queue(checks: bool) -> str:
    strategy = "  admissionChecksStrategy: {admissionChecks: [{name: mk}]}\n" if checks else ""
    return f"""
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {{name: cq}}
spec:
  namespaceSelector: {{}}
{strategy}  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{{name: default, resources: [{{name: cpu, nominalQuota: "4"}}]}}]
"""


def secret(name: str, kubeconfig: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": "pykueue-system"},
            "data": {"kubeconfig": base64.b64encode(kubeconfig.encode()).decode()}}


def flattened(cluster: DevCluster) -> str:
    """The worker's admin kubeconfig with its certificates inline, as MultiKueue requires."""
    return cluster.kubectl("config", "view", "--flatten", "--raw").stdout


class Clusters:
    def __init__(self, manager: Kueue, workers: dict[str, Kueue]) -> None:
        self.manager = manager
        self.workers = workers


def multikueue_objects(workers: list[str]) -> str:
    """The check, its config naming every worker, and one MultiKueueCluster per worker (its Secret
    ``<worker>-secret``; the first leaves ``locationType`` to its default, the others spell it out)."""
    clusters = "".join(f"""
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: MultiKueueCluster
metadata: {{name: {w}}}
spec: {{clusterSource: {{kubeConfig: {{location: {w}-secret{", locationType: Secret" if i else ""}}}}}}}
""" for i, w in enumerate(workers))
    return f"""
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata: {{name: mk}}
spec:
  controllerName: kueue.x-k8s.io/multikueue
  parameters: {{apiGroup: kueue.x-k8s.io, kind: MultiKueueConfig, name: mkc}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: MultiKueueConfig
metadata: {{name: mkc}}
spec: {{clusters: [{", ".join(workers)}]}}
""" + clusters


@dataclass
class Setup:
    manager_config: dict[str, Any]
    worker_config: dict[str, Any] | None = None
    webhooks: bool = False  # the controllers serve their webhooks (the Pod integration needs them)
    addons: tuple[str, ...] = ()  # "jobset", "ray": run on each worker; their CRDs on the manager too
    workers: tuple[str, ...] = ("w1", "w2")


SHARED = Setup(MANAGER_CONFIG, WORKER_CONFIG, webhooks=True, addons=("jobset", "ray", "lws"))


def addon_crds(addon: str) -> Path:
    return (kuberay.ensure() if addon == "ray" else archived.ensure(archived.BY_ADDON[addon])) / "crds"


def start_controller(directory: Path, name: str, cluster: DevCluster, config: dict[str, Any] | None,
                     webhooks: bool) -> Kueue:
    args = (f"--webhook-port={free_port()}", f"--webhook-cert-dir={directory / f'{name}-certs'}") if webhooks else ()
    kueue = Kueue(cluster, directory / f"{name}-controller.log", args=args)
    path = None
    if config is not None:
        path = directory / f"{name}-config.yaml"
        path.write_text(yaml.safe_dump(config))
    kueue.start(path, ready=b"webhooks registered" if webhooks else b"controller ready")
    return kueue


def start_cluster(directory: Path, tier: int, name: str, setup: Setup, config: dict[str, Any] | None) -> Kueue:
    cluster = DevCluster(directory / name, tier=tier)
    cluster.start(NODE if tier == 2 else None)
    cluster.kubectl("apply", "--server-side", "-f", str(CRDS))
    for addon in setup.addons:
        if tier == 2 and addon == "ray":
            cluster.start_ray(timeout=600)
        elif tier == 2:
            cluster.start_archived(addon, timeout=600)
        else:  # the manager only stores the objects: their CRDs, no controller
            cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(addon_crds(addon)))
    cluster.wait_for("Established", "crd", "--all", timeout=60)
    return start_controller(directory, name, cluster, config, setup.webhooks)


def multikueue(directory: Path, setup: Setup) -> Iterator[Clusters]:
    """The manager and workers started, configured and connected; everything stopped afterwards."""
    started: list[Kueue] = []
    try:
        for name in setup.workers:
            started.append(worker := start_cluster(directory, 2, name, setup, setup.worker_config))
            worker.apply(QUEUES + "---" + cluster_queue(checks=False))
        started.append(manager := start_cluster(directory, 1, "manager", setup, setup.manager_config))
        manager.cluster.kubectl("create", "namespace", "pykueue-system")
        manager.apply([secret(f"{w}-secret", flattened(k.cluster))
                       for w, k in zip(setup.workers, started, strict=False)])
        manager.apply(QUEUES + "---" + cluster_queue(checks=True) + "---"
                      + multikueue_objects(list(setup.workers)))
        yield Clusters(manager, dict(zip(setup.workers, started, strict=False)))
    finally:
        for kueue in reversed(started):
            kueue.stop()
            print(f"\n--- {kueue.log.name} (tail) ---\n{kueue._tail(lines=25)}")
            kueue.cluster.stop()
