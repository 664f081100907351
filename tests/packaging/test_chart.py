"""The Helm chart and the rendered `config/manifests.yaml`.

Without helm: the chart's CRDs are the generated ones, the default Configuration is one the controller
accepts, the committed manifests hold least-privilege RBAC and a locked-down Deployment. With the
pinned helm (built from Go, marker `cluster` as for the other tests that need built binaries):
`helm lint`, `helm template` with values, and the committed manifests not stale.
"""

from __future__ import annotations

import json
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from pykueue.api.loader import load_paths
from pykueue.devcluster.cluster import DevCluster
from pykueue.engine import model
from pykueue.manifests import render

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "pykueue"
SA = "pykueue-controller"
NAMESPACE = "pykueue-system"
# What the controller may never do: read secrets (but MultiKueue's, in its namespace, when on), touch pods, delete anything, grant itself more.
FORBIDDEN_VERBS = {"*", "delete", "deletecollection", "escalate", "bind", "impersonate"}
FORBIDDEN_RESOURCES = {"*", "secrets", "pods", "configmaps", "serviceaccounts", "nodes"}


def documents(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d]


def by_kind(docs: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    kinds: dict[str, list[dict[str, Any]]] = {}
    for doc in docs:
        kinds.setdefault(doc["kind"], []).append(doc)
    return kinds


@pytest.fixture(scope="module")
def manifests() -> dict[str, list[dict[str, Any]]]:
    return by_kind(documents(render.MANIFESTS.read_text()))


# --- without helm ---------------------------------------------------------------------------------------


def test_chart_crds_are_the_generated_crds() -> None:
    assert render.CHART_CRDS.read_text() == render.GENERATED_CRDS.read_text(), (
        "charts/pykueue/crds is stale: run python -m pykueue.manifests.render")


def test_chart_app_version_is_the_package_version() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert chart["appVersion"] == project["version"]


def test_default_configuration_is_one_the_controller_accepts(tmp_path: Path) -> None:
    config = yaml.safe_load((CHART / "values.yaml").read_text())["config"]
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    inputs, problems = load_paths([], str(path))  # what `pykueue controller --config` does
    assert problems == []
    assert inputs.config == model.Config()


def test_manifests_hold_every_object_once(manifests: dict[str, list[dict[str, Any]]]) -> None:
    counts = {kind: len(docs) for kind, docs in manifests.items()}
    assert counts == {"CustomResourceDefinition": 9, "Namespace": 1, "ServiceAccount": 1, "ConfigMap": 1,
                      # the controller's, the visibility API's two viewer roles for users, metrics-reader
                      "ClusterRole": 4, "ClusterRoleBinding": 1, "Role": 2,
                      # leader election, the webhook Secret, the authentication ConfigMap reader in kube-system
                      # (and MultiKueue's kubeconfig Secrets only with config.multiKueue)
                      "RoleBinding": 3, "Deployment": 1,
                      # the webhooks: their Service, configurations and certificate Secret (filled by the
                      # controller); the metrics Service; the visibility API's Service
                      "Service": 3, "MutatingWebhookConfiguration": 1, "ValidatingWebhookConfiguration": 1,
                      "Secret": 1,
                      # the visibility API (v1beta2, v1beta1), served through the visibility Service
                      "APIService": 2}
    assert manifests["Namespace"][0]["metadata"]["name"] == NAMESPACE
    assert manifests["ServiceAccount"][0]["metadata"] == {
        **manifests["ServiceAccount"][0]["metadata"], "name": SA, "namespace": NAMESPACE}
    binding = manifests["ClusterRoleBinding"][0]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": SA, "namespace": NAMESPACE}]
    assert binding["roleRef"]["name"] == manifests["ClusterRole"][0]["metadata"]["name"]


def test_rbac_is_least_privilege(manifests: dict[str, list[dict[str, Any]]]) -> None:
    """No wildcard, no secret, no pod but listing them, no delete by default but of Workloads (the pod integration's are in
    test_helm_template_pod_integration); only the API groups the controller talks to; write
    access to status subresources only through patch. Whether each grant is needed and enough is
    shown on a cluster by test_least_privilege.py, against the API server's audit log."""
    # Leader election: the one Lease, in the controller's namespace only (a Role, not the ClusterRole).
    role = next(r for r in manifests["Role"] if r["metadata"]["name"] == "pykueue-leader-election")
    assert role["metadata"]["namespace"] == NAMESPACE
    assert role["rules"] == [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": ["c1f6bfd2.kueue.x-k8s.io"],
         "verbs": ["get", "update"]}]
    binding = next(b for b in manifests["RoleBinding"] if b["roleRef"]["name"] == "pykueue-leader-election")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": SA, "namespace": NAMESPACE}]
    rules = manifests["ClusterRole"][0]["rules"]
    # The webhook certificates' CA bundle: get and patch of its own configurations and converted CRDs,
    # by name (tests/manifests/test_webhook_manifests.py checks the names); its Secret is a Role's.
    # The visibility API's APIServices likewise (their caBundle), by name.
    by_name = {"mutatingwebhookconfigurations", "validatingwebhookconfigurations", "customresourcedefinitions",
               "apiservices"}
    for rule in rules:
        if set(rule["resources"]) <= by_name:
            assert set(rule) == {"apiGroups", "resources", "resourceNames", "verbs"} and rule["verbs"] == ["get", "patch"]
            continue
        assert set(rule) == {"apiGroups", "resources", "verbs"}, rule  # no resourceNames/nonResourceURLs
        # delete only on Workloads: one that no longer matches its job is replaced, as upstream's role allows
        assert not FORBIDDEN_VERBS & set(rule["verbs"]) or rule["resources"] == ["workloads"], rule
        assert not {"*", "deletecollection", "escalate", "bind", "impersonate"} & set(rule["verbs"]), rule
        if rule["resources"] == ["pods"] and rule["verbs"] == ["list"]:
            continue  # read only: a deleted Job's pods and a Pod that lost the managed label, until they end
        assert not FORBIDDEN_RESOURCES & set(rule["resources"]), rule
        assert set(rule["apiGroups"]) <= {"", "batch", "kueue.x-k8s.io", "scheduling.k8s.io", "authentication.k8s.io",
                                          "authorization.k8s.io"}, rule
        for resource in rule["resources"]:
            if resource.endswith("/status"):
                assert rule["verbs"] == ["patch"], rule
    granted = {(g, r, v) for rule in rules for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]}
    read_only = {"namespaces", "priorityclasses", "resourceflavors", "admissionchecks", "cohorts",
                 "workloadpriorityclasses", "clusterqueues", "localqueues"}
    # Read only, but for the resource-in-use finalizer Kueue keeps on the kinds ClusterQueues depend on.
    finalized = {"clusterqueues", "resourceflavors", "admissionchecks"}
    assert {(r, v) for _, r, v in granted if r in read_only} == (
        {(r, v) for r in read_only for v in ("list", "watch")} | {(r, "patch") for r in finalized})
    assert {v for _, r, v in granted if r == "events"} == {"create"}
    # Delegated authentication: create the two reviews, nothing else of those groups; read the one
    # ConfigMap through the built-in Role every extension API server is bound to.
    assert {(g, r, v) for g, r, v in granted if g.startswith(("authentication.", "authorization."))} == {
        ("authentication.k8s.io", "tokenreviews", "create"), ("authorization.k8s.io", "subjectaccessreviews", "create")}
    reader = next(b for b in manifests["RoleBinding"] if b["metadata"]["namespace"] == "kube-system")
    assert reader["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                 "name": "extension-apiserver-authentication-reader"}
    assert reader["subjects"] == [{"kind": "ServiceAccount", "name": SA, "namespace": NAMESPACE}]
    # Scrapers: get on /metrics only.
    metrics_reader = next(r for r in manifests["ClusterRole"] if r["metadata"]["name"] == "pykueue-metrics-reader")
    assert metrics_reader["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]


def test_deployment_is_locked_down(manifests: dict[str, list[dict[str, Any]]]) -> None:
    deployment = manifests["Deployment"][0]
    assert deployment["spec"]["replicas"] == 1
    assert "strategy" not in deployment["spec"]  # rolling: the new pod stands by until the old one lets go
    pod = deployment["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == SA
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 65532
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    (container,) = pod["containers"]
    assert container["image"] == "pykueue:0.1.0"
    assert container["args"][:2] == ["controller", "--config=/etc/pykueue/config.yaml"]
    assert {"--leader-elect=true", f"--leader-election-namespace={NAMESPACE}", "--metrics-bind-address=:8443",
            "--metrics-secure=true", "--health-probe-bind-address=:8081"} <= set(container["args"])
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert (ports["metrics"], ports["health"], ports["webhook-server"], ports["visibility"]) == (
        8443, 8081, 9443, 8082)  # upstream's
    assert "--visibility-port=8082" in container["args"]
    service = next(s for s in manifests["Service"] if s["metadata"]["name"] == "pykueue-controller-metrics-service")
    assert service["spec"]["ports"] == [{"name": "https", "port": 8443, "protocol": "TCP", "targetPort": "metrics"}]
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]}}
    assert {m["mountPath"] for m in container["volumeMounts"]} == {"/etc/pykueue", "/tmp"}
    config_map = manifests["ConfigMap"][0]
    volume = next(v for v in pod["volumes"] if v["name"] == "config")
    assert volume["configMap"]["name"] == config_map["metadata"]["name"]
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert yaml.safe_load(config_map["data"]["config.yaml"]) == values["config"]


