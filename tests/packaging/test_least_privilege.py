"""Least privilege, proven on a real cluster: the controller runs with the chart's ServiceAccount
token and nothing else, passes end-to-end tests, and the API server's audit log shows that no
request of that ServiceAccount was forbidden and that every grant but one was used.

The module starts its own tier 2 cluster (the session's is shared with tests whose controller runs as
the admin) with two additions made through `DevCluster`'s process spawning, not its code: an audit
log of every request the ServiceAccount makes, and the OwnerReferencesPermissionEnforcement
admission plugin that some clusters enable (setting `blockOwnerDeletion` then needs `jobs/finalizers`).
The install is the README's: `kubectl apply --server-side -f config/manifests.yaml`, the Deployment
scaled to 0 (no image and no container runtime here), the controller run as a local process with a
kubeconfig holding the ServiceAccount's token.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from pykueue.devcluster import binaries
from pykueue.devcluster.cluster import DevCluster, Process, free_port
from pykueue.manifests import render
from tests.conftest import E2E_NODES
from tests.e2e import test_controller as e2e
from tests.e2e import test_count_what_runs as count_what_runs
from tests.e2e.callers import as_user, front_proxy, https_get, service_account_token, status_reason
from tests.e2e.conftest import Kueue

pytestmark = pytest.mark.e2e

NAMESPACE = "pykueue-system"
SERVICE_ACCOUNT = DEPLOYMENT = "pykueue-controller"
USER = f"system:serviceaccount:{NAMESPACE}:{SERVICE_ACCOUNT}"
LEASE = "c1f6bfd2.kueue.x-k8s.io"
WEBHOOK_SECRET = "pykueue-webhook-server-cert"
AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived"],
    "rules": [{"level": "Metadata", "users": [USER]}, {"level": "None"}],
}
# Granted but never a request of its own: the admission plugin checks it when a Workload is created
# with an ownerReference that blocks its Job's deletion.
CHECKED_AT_ADMISSION = {("batch", "jobs/finalizers", "update")}
# Granted for a Configuration these flows do not use: Cohort statuses are written with fair sharing on.
ONLY_WITH_FAIR_SHARING = {("kueue.x-k8s.io", "cohorts/status", "patch")}
# Granted for MultiKueue, which these flows do not set up (tests/e2e/test_multikueue.py runs it).
ONLY_WITH_MULTIKUEUE = {("kueue.x-k8s.io", "multikueueclusters/status", "patch"),
                        ("kueue.x-k8s.io", "admissionchecks/status", "patch"), ("", "secrets", "get")}
# Built-in roles the chart binds (not its own, so not held to "every grant used"): what they grant.
BUILT_IN_ROLES = {("Role", "extension-apiserver-authentication-reader"): {
    ("", "configmaps", verb) for verb in ("get", "list", "watch")}}

# The end-to-end tests run again here, as the ServiceAccount: seed 001's smoke Job, preemption (the
# victim Job stopped and restored: jobs get, update, status patch), a Rejected check (Workload
# deactivated: workloads patch), stop policies and admission checks.
PASSED: set[str] = set()  # imported tests that passed in this run: "every grant used" needs them all


def _recorded(test: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(test)  # the same name, fixtures and marks
    def run(*args: Any, **kwargs: Any) -> None:
        test(*args, **kwargs)
        PASSED.add(test.__name__)
    return run


test_seed_001_smoke_job = _recorded(e2e.test_seed_001_smoke_job)
test_priority_preemption_suspends_and_restores_the_victim = _recorded(
    e2e.test_priority_preemption_suspends_and_restores_the_victim)
test_rejected_admission_check_deactivates = _recorded(e2e.test_rejected_admission_check_deactivates)
test_stop_policy_set_with_kubectl_patch = _recorded(e2e.test_stop_policy_set_with_kubectl_patch)
test_admission_check_driven_by_the_test = _recorded(e2e.test_admission_check_driven_by_the_test)
# A running Job that no longer matches its Workload: the Workload is deleted and made anew (workloads delete).
test_a_running_job_whose_parallelism_grew_is_stopped_and_requeued = _recorded(
    count_what_runs.test_a_running_job_whose_parallelism_grew_is_stopped_and_requeued)
# A Job deleted while its pod runs: its pods listed (the read-only pods grant) until none may run.
test_a_job_recreated_under_its_name_gets_its_own_workload_and_the_old_one_goes = _recorded(
    count_what_runs.test_a_job_recreated_under_its_name_gets_its_own_workload_and_the_old_one_goes)


@_recorded
def test_visibility_callers_are_checked_with_the_api_server(kueue: Kueue) -> None:
    """The visibility API's callers, authenticated with a TokenReview and authorized with a
    SubjectAccessReview, both made as the ServiceAccount; the front proxy's CA read from
    kube-system/extension-apiserver-authentication with its grant (or the handshake would fail)."""
    cluster = kueue.cluster
    port = [a.split("=", 1)[1] for a in kueue.args if a.startswith("--visibility-port=")][-1]  # the last wins
    url = f"https://127.0.0.1:{port}/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/cq/pendingworkloads"
    cluster.kubectl("create", "namespace", "callers")
    token = service_account_token(cluster, "callers", "nobody")  # type: ignore[arg-type]
    assert https_get(url)[0] == 401
    status, body = https_get(url, token=token)
    assert (status, status_reason(body)) == (403, "Forbidden"), body
    status, body = https_get(url, cert=front_proxy(cluster), headers=as_user("someone"))  # type: ignore[arg-type]
    assert (status, status_reason(body)) == (403, "Forbidden"), body


IMPORTED = {name for name in list(globals()) if name.startswith("test_")}


@dataclass
class AuditedCluster(DevCluster):
    """A DevCluster whose kube-apiserver also writes an audit log and enforces owner-reference
    permissions (the extra flags survive `restart_apiserver`, which reuses the command line)."""

    @property
    def audit_log(self) -> Path:
        return self.directory / "audit.log"

    def _spawn(self, name: str, args: list[str], detach: bool) -> Process:
        if name == "kube-apiserver" and not any(a.startswith("--audit-log-path=") for a in args):
            policy = self.directory / "audit-policy.yaml"
            policy.write_text(yaml.safe_dump(AUDIT_POLICY))
            plugin = "OwnerReferencesPermissionEnforcement"
            enable = "--enable-admission-plugins="
            args = [f"{a},{plugin}" if a.startswith(enable) else a for a in args]
            if not any(a.startswith(enable) for a in args):
                args.append(enable + plugin)
            args += [f"--audit-policy-file={policy}", f"--audit-log-path={self.audit_log}", "--audit-log-mode=blocking"]
        return super()._spawn(name, args, detach)


class AsServiceAccount:
    """The cluster as `Kueue` starts the controller on it: the ServiceAccount's kubeconfig. Everything
    else, kubectl included, is the admin's, as for a person driving the tests."""

    def __init__(self, cluster: DevCluster, kubeconfig: Path) -> None:
        self._cluster = cluster
        self.kubeconfig = kubeconfig

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cluster, name)


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AuditedCluster]:
    try:
        binaries.ensure()
    except binaries.BuildError as exc:
        pytest.exit(f"pykueue: the cluster tests cannot run: {exc}", returncode=4)
    cluster = AuditedCluster(tmp_path_factory.mktemp("audited-cluster"), tier=2)
    cluster.start(E2E_NODES)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def sa_kubeconfig(audited: AuditedCluster) -> Path:
    """The README's install, then a kubeconfig with nothing in it but the ServiceAccount's token."""
    audited.kubectl("apply", "--server-side", "-f", str(render.MANIFESTS))
    audited.kubectl("-n", NAMESPACE, "scale", "deployment", DEPLOYMENT, "--replicas=0")
    audited.wait_for("Established", "crd", "--all", timeout=60)
    token = audited.kubectl("-n", NAMESPACE, "create", "token", SERVICE_ACCOUNT, "--duration=2h").stdout.strip()
    path = audited.directory / "controller.kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "dev", "cluster": {"server": audited.server,
                                                 "certificate-authority": str(audited.directory / "pki" / "ca.crt")}}],
        "users": [{"name": SERVICE_ACCOUNT, "user": {"token": token}}],
        "contexts": [{"name": "dev", "context": {"cluster": "dev", "user": SERVICE_ACCOUNT}}],
        "current-context": "dev",
    }))
    return path


