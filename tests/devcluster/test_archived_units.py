"""The jobset, lws and kubeflow addons without a cluster: the build's cache key, the webhook configurations taken
from the archives (with their kustomize patches) and pointed at loopback, the managers' Configuration,
and one clear line for what cannot work."""

from __future__ import annotations

import base64
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml
from cryptography import x509

from pykueue.devcluster import addon_setup, archived, pki
from pykueue.devcluster.binaries import BuildError
from pykueue.devcluster.cluster import ClusterError, DevCluster, check_addons


def _webhook_dir(spec: archived.Archived, tmp_path: Path) -> Path:
    """The archive's webhook directory, extracted alone."""
    with tarfile.open(archived.archive_path(spec)) as tar:
        members = [m for m in tar.getmembers() if m.name.startswith(spec.webhook_dir + "/")]
        tar.extractall(tmp_path, members=members, filter="data")
    return tmp_path / spec.webhook_dir


def test_the_cache_directory_is_keyed_by_the_archives_content(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    third = tmp_path / "third_party"
    third.mkdir()
    (third / "jobset-v0.12.0.tar.gz").write_bytes(b"one")
    monkeypatch.setenv("PYKUEUE_THIRD_PARTY", str(third))
    monkeypatch.setenv("PYKUEUE_CACHE_DIR", str(tmp_path / "cache"))
    first = archived.home(archived.JOBSET)
    assert first.parent == tmp_path / "cache" and first.name.startswith("jobset-v0.12.0-")
    assert archived.missing(archived.JOBSET, first) == ["jobset-manager", "crds/", "webhooks.yaml"]
    (third / "jobset-v0.12.0.tar.gz").write_bytes(b"two")
    assert archived.home(archived.JOBSET) != first  # another archive, another build


def test_a_missing_archive_is_one_line_naming_where_it_was_looked_for(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYKUEUE_THIRD_PARTY", str(tmp_path))
    with pytest.raises(BuildError, match=rf"^the lws addon builds from {tmp_path}/lws-v0.8.0.tar.gz, which is missing"):
        archived.ensure(archived.LWS)
    result = subprocess.run([sys.executable, "-m", "pykueue.devcluster.archived", "lws"], capture_output=True,
                            text=True, env={"PYKUEUE_THIRD_PARTY": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "lws-v0.8.0.tar.gz" in result.stderr
    unknown = subprocess.run([sys.executable, "-m", "pykueue.devcluster.archived", "spark"], capture_output=True,
                             text=True)
    assert unknown.returncode == 2 and unknown.stderr == "pykueue: error: unknown addon spark (known: jobset, lws, kubeflow)\n"


@pytest.mark.parametrize(("spec", "label"), [(archived.JOBSET, "jobset.sigs.k8s.io/jobset-name"),
                                             (archived.LWS, "leaderworkerset.sigs.k8s.io/name")])
def test_the_pod_webhooks_get_the_objectselector_the_kustomization_patches_in(
        spec: archived.Archived, label: str, tmp_path: Path) -> None:
    """manifests.yaml alone would send every Pod of the cluster to the addon's webhook, failing closed;
    the kustomization's patches restrict the pod hooks to the addon's own Pods."""
    docs = archived.webhook_manifests(_webhook_dir(spec, tmp_path))
    assert [d["kind"] for d in docs] == ["MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"]
    for doc in docs:
        pod_hooks = [h for h in doc["webhooks"] if h["rules"][0]["resources"] == ["pods"]]
        assert len(pod_hooks) == 1
        assert pod_hooks[0]["objectSelector"] == {"matchExpressions": [{"key": label, "operator": "Exists"}]}


def test_the_webhooks_are_called_at_the_loopback_port_with_the_clusters_ca(tmp_path: Path) -> None:
    docs = archived.webhook_manifests(_webhook_dir(archived.JOBSET, tmp_path))
    registered = addon_setup.webhook_configurations(archived.JOBSET, docs, 40123, b"PEM")
    assert [d["metadata"]["name"] for d in registered] == ["jobset-mutating-webhook-configuration",
                                                           "jobset-validating-webhook-configuration"]
    assert registered[0]["metadata"]["labels"] == {"pykueue.dev/addon": "jobset"}
    hook = registered[0]["webhooks"][0]
    assert hook["clientConfig"] == {"url": "https://127.0.0.1:40123/mutate-jobset-x-k8s-io-v1alpha2-jobset",
                                    "caBundle": base64.b64encode(b"PEM").decode()}
    assert "service" in docs[0]["webhooks"][0]["clientConfig"]  # the archive's documents are left as they were


def test_the_managers_configuration_and_certificate(tmp_path: Path) -> None:
    config = addon_setup.manager_config(archived.LWS, webhook_port=1, cert_dir=tmp_path / "c", probe_port=2,
                                        metrics_port=3)
    assert config == {
        "apiVersion": "config.lws.x-k8s.io/v1alpha1", "kind": "Configuration",
        "leaderElection": {"leaderElect": False, "resourceNamespace": "default"},
        "internalCertManagement": {"enable": False},
        "webhook": {"port": 1, "host": "127.0.0.1", "certDir": str(tmp_path / "c")},
        "health": {"healthProbeBindAddress": "127.0.0.1:2"}, "metrics": {"bindAddress": "127.0.0.1:3"}}
    pki.make_cluster_pki(tmp_path / "pki")
    ca = addon_setup.serving_certificate(tmp_path / "pki", tmp_path / "c")
    assert ca == tmp_path / "pki" / "ca.crt"
    cert = x509.load_pem_x509_certificate((tmp_path / "c" / "tls.crt").read_bytes())
    assert cert.issuer == x509.load_pem_x509_certificate(ca.read_bytes()).subject
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert [str(a) for a in names.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert (tmp_path / "c" / "tls.key").is_file()
    assert yaml.safe_load(yaml.safe_dump(config)) == config


def test_the_addons_need_tier_2() -> None:
    check_addons(("jobset", "lws"), 2)
    with pytest.raises(ClusterError, match=r"^--addons jobset,lws needs --tier 2"):
        check_addons(("jobset", "lws"), 1)
    with pytest.raises(ClusterError, match="the lws addon needs a tier 2 cluster"):
        DevCluster(Path("/nonexistent"), tier=1).start_archived("lws")


@pytest.mark.binaries
def test_build_with_the_addons_prints_each_directory() -> None:
    """`pykueue dev-cluster build --addons jobset,lws`: the Kubernetes binaries' directory, then each addon's
    (built once by .ci/run, so reused here)."""
    result = subprocess.run([sys.executable, "-m", "pykueue.cli", "dev-cluster", "build", "--addons", "jobset,lws"],
                            capture_output=True, text=True, timeout=1800)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[1:] == [str(archived.home(archived.JOBSET)), str(archived.home(archived.LWS))]
    for spec in (archived.JOBSET, archived.LWS):
        assert archived.missing(spec, archived.home(spec)) == []


def test_the_training_operators_webhooks_are_its_five_renamed_and_pointed_at_loopback(tmp_path: Path) -> None:
    """Its kustomization patches by kind (every ValidatingWebhookConfiguration): the one configuration is
    renamed validator.training-operator.kubeflow.org; registered, it is prefixed ``kubeflow-`` (a name
    its cert rotator does not inject into) and each of the five hooks calls loopback."""
    spec = archived.KUBEFLOW
    (doc,) = archived.webhook_manifests(_webhook_dir(spec, tmp_path))
    assert doc["metadata"]["name"] == "validator.training-operator.kubeflow.org"
    (registered,) = addon_setup.webhook_configurations(spec, [doc], 9443, b"CA")
    assert registered["metadata"]["name"] == "kubeflow-validator.training-operator.kubeflow.org"
    assert [h["clientConfig"]["url"] for h in registered["webhooks"]] == [
        f"https://127.0.0.1:9443/validate-kubeflow-org-v1-{k}" for k in ("jaxjob", "paddlejob", "pytorchjob", "tfjob", "xgboostjob")]


def test_the_training_operator_runs_only_its_five_schemes_on_loopback() -> None:
    args = addon_setup.training_operator_args(Path("/k"), webhook_port=1, probe_port=2, metrics_port=3)
    assert args[:4] == ["--kubeconfig=/k", "--metrics-bind-address=127.0.0.1:3",
                        "--health-probe-bind-address=127.0.0.1:2", "--webhook-server-port=1"]
    assert [a.split("=")[1] for a in args[4:]] == ["pytorchjob", "tfjob", "xgboostjob", "paddlejob", "jaxjob"]


def test_the_shared_serving_certificate_is_made_once_and_copied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same files for every caller: a second call neither re-signs nor rewrites them."""
    monkeypatch.setenv("PYKUEUE_CACHE_DIR", str(tmp_path / "cache"))
    ca = addon_setup.shared_serving_certificate(tmp_path / "certs")
    first = (tmp_path / "certs" / "tls.crt").read_bytes()
    assert addon_setup.shared_serving_certificate(tmp_path / "certs") == ca
    assert (tmp_path / "certs" / "tls.crt").read_bytes() == first
    leaf = x509.load_pem_x509_certificate(first)
    assert x509.load_pem_x509_certificate(ca.read_bytes()).subject == leaf.issuer