RESTRICTED_LABELS = {f"pod-security.kubernetes.io/{mode}{suffix}": value
                     for mode in ("enforce", "audit", "warn")
                     for suffix, value in (("", "restricted"), ("-version", "latest"))}
# The volume types the restricted Pod Security Standard allows (Kubernetes' "Volume Types" check).
RESTRICTED_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
                      "projected", "secret"}


def restricted_violations(pod: dict[str, Any]) -> list[str]:
    """What in a pod spec the restricted Pod Security Standard (every baseline and restricted check,
    https://kubernetes.io/docs/concepts/security/pod-security-standards/) would refuse."""
    found = [f"spec.{key}" for key in ("hostNetwork", "hostPID", "hostIPC") if pod.get(key)]
    pod_context = pod.get("securityContext") or {}
    found += [f"volume {v['name']}" for v in pod.get("volumes") or [] if set(v) - {"name"} - RESTRICTED_VOLUMES]
    for container in [*pod.get("initContainers", []), *pod["containers"]]:
        name = container["name"]
        context = container.get("securityContext") or {}
        if context.get("privileged"):
            found.append(f"{name}: privileged")
        if context.get("allowPrivilegeEscalation") is not False:
            found.append(f"{name}: allowPrivilegeEscalation must be false")
        capabilities = context.get("capabilities") or {}
        if "ALL" not in (capabilities.get("drop") or []):
            found.append(f"{name}: capabilities must drop ALL")
        if set(capabilities.get("add") or []) - {"NET_BIND_SERVICE"}:
            found.append(f"{name}: capabilities may add only NET_BIND_SERVICE")
        if context.get("runAsNonRoot", pod_context.get("runAsNonRoot")) is not True:
            found.append(f"{name}: runAsNonRoot must be true")
        if context.get("runAsUser", pod_context.get("runAsUser")) == 0:
            found.append(f"{name}: runAsUser must not be 0")
        seccomp = (context.get("seccompProfile") or pod_context.get("seccompProfile") or {}).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost"):
            found.append(f"{name}: seccompProfile must be RuntimeDefault or Localhost")
        if any(port.get("hostPort") for port in container.get("ports") or []):
            found.append(f"{name}: hostPort")
    return found