@pytest.fixture(scope="module")
def kueue(audited: AuditedCluster, sa_kubeconfig: Path) -> Iterator[Kueue]:
    """`pykueue controller --kubeconfig <the ServiceAccount's>`, for the imported end-to-end tests."""
    port = free_port()  # webhooks as the chart runs them, but called at loopback instead of the Service
    webhooks = (f"--webhook-port={port}", "--webhook-host=127.0.0.1", f"--webhook-url=https://127.0.0.1:{port}",
                f"--webhook-secret={WEBHOOK_SECRET}", f"--webhook-namespace={NAMESPACE}",
                f"--webhook-cert-dir={audited.directory / 'webhook-certs'}",
                f"--visibility-port={free_port()}", "--visibility-bind-address=127.0.0.1")
    k = Kueue(AsServiceAccount(audited, sa_kubeconfig), audited.directory / "controller.log",  # type: ignore[arg-type]
              args=("--leader-elect", f"--leader-election-namespace={NAMESPACE}", *webhooks))  # as the chart runs it
    k.start()
    try:
        yield k
    finally:
        k.stop()


@pytest.fixture
def ns(kueue: Kueue, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace for one test (tests/e2e/conftest.py's, for this module's cluster)."""
    name = re.sub(r"[^a-z0-9-]+", "-", request.node.name.replace("_", "-").lower())[:50].strip("-")
    kueue.cluster.kubectl("create", "namespace", name)
    yield name
    kueue.cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)


def audit_events(cluster: AuditedCluster) -> list[dict[str, Any]]:
    return [e for line in cluster.audit_log.read_text().splitlines() if line.strip()
            for e in [json.loads(line)] if e["user"]["username"] == USER]


def granted(built_in: bool = False) -> set[tuple[str, str, str]]:
    """What the chart's roles bound to the controller's ServiceAccount grant (not the roles for
    users); with ``built_in``, also what the built-in roles it binds grant."""
    docs = [d for d in yaml.safe_load_all(render.MANIFESTS.read_text()) if d]
    bound = {(d["roleRef"]["kind"], d["roleRef"]["name"]) for d in docs
             if d["kind"] in ("ClusterRoleBinding", "RoleBinding") and any(
                 s.get("kind") == "ServiceAccount" and s.get("name") == SERVICE_ACCOUNT for s in d.get("subjects") or [])}
    roles = [d for d in docs if (d["kind"], d["metadata"]["name"]) in bound]
    grants = {(g, r, v) for role in roles for rule in role["rules"] for g in rule["apiGroups"]
              for r in rule["resources"] for v in rule["verbs"]}
    if built_in:
        grants |= {g for ref, role_grants in BUILT_IN_ROLES.items() if ref in bound for g in role_grants}
    return grants


def can_i(cluster: DevCluster, *args: str) -> bool:
    result = cluster.kubectl("auth", "can-i", *args, f"--as={USER}", check=False)
    return result.stdout.strip() == "yes"


def test_service_account_can_do_only_what_it_needs(audited: AuditedCluster, sa_kubeconfig: Path) -> None:
    for args in (("list", "workloads.kueue.x-k8s.io", "-A"), ("patch", "workloads.kueue.x-k8s.io",
                 "--subresource=status", "-n", "team"), ("update", "jobs.batch", "-n", "team"),
                 ("create", "events", "-n", "team"), ("watch", "namespaces"),
                 ("delete", "workloads.kueue.x-k8s.io", "-n", "team")):
        assert can_i(audited, *args), args
    for args in (("get", f"leases.coordination.k8s.io/{LEASE}", "-n", NAMESPACE),  # leader election, one Lease
                 ("update", f"leases.coordination.k8s.io/{LEASE}", "-n", NAMESPACE),
                 ("create", "leases.coordination.k8s.io", "-n", NAMESPACE),
                 # webhook certificates: the one Secret, its own configurations and converted CRDs
                 ("get", f"secrets/{WEBHOOK_SECRET}", "-n", NAMESPACE),
                 ("update", f"secrets/{WEBHOOK_SECRET}", "-n", NAMESPACE),
                 ("patch", "validatingwebhookconfigurations/pykueue-validating-webhook-configuration"),
                 ("patch", "customresourcedefinitions/workloads.kueue.x-k8s.io"),
                 ("patch", "apiservices/v1beta2.visibility.kueue.x-k8s.io"),  # the visibility API's caBundle
                 # delegated authentication and authorization of the visibility API's and /metrics' callers
                 ("create", "tokenreviews.authentication.k8s.io"),
                 ("create", "subjectaccessreviews.authorization.k8s.io"),
                 ("get", "configmaps/extension-apiserver-authentication", "-n", "kube-system")):
        assert can_i(audited, *args), args
    assert can_i(audited, "list", "pods", "-A")  # read only: a deleted Job's pods, until none may run
    for args in (("get", "secrets", "-n", NAMESPACE), ("get", "pods", "-n", "team"), ("watch", "pods", "-A"),
                 ("create", "pods", "-n", "team"),
                 ("delete", "jobs.batch", "-n", "team"),
                 ("update", "clusterqueues.kueue.x-k8s.io"), ("get", "leases.coordination.k8s.io", "-n", NAMESPACE),
                 ("update", f"leases.coordination.k8s.io/{LEASE}", "-n", "team"),
                 ("create", "leases.coordination.k8s.io", "-n", "team"),
                 ("create", "clusterrolebindings"), ("patch", "namespaces"), ("get", "configmaps", "-n", NAMESPACE),
                 ("list", "secrets", "-n", NAMESPACE), ("get", "secrets/other", "-n", NAMESPACE),
                 ("get", f"secrets/{WEBHOOK_SECRET}", "-n", "team"),
                 ("patch", "customresourcedefinitions/resourceflavors.kueue.x-k8s.io"),
                 ("patch", "validatingwebhookconfigurations/someone-elses"), ("list", "customresourcedefinitions"),
                 ("patch", "apiservices/v1beta1.metrics.k8s.io"), ("get", "configmaps/other", "-n", "kube-system"),
                 ("create", "localsubjectaccessreviews.authorization.k8s.io", "-n", "team"),
                 ("update", "configmaps/extension-apiserver-authentication", "-n", "kube-system")):
        assert not can_i(audited, *args), args
    listed = audited.kubectl("auth", "can-i", "--list", f"--as={USER}").stdout
    assert "secrets" not in listed and "*" not in listed.split()


def test_audit_shows_no_forbidden_request_and_every_grant_used(audited: AuditedCluster, kueue: Kueue) -> None:
    """Last in the module: the audit log of all the runs above, as the ServiceAccount."""
    events = audit_events(audited)
    assert events, "no request of the ServiceAccount was audited"
    # Denied by authorization (RBAC), not a 403 from admission such as NamespaceLifecycle refusing new
    # objects in a namespace a test is deleting.
    forbidden = [f"{e['verb']} {e['requestURI']} -> {e['responseStatus']['code']}"
                 for e in events if e.get("annotations", {}).get("authorization.k8s.io/decision") == "forbid"]
    assert forbidden == []
    used = set()
    for e in events:
        ref = e.get("objectRef")
        if ref is None or e.get("responseStatus", {}).get("code", 500) >= 400:
            continue
        resource = ref["resource"] + (f"/{ref['subresource']}" if ref.get("subresource") else "")
        used.add((ref.get("apiGroup", ""), resource, e["verb"]))
    grants = granted()
    assert used <= granted(built_in=True), used - granted(built_in=True)
    # the authentication ConfigMap is read (listed, then watched) under the built-in role's grant
    assert {("", "configmaps", "list"), ("", "configmaps", "watch")} <= used
    if PASSED >= IMPORTED:  # the flows that need every grant all ran (not with -k, say)
        unused = grants - used - CHECKED_AT_ADMISSION - ONLY_WITH_FAIR_SHARING - ONLY_WITH_MULTIKUEUE
        assert not unused, f"granted but never used: {sorted(unused)}"
    log = kueue.log.read_text()
    assert not [line for line in log.splitlines()
                if (": 403 " in line or "Forbidden" in line) and "being terminated" not in line]
