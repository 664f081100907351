"""The controller as its users run it: a separate `pykueue controller` process on the tier 2 cluster."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml

from pykueue.devcluster import archived
from pykueue.devcluster.cluster import DevCluster

REPO = Path(__file__).resolve().parents[2]
CRDS = REPO / "config" / "crd" / "kueue.x-k8s.io.yaml"
T = TypeVar("T")


def eventually(check: Callable[[], T], timeout: float = 60.0, interval: float = 0.25, what: str = "") -> T:
    """Poll `check` until it returns something truthy; fail with the last value after `timeout`."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what or check.__name__}; last: {last!r}")


class Kueue:
    """The cluster with Kueue's CRDs and a running controller, plus helpers the tests share."""

    def __init__(self, cluster: DevCluster, log: Path, args: tuple[str, ...] = (), tree: Path = REPO) -> None:
        self.cluster = cluster
        self.log = log
        self.tree = tree  # where `python -m pykueue.cli` runs from: this checkout, or a compiled copy
        # No listeners unless a test asks (fixed ports would clash between controllers on one host).
        self.args = ("--metrics-bind-address=0", "--health-probe-bind-address=0", "--webhook-port=0", "--visibility-port=0",
                     *args)
        self.process: subprocess.Popen | None = None

    def start(self, config: Path | None = None, ready: bytes = b"controller ready") -> None:
        args = [sys.executable, "-m", "pykueue.cli", "controller", "--kubeconfig", str(self.cluster.kubeconfig),
                *self.args]
        if config is not None:
            args += ["--config", str(config)]
        offset = self.log.stat().st_size if self.log.exists() else 0
        out = open(self.log, "a")  # noqa: SIM115 - the child owns it
        self.process = subprocess.Popen(args, stdout=out, stderr=out, cwd=self.tree)
        # this start's own line: the log is appended to across restarts
        try:
            eventually(lambda: ready in self.log.read_bytes()[offset:]
                       or self.process.poll() is not None, 60, what=ready.decode())
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n--- controller log ---\n{self._tail(offset)}") from None
        if self.process.poll() is not None:
            raise AssertionError(f"the controller exited with {self.process.returncode}:\n{self._tail(offset)}")

    @contextlib.contextmanager
    def restarted_with(self, config: Path) -> Iterator[None]:
        """The controller restarted with a Kueue Configuration for one test, then as it was."""
        self.stop()
        self.start(config)
        try:
            yield
        finally:
            self.stop()
            self.start()

    def _tail(self, offset: int = 0, lines: int = 40) -> str:
        return "\n".join(self.log.read_bytes()[offset:].decode(errors="replace").splitlines()[-lines:])

    def stop(self, kill: bool = False) -> None:
        if self.process is not None and self.process.poll() is None:
            (self.process.kill if kill else self.process.terminate)()
            self.process.wait(timeout=30)
        self.process = None

    def apply(self, manifest: str | list[dict[str, Any]]) -> None:
        text = manifest if isinstance(manifest, str) else yaml.safe_dump_all(manifest, sort_keys=False)
        self.cluster.kubectl("apply", "--server-side", "-f", "-", input=text)

    def get(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        """What ``kubectl get KIND NAME -o json`` shows, or None; read in process (polls call it often)."""
        return self.cluster.rest.get(kind, name, namespace)

    def items(self, kind: str, namespace: str, selector: str | None = None) -> list[dict[str, Any]]:
        return self.cluster.rest.list(kind, namespace, selector)

    def workload_of(self, job: str, namespace: str) -> dict[str, Any] | None:
        for wl in self.items("workloads.kueue.x-k8s.io", namespace):
            owners = wl["metadata"].get("ownerReferences") or []
            if any(o.get("kind") == "Job" and o.get("name") == job for o in owners):
                return wl
        return None


_markers = itertools.count()


def settled(kueue: Kueue, namespace: str, timeout: float = 60.0) -> None:
    """A barrier before a negative check, instead of a fixed sleep: a marker Job, created after
    everything the test did, in a ClusterQueue of its own, is admitted and started. The controller
    handles changes in the order its watches deliver them, so once the marker runs, every earlier
    change has been through a scheduling pass and the job side."""
    marker, queue = f"marker-{next(_markers)}", f"{namespace}-marker"
    kueue.apply(f"""
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {{name: marker}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {{name: {queue}}}
spec:
  namespaceSelector: {{}}
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{{name: marker, resources: [{{name: cpu, nominalQuota: "1"}}]}}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {{name: marker, namespace: {namespace}}}
spec: {{clusterQueue: {queue}}}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: {marker}
  namespace: {namespace}
  labels: {{kueue.x-k8s.io/queue-name: marker}}
spec:
  suspend: true
  template:
    metadata: {{annotations: {{pod-complete.stage.kwok.x-k8s.io/delay: "1s"}}}}
    spec:
      restartPolicy: Never
      containers: [{{name: main, image: busybox, resources: {{requests: {{cpu: 10m}}}}}}]
""")
    eventually(lambda: ((kueue.get("job", marker, namespace) or {}).get("spec") or {}).get("suspend") is False,
               timeout, what=f"the marker Job {marker} started")


def forget_local_webhooks(cluster: DevCluster) -> None:
    """Undo what a local controller registered (its webhook configurations, the CRDs' conversion at its
    URL), so the session's controller, which runs without webhooks, finds the cluster as it was."""
    from pykueue.controller.webhooks import names
    from pykueue.manifests import crds

    for kind, name in zip(("mutatingwebhookconfiguration", "validatingwebhookconfiguration"),
                          names.configuration_names(names.SERVICE), strict=True):
        cluster.kubectl("delete", kind, name, "--ignore-not-found", check=False)
    service = json.dumps([{"op": "replace", "path": "/spec/conversion/webhook/clientConfig",
                           "value": crds.conversion()["webhook"]["clientConfig"]}])
    for plural in names.CONVERTED_PLURALS:
        cluster.kubectl("patch", "crd", names.crd_name(plural), "--type=json", "-p", service, check=False)


@contextlib.contextmanager
def controller_with_webhooks(kueue: Kueue, directory: Path, config: dict[str, Any], label: str) -> Iterator[Kueue]:
    """The session's controller stopped and the module's own run instead, with ``config`` (a
    Configuration) and its webhooks registered for its loopback URL; afterwards what it registered is
    undone (``forget_local_webhooks``) and the session's controller runs again."""
    from pykueue.devcluster.cluster import free_port

    path = directory / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    kueue.stop()
    mine = Kueue(kueue.cluster, directory / "controller.log", args=(
        f"--webhook-port={free_port()}", f"--webhook-cert-dir={directory / 'certs'}"))
    try:
        mine.start(path, ready=b"webhooks registered")
        eventually(lambda: b"controller ready" in mine.log.read_bytes(), 60, what="controller ready")
        yield mine
    finally:
        mine.stop()  # removes the configurations it registered
        print(f"\n--- {label} controller log (tail) ---\n" + mine._tail(lines=30))
        forget_local_webhooks(kueue.cluster)
        kueue.start()


def condition(obj: dict[str, Any] | None, kind: str) -> dict[str, Any] | None:
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            return cond
    return None


def is_true(obj: dict[str, Any] | None, kind: str) -> bool:
    cond = condition(obj, kind)
    return cond is not None and cond["status"] == "True"


def compiled_tree(directory: Path) -> Path:
    """A copy of the package holding the compiled engine (``pykueue.compiled``, cached by the sources):
    what the image and every wheel ship, where mypyc checks declared types at run time and pure Python
    never does. Without a C compiler (a developer's machine) the session's controller runs pure, said in
    one line; CI (``CI`` set) has the toolchain, and a failed build fails the run there."""
    from pykueue import compiled

    try:
        build = compiled.cached_build(REPO)
    except compiled.ToolchainMissing as exc:
        if os.environ.get("CI"):
            raise
        print(f"\nthe session's controller runs the pure engine: {exc}")
        return REPO
    tree = compiled.copy_package(REPO, directory, build)
    version = subprocess.run([sys.executable, "-m", "pykueue.cli", "--version"], cwd=tree, capture_output=True,
                             text=True, check=True).stdout
    assert "(compiled engine)" in version, version
    return tree


@pytest.fixture(scope="session")
def kueue(e2e_cluster: DevCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kueue]:
    """Kueue's CRDs applied with kubectl, and `pykueue controller` running against the cluster with the
    compiled engine (``compiled_tree``); the controllers modules start of their own run pure, so both
    engines run the e2e tests once each path."""
    e2e_cluster.kubectl("apply", "--server-side", "-f", str(CRDS))
    e2e_cluster.wait_for("Established", "crd", "--all", timeout=60)
    tree = compiled_tree(tmp_path_factory.mktemp("compiled-tree"))
    k = Kueue(e2e_cluster, tmp_path_factory.mktemp("controller") / "controller.log", tree=tree)
    k.start()
    try:
        yield k
    finally:
        k.stop()
        print("\n--- controller log (tail) ---\n" + "\n".join(k.log.read_text().splitlines()[-40:]))


@pytest.fixture
def ns(kueue: Kueue, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace for one test, deleted afterwards."""
    name = re.sub(r"[^a-z0-9-]+", "-", request.node.name.replace("_", "-").lower())[:50].strip("-")
    kueue.cluster.kubectl("create", "namespace", name)
    yield name
    kueue.cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)
    delete_named_after(kueue.cluster, name)


# What a test makes outside its namespace: removed afterwards when named after the namespace (a queue
# NS, flavor NS-gone, classes NS-low), so a run does not pile them up. Shared names (the "plain" and
# "gpu-h100" flavors every test applies) stay: deleting one another test re-applies races its finalizer.
CLUSTER_SCOPED = ",".join((
    "clusterqueues.kueue.x-k8s.io", "resourceflavors.kueue.x-k8s.io", "cohorts.kueue.x-k8s.io",
    "admissionchecks.kueue.x-k8s.io", "workloadpriorityclasses.kueue.x-k8s.io", "priorityclasses.scheduling.k8s.io"))


def delete_named_after(cluster: DevCluster, namespace: str) -> list[str]:
    """Delete (without waiting for finalizers) the cluster-scoped objects named NAMESPACE or NAMESPACE-*."""
    listed = cluster.kubectl("get", CLUSTER_SCOPED, "-o", "name", check=False).stdout.split()
    ours = [ref for ref in listed
            if (n := ref.split("/", 1)[1]) == namespace or n.startswith(f"{namespace}-")]
    if ours:
        cluster.kubectl("delete", *ours, "--wait=false", "--ignore-not-found", check=False)
    return ours


# ---- What several modules share: started by the first test that needs it, stopped after the last ----------

# Each shared set's stopper, by the fixture that starts it, and the last test (of the session's items as
# finally selected, after -k and -m) that uses it; ``xdist_group`` (tests/conftest.py) keeps each set's
# users on one worker and ``pytest_collection_modifyitems`` below keeps them together.
_RUNNING: dict[str, contextlib.ExitStack] = {}
_LAST_USER: dict[str, pytest.Item] = {}
SHARED_SETS = ("multikueue_clusters", "integrations_kueue")


def _stop(fixture: str) -> None:
    stack = _RUNNING.pop(fixture, None)
    if stack is not None:
        stack.close()


@pytest.fixture(scope="session")
def multikueue_clusters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The manager and workers of ``multikueue_setup.SHARED``, started once; stopped after the last test
    that uses them (``pytest_runtest_teardown`` below), not at the session's end."""
    from tests.e2e import multikueue_setup

    stack = _RUNNING["multikueue_clusters"] = contextlib.ExitStack()
    running = multikueue_setup.multikueue(tmp_path_factory.mktemp("multikueue"), multikueue_setup.SHARED)
    stack.callback(running.close)  # the generator's finally stops every controller and cluster
    try:
        yield next(running)
    finally:
        _stop("multikueue_clusters")


# Every job kind's integration on, as a cluster running them all has it: the integration modules (JobSet,
# LeaderWorkerSet, Ray, the Pod and its Deployments and StatefulSets, elastic Jobs, the kinds' webhooks)
# share this one controller and the JobSet, LWS and KubeRay operators, started once. waitForPodsReady has
# a timeout no test reaches: Kueue writes the PodsReady condition only under it, and the JobSet and Ray
# tests wait for it. Namespaces are managed unless labelled ``UNSELECTED`` (besides upstream's default of
# all but kube-system and the controller's), so a test can take one out of the selector and put it back
# (test_count_what_runs_property). A module that needs another Configuration (test_managed_jobs: its namespace
# selector and manageJobsWithoutQueueName would change what every other module's jobs are) runs its own.
INTEGRATIONS_CONFIG = {
    "apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
    "integrations": {"frameworks": ["batch/job", "pod", "deployment", "statefulset", "jobset.x-k8s.io/jobset",
                                    "leaderworkerset.x-k8s.io/leaderworkerset", "ray.io/raycluster",
                                    "ray.io/rayjob", "ray.io/rayservice", "kubeflow.org/pytorchjob",
                                    "kubeflow.org/tfjob", "kubeflow.org/xgboostjob", "kubeflow.org/paddlejob",
                                    "kubeflow.org/jaxjob"]},
    "managedJobsNamespaceSelector": {"matchExpressions": [
        {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system", "kueue-system"]},
        {"key": "pykueue.dev/unselected", "operator": "DoesNotExist"}]},
    "waitForPodsReady": {"timeout": "30m"}}
UNSELECTED = "pykueue.dev/unselected"
ADDONS = ("jobset", "lws", "kubeflow")  # kubeflow: the training-operator v1


@pytest.fixture(scope="session")
def integrations_kueue(kueue: Kueue, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kueue]:
    """The session's controller swapped, for the integration modules, for one with every integration on
    (``INTEGRATIONS_CONFIG``) and its webhooks served locally, beside the JobSet and LWS managers, the
    training-operator and KubeRay's operator; stopped after the last test that uses it and the session's controller restarted."""
    cluster = kueue.cluster
    stack = _RUNNING["integrations_kueue"] = contextlib.ExitStack()
    try:
        for addon in ADDONS:
            started = time.monotonic()
            cluster.start_archived(addon, timeout=600)
            stack.callback(_addon_stopped, cluster, addon)
            print(f"\n{addon} addon (CRD + manager + webhooks) ready in {time.monotonic() - started:.1f} s")
        started = time.monotonic()
        cluster.start_ray(timeout=180)
        stack.callback(_ray_stopped, cluster)
        print(f"\nray addon (CRDs + operator) ready in {time.monotonic() - started:.1f} s")
        mine = stack.enter_context(controller_with_webhooks(
            kueue, tmp_path_factory.mktemp("integrations"), INTEGRATIONS_CONFIG, "integrations"))
    except BaseException:
        _stop("integrations_kueue")
        raise
    try:
        yield mine
    finally:
        _stop("integrations_kueue")


def _addon_stopped(cluster: DevCluster, addon: str) -> None:
    manager_log = cluster.directory / "logs" / f"{archived.BY_ADDON[addon].binary}.log"
    if manager_log.exists():
        print(f"\n--- {addon}-manager log (tail) ---\n" + "\n".join(
            manager_log.read_text(errors="replace").splitlines()[-5:]))
    cluster.stop_archived(addon)


def _ray_stopped(cluster: DevCluster) -> None:
    operator_log = cluster.directory / "logs" / "ray-operator.log"
    if operator_log.exists():
        print("\n--- ray-operator log (tail) ---\n" + "\n".join(
            operator_log.read_text(errors="replace").splitlines()[-8:]))
    cluster.stop_ray()


# What a MultiKueue test may leave in the shared namespace on the manager: deleted after each test, so a
# test that failed halfway leaves no job holding the workers' quota for the next (MultiKueue then
# removes the copies on the workers). Their Workloads last: the tier 1 manager has no garbage collector,
# so a failed test's Workloads (a LeaderWorkerSet's groups) would otherwise hold the quota.
MULTIKUEUE_KINDS = ",".join(("jobs.batch", "pods", "statefulsets.apps", "deployments.apps", "jobsets.jobset.x-k8s.io",
                             "rayjobs.ray.io", "rayclusters.ray.io", "leaderworkersets.leaderworkerset.x-k8s.io",
                             "workloads.kueue.x-k8s.io"))


@pytest.fixture(autouse=True)
def _multikueue_namespace_emptied(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if "multikueue_clusters" in request.fixturenames and "multikueue_clusters" in _RUNNING:
        from tests.e2e.multikueue_setup import NS

        manager = request.getfixturevalue("multikueue_clusters").manager
        manager.cluster.kubectl("delete", MULTIKUEUE_KINDS, "--all", "-n", NS, "--wait=false", check=False)


def _shared_set(item: pytest.Item) -> str | None:
    names = getattr(item, "fixturenames", ())
    return next((fixture for fixture in SHARED_SETS if fixture in names), None)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each shared set's users run one after another, from where the first of them was collected, so the
    set is up once (a serial run included; under xdist ``xdist_group`` keeps them on one worker). The
    test that kills a worker's API server (``kills_a_worker``) runs after every other test that uses the
    shared MultiKueue clusters, right after the last of them."""
    for fixture in SHARED_SETS:
        users = [item for item in items if _shared_set(item) == fixture]
        if users:
            killers = [item for item in users if item.get_closest_marker("kills_a_worker")]
            users = [item for item in users if item not in killers] + killers
            at = items.index(users[0])
            rest = [item for item in items if _shared_set(item) != fixture]
            before = sum(1 for item in items[:at] if _shared_set(item) != fixture)
            items[:] = rest[:before] + users + rest[before:]


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """After the last test that uses a shared set (its module's fixtures already torn down), the set is
    stopped: the tests after it get the machine's CPU, and the session's controller, to themselves."""
    fixture = _shared_set(item)
    if fixture is None or fixture not in _RUNNING:
        return
    if fixture not in _LAST_USER:
        _LAST_USER[fixture] = next(i for i in reversed(item.session.items) if _shared_set(i) == fixture)
    if item is _LAST_USER[fixture]:
        _stop(fixture)


@pytest.fixture
def pod_kueue(integrations_kueue: Kueue) -> Kueue:
    """The shared integrations controller, under the name the Pod modules use."""
    return integrations_kueue