def test_the_namespace_enforces_the_restricted_pod_security_standard(
        manifests: dict[str, list[dict[str, Any]]]) -> None:
    """The release namespace enforces, audits and warns at the ``restricted`` level, which the
    controller's pod meets: so nothing that runs there may run privileged, as root, or unconfined."""
    (namespace,) = manifests["Namespace"]
    assert namespace["metadata"]["name"] == NAMESPACE
    labels = namespace["metadata"]["labels"]
    assert {key: labels.get(key) for key in RESTRICTED_LABELS} == RESTRICTED_LABELS
    (deployment,) = manifests["Deployment"]
    assert restricted_violations(deployment["spec"]["template"]["spec"]) == []
    # and the check finds what it is meant to find
    assert restricted_violations({"securityContext": {}, "hostPID": True, "volumes": [{"name": "h", "hostPath": {}}],
                                  "containers": [{"name": "c", "securityContext": {"runAsUser": 0}}]}) == [
        "spec.hostPID", "volume h", "c: allowPrivilegeEscalation must be false", "c: capabilities must drop ALL",
        "c: runAsNonRoot must be true", "c: runAsUser must not be 0",
        "c: seccompProfile must be RuntimeDefault or Localhost"]


# --- with helm ------------------------------------------------------------------------------------------


def helm(helm_bin: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([str(helm_bin), *args], capture_output=True, text=True, cwd=REPO, timeout=120)
    if check:
        assert result.returncode == 0, result.stderr
    return result


@pytest.mark.cluster
def test_helm_lint(helm_bin: Path) -> None:
    out = helm(helm_bin, "lint", str(CHART), "--strict").stdout
    assert "1 chart(s) linted, 0 chart(s) failed" in out


@pytest.mark.cluster
def test_committed_manifests_are_not_stale(helm_bin: Path) -> None:
    assert render.stale(helm_bin) == [], "stale: run python -m pykueue.manifests.render"


@pytest.mark.cluster
def test_helm_template_defaults(helm_bin: Path) -> None:
    """`helm install -n NS --create-namespace`: everything in the release namespace, no Namespace
    object (helm makes it), no CRDs among the templates (helm installs crds/ itself)."""
    kinds = by_kind(documents(helm(helm_bin, "template", "kq", str(CHART), "--namespace", "team-x").stdout))
    assert set(kinds) == {"ServiceAccount", "ConfigMap", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
                          "Deployment", "Service", "Secret", "MutatingWebhookConfiguration",
                          "ValidatingWebhookConfiguration", "APIService"}
    cluster_scoped = ("ClusterRole", "ClusterRoleBinding", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration",
                      "APIService")
    for docs in kinds.values():
        for doc in docs:
            if doc["kind"] not in cluster_scoped:
                # the one exception: the binding to the authentication ConfigMap's reader, where that lives
                expected = "kube-system" if doc["metadata"]["name"].endswith("authentication-reader") else "team-x"
                assert doc["metadata"]["namespace"] == expected, doc["kind"]
    assert kinds["ServiceAccount"][0]["metadata"]["name"] == "kq-pykueue-controller"
    (mutating,) = kinds["MutatingWebhookConfiguration"]  # the names the controller derives from its Service
    assert mutating["metadata"]["name"] == "kq-pykueue-mutating-webhook-configuration"
    assert mutating["webhooks"][0]["clientConfig"]["service"] == {
        "name": "kq-pykueue-webhook-service", "namespace": "team-x", "path": "/mutate-batch-v1-job"}
    assert "--webhook-service=kq-pykueue-webhook-service" in kinds["Deployment"][0]["spec"]["template"]["spec"][
        "containers"][0]["args"]
    assert {a["metadata"]["name"]: a["spec"]["service"] for a in kinds["APIService"]} == {
        f"{v}.visibility.kueue.x-k8s.io": {"name": "kq-pykueue-visibility-server", "namespace": "team-x", "port": 443}
        for v in ("v1beta2", "v1beta1")}
    visibility = next(s for s in kinds["Service"] if s["metadata"]["name"] == "kq-pykueue-visibility-server")
    assert visibility["spec"]["ports"] == [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": "visibility"}]
    assert kinds["ClusterRoleBinding"][0]["subjects"][0] == {
        "kind": "ServiceAccount", "name": "kq-pykueue-controller", "namespace": "team-x"}
    assert "ServiceMonitor" not in kinds  # only when asked (its CRD is the Prometheus Operator's)


@pytest.mark.cluster
def test_helm_template_metrics_values(helm_bin: Path) -> None:
    """A ServiceMonitor that scrapes the metrics Service with a token over HTTPS; plain HTTP on request."""
    kinds = by_kind(documents(helm(helm_bin, "template", "pykueue", str(CHART), "--set",
                                   "metrics.serviceMonitor.enabled=true", "--set",
                                   "metrics.serviceMonitor.labels.release=prom").stdout))
    (monitor,) = kinds["ServiceMonitor"]
    assert monitor["metadata"]["labels"]["release"] == "prom"
    assert monitor["spec"]["endpoints"] == [{
        "path": "/metrics", "port": "https", "scheme": "https",
        "bearerTokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token",
        "tlsConfig": {"insecureSkipVerify": True}}]
    service = next(s for s in kinds["Service"] if s["metadata"]["name"].endswith("-metrics-service"))
    assert all(service["metadata"]["labels"].get(k) == v for k, v in monitor["spec"]["selector"]["matchLabels"].items())
    webhook = next(s for s in kinds["Service"] if s["metadata"]["name"].endswith("-webhook-service"))
    assert not all(webhook["metadata"]["labels"].get(k) == v
                   for k, v in monitor["spec"]["selector"]["matchLabels"].items())
    plain = by_kind(documents(helm(helm_bin, "template", "pykueue", str(CHART), "--set", "metrics.secure=false",
                                   "--set", "metrics.serviceMonitor.enabled=true").stdout))
    assert "--metrics-secure=false" in plain["Deployment"][0]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert plain["ServiceMonitor"][0]["spec"]["endpoints"] == [{"path": "/metrics", "port": "http", "scheme": "http"}]


@pytest.mark.cluster
def test_helm_template_values(helm_bin: Path, tmp_path: Path) -> None:
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump({
        "image": {"repository": "registry.example/pykueue", "tag": "dev", "pullPolicy": "Always"},
        "config": {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
                   "waitForPodsReady": {"timeout": "10m"}, "fairSharing": {"preemptionStrategies": ["LessThanOrEqualToFinalShare"]}},
        "nodeSelector": {"node-role.kubernetes.io/control-plane": ""},
        "tolerations": [{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists",
                         "effect": "NoSchedule"}],
        "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "2Gi"}},
        "controller": {"logLevel": "debug", "extraArgs": ["--log-format=json"]},
        "serviceAccount": {"name": "kueue-sa"},
    }))
    kinds = by_kind(documents(helm(helm_bin, "template", "pykueue", str(CHART), "-f", str(values)).stdout))
    pod = kinds["Deployment"][0]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["image"] == "registry.example/pykueue:dev"
    assert container["imagePullPolicy"] == "Always"
    assert container["args"][:3] == ["controller", "--config=/etc/pykueue/config.yaml", "--log-level=debug"]
    assert container["args"][-1] == "--log-format=json"  # extraArgs last: they override the chart's
    assert container["resources"] == {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "2Gi"}}
    assert pod["nodeSelector"] == {"node-role.kubernetes.io/control-plane": ""}
    assert pod["tolerations"][0]["key"] == "node-role.kubernetes.io/control-plane"
    assert pod["serviceAccountName"] == "kueue-sa"
    assert kinds["ClusterRoleBinding"][0]["subjects"][0]["name"] == "kueue-sa"
    config = tmp_path / "config.yaml"
    config.write_text(kinds["ConfigMap"][0]["data"]["config.yaml"])
    inputs, problems = load_paths([], str(config))
    assert problems == []
    assert inputs.config.wait_for_pods_ready.timeout_seconds == 600.0
    assert inputs.config.fair_sharing.enable
    default = by_kind(documents(helm(helm_bin, "template", "pykueue", str(CHART)).stdout))
    annotation = "checksum/config"
    assert (kinds["Deployment"][0]["spec"]["template"]["metadata"]["annotations"][annotation]
            != default["Deployment"][0]["spec"]["template"]["metadata"]["annotations"][annotation])


@pytest.mark.cluster
def test_helm_template_pod_integration(helm_bin: Path) -> None:
    """With Pods (or Deployments, StatefulSets) in integrations.frameworks the chart registers the hooks
    the controller serves for them (names.mutating_for) and grants what the pod integration writes; with
    the default (Jobs alone) it registers and grants none of it."""
    from pykueue.controller.webhooks import names

    for frameworks in (["batch/job"], ["batch/job", "pod"], ["deployment"], ["pod", "deployment", "statefulset"],
                       ["batch/job", "ray.io/raycluster"], ["ray.io/rayjob", "ray.io/raycluster"],
                       ["ray.io/rayservice", "ray.io/raycluster"], ["ray.io/rayjob"],
                       ["batch/job", "jobset.x-k8s.io/jobset"], ["ray.io/rayservice"],
                       ["batch/job", "leaderworkerset.x-k8s.io/leaderworkerset"]):
        out = helm(helm_bin, "template", "kq", str(CHART), "--set-json",
                   "config.integrations=" + json.dumps({"frameworks": frameworks})).stdout
        kinds = by_kind(documents(out))
        (mutating,) = kinds["MutatingWebhookConfiguration"]
        wanted = names.mutating_for(tuple(frameworks))
        assert [(w["name"], w["clientConfig"]["service"]["path"]) for w in mutating["webhooks"]] == [
            (h.name, h.path) for h in wanted], frameworks
        for webhook, hook in zip(mutating["webhooks"], wanted, strict=True):
            assert webhook["rules"] == [{"apiGroups": [hook.group], "apiVersions": [hook.version],
                                         "operations": list(hook.operations), "resources": list(hook.resources)}]
        # the job kinds' validating hooks (names.validating_jobs_for), the Pod's for managed Pods only
        (validating,) = kinds["ValidatingWebhookConfiguration"]
        checks = names.validating_jobs_for(tuple(frameworks))
        got = [w for w in validating["webhooks"] if w["name"] in {h.name for h in names.VALIDATING_JOBS}]
        assert [(w["name"], w["clientConfig"]["service"]["path"]) for w in got] == [
            (h.name, h.path) for h in checks], frameworks
        for webhook, hook in zip(got, checks, strict=True):
            assert webhook["rules"] == [{"apiGroups": [hook.group], "apiVersions": [hook.version],
                                         "operations": list(hook.operations), "resources": list(hook.resources)}]
            assert webhook.get("objectSelector") == (names.MANAGED_PODS if hook.managed_only else None), hook.name
            assert webhook["namespaceSelector"]["matchExpressions"][0]["values"] == ["kube-system", "default"]
        role = next(r for r in kinds["ClusterRole"] if r["metadata"]["name"] == "kq-pykueue-controller")
        pod_rules = [r for r in role["rules"] if any(x.startswith("pods") for x in r["resources"])]
        listing = {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}  # every install's (read only)
        if any(h.kind == "Pod" for h in wanted):
            assert pod_rules == [
                listing,
                {"apiGroups": [""], "resources": ["pods"], "verbs": ["delete", "patch", "watch"]},
                {"apiGroups": [""], "resources": ["pods/status"], "verbs": ["patch"]},
                {"apiGroups": [""], "resources": ["pods/finalizers"], "verbs": ["update"]}]
        else:
            assert pod_rules == [listing], frameworks
        lws_rules = [r for r in role["rules"] if r["apiGroups"] == ["leaderworkerset.x-k8s.io"]]
        assert lws_rules == ([{"apiGroups": ["leaderworkerset.x-k8s.io"], "resources": ["leaderworkersets"],
                               "verbs": ["list", "watch"]}]
                             if "leaderworkerset.x-k8s.io/leaderworkerset" in frameworks else []), frameworks
        sts_rules = [r for r in role["rules"] if r["apiGroups"] == ["apps"]]
        assert sts_rules == ([{"apiGroups": ["apps"], "resources": ["statefulsets"], "verbs": ["list", "watch"]}]
                             if "statefulset" in frameworks else []), frameworks
        ray_rules = [r for r in role["rules"] if r["apiGroups"] == ["ray.io"]]
        granted = [plural for plural, framework in (("rayjobs", "ray.io/rayjob"), ("rayclusters", "ray.io/raycluster"),
                                                    ("rayservices", "ray.io/rayservice")) if framework in frameworks]
        # RayClusters watched for the RayJobs or RayServices alone when their own integration is off (the
        # live cluster an elastic one is sized by, the clusters whose Pods a stopped one waits for)
        watched = ([{"apiGroups": ["ray.io"], "resources": ["rayclusters"], "verbs": ["list", "watch"]}]
                   if {"ray.io/rayjob", "ray.io/rayservice"} & set(frameworks) and "ray.io/raycluster" not in frameworks
                   else [])
        assert ray_rules == [rule for plural in granted for rule in (
            {"apiGroups": ["ray.io"], "resources": [plural], "verbs": ["get", "list", "patch", "update", "watch"]},
            {"apiGroups": ["ray.io"], "resources": [f"{plural}/finalizers"], "verbs": ["update"]})] + watched, frameworks
        jobset_rules = [r for r in role["rules"] if r["apiGroups"] == ["jobset.x-k8s.io"]]
        assert jobset_rules == ([
            {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets"], "verbs": ["get", "list", "patch", "update", "watch"]},
            {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets/finalizers"], "verbs": ["update"]}]
            if "jobset.x-k8s.io/jobset" in frameworks else []), frameworks


@pytest.mark.cluster
def test_helm_template_dashboard(helm_bin: Path) -> None:
    """dashboard.port serves the controller's dashboard: the flag, a container port, a Service onto it,
    and the reads it needs (Events listed and watched, Pods got); none of it by default."""
    def rendered(*args: str) -> dict[str, list[dict[str, Any]]]:
        return by_kind(documents(helm(helm_bin, "template", "kq", str(CHART), *args).stdout))

    off = rendered()
    assert not any(s["metadata"]["name"] == "kq-pykueue-dashboard" for s in off["Service"])
    (container,) = off["Deployment"][0]["spec"]["template"]["spec"]["containers"]
    assert not any(a.startswith("--dashboard-port") for a in container["args"])
    on = rendered("--set", "dashboard.port=8090")
    (container,) = on["Deployment"][0]["spec"]["template"]["spec"]["containers"]
    assert "--dashboard-port=8090" in container["args"]
    assert {"name": "dashboard", "containerPort": 8090, "protocol": "TCP"} in container["ports"]
    (service,) = [s for s in on["Service"] if s["metadata"]["name"] == "kq-pykueue-dashboard"]
    assert service["spec"]["ports"] == [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": "dashboard"}]
    role = next(r for r in on["ClusterRole"] if r["metadata"]["name"] == "kq-pykueue-controller")
    assert {"apiGroups": [""], "resources": ["events"], "verbs": ["list", "watch"]} in role["rules"]
    assert {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]} in role["rules"]
    role_off = next(r for r in off["ClusterRole"] if r["metadata"]["name"] == "kq-pykueue-controller")
    assert {"apiGroups": [""], "resources": ["events"], "verbs": ["list", "watch"]} not in role_off["rules"]


@pytest.mark.cluster
def test_helm_template_network_policy(helm_bin: Path) -> None:
    """networkPolicy.enabled: the webhook and visibility ports from the API server's CIDRs only, the
    others from anywhere; none by default, and a clear refusal without the CIDRs."""
    def rendered(*args: str) -> dict[str, list[dict[str, Any]]]:
        return by_kind(documents(helm(helm_bin, "template", "kq", str(CHART), *args).stdout))

    assert "NetworkPolicy" not in rendered()
    (policy,) = rendered("--set", "networkPolicy.enabled=true", "--set",
                         "networkPolicy.apiServerCIDRs={10.0.0.0/24,192.168.1.5/32}")["NetworkPolicy"]
    spec = policy["spec"]
    assert spec["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "controller"
    assert spec["policyTypes"] == ["Ingress"]
    api_server, anyone = spec["ingress"]
    assert api_server["from"] == [{"ipBlock": {"cidr": "10.0.0.0/24"}}, {"ipBlock": {"cidr": "192.168.1.5/32"}}]
    assert [p["port"] for p in api_server["ports"]] == ["webhook-server", "visibility"]
    assert "from" not in anyone and [p["port"] for p in anyone["ports"]] == ["metrics", "health"]
    (with_dashboard,) = rendered("--set", "networkPolicy.enabled=true", "--set", "networkPolicy.apiServerCIDRs={10.0.0.0/24}",
                                 "--set", "dashboard.port=8090")["NetworkPolicy"]
    assert [p["port"] for p in with_dashboard["spec"]["ingress"][1]["ports"]] == ["metrics", "health", "dashboard"]
    refused = helm(helm_bin, "template", "kq", str(CHART), "--set", "networkPolicy.enabled=true", check=False)
    assert refused.returncode != 0
    assert "networkPolicy.apiServerCIDRs: the API server's source addresses (CIDRs) are required" in refused.stderr


@pytest.mark.cluster
def test_helm_refuses_two_replicas_without_leader_election(helm_bin: Path) -> None:
    result = helm(helm_bin, "template", "pykueue", str(CHART), "--set", "replicaCount=2",
                  "--set", "leaderElection.enabled=false", check=False)
    assert result.returncode != 0
    assert "without leader election" in result.stderr
    kinds = by_kind(documents(helm(helm_bin, "template", "pykueue", str(CHART), "--set", "replicaCount=2").stdout))
    assert kinds["Deployment"][0]["spec"]["replicas"] == 2
    single = by_kind(documents(helm(helm_bin, "template", "pykueue", str(CHART),
                                    "--set", "leaderElection.enabled=false").stdout))
    assert single["Deployment"][0]["spec"]["strategy"] == {"type": "Recreate"}  # never two controllers at once
    assert "--leader-elect=false" in single["Deployment"][0]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert not any(r["metadata"]["name"] == "pykueue-leader-election" for r in single.get("Role", []))


@pytest.mark.cluster
def test_helm_install_and_uninstall(helm_bin: Path, control_plane: DevCluster) -> None:
    """`helm install --create-namespace` on the tier 1 API server: the CRDs from crds/ (kept if
    another test installed them first), every template accepted, the notes printed; then uninstalled.
    No controller manager runs there, so the Deployment makes no pod and nothing is waited for."""
    kubeconfig = str(control_plane.kubeconfig)
    release, namespace = "pykueue-helm", "pykueue-helm-system"
    installed = helm(helm_bin, "install", release, str(CHART), "--namespace", namespace, "--create-namespace",
                     "--kubeconfig", kubeconfig)
    try:
        assert "STATUS: deployed" in installed.stdout
        assert f"kubectl -n {namespace} logs deployment/{release}-controller" in installed.stdout
        assert (f"Metrics: https://{release}-controller-metrics-service.{namespace}.svc:8443/metrics\n"
                f"for a token allowed by the ClusterRole {release}-metrics-reader") in installed.stdout
        for kind, name in (("serviceaccount", f"{release}-controller"), ("configmap", f"{release}-config"),
                           ("deployment", f"{release}-controller")):
            control_plane.kubectl("get", kind, name, "-n", namespace)
        control_plane.kubectl("get", "clusterrolebinding", f"{release}-controller")
        control_plane.kubectl("get", "rolebinding", f"{release}-extension-apiserver-authentication-reader",
                              "-n", "kube-system")
        control_plane.kubectl("get", "crd", "workloads.kueue.x-k8s.io")
    finally:
        helm(helm_bin, "uninstall", release, "--namespace", namespace, "--kubeconfig", kubeconfig)
        control_plane.kubectl("delete", "namespace", namespace, "--wait=false", check=False)
    assert control_plane.kubectl("get", "clusterrole", f"{release}-controller", check=False).returncode != 0
