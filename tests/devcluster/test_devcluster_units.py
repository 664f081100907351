"""The dev-cluster pieces that need no running cluster: pins, names, node manifests, errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography import x509

from pykueue.devcluster import binaries, pki
from pykueue.devcluster.cluster import ClusterError, DevCluster, fake_node, load_nodes


def test_pinned_versions_come_from_the_wrapper_modules() -> None:
    v = binaries.versions()
    assert v["kubernetes"].startswith("v1.") and v["etcd"].startswith("v3.6.") and v["kwok"].startswith("v0.")
    assert binaries.bin_dir().parent.name == f"k8s-{v['kubernetes']}-etcd-{v['etcd']}-kwok-{v['kwok']}"


def test_every_staging_module_is_pinned_to_the_release() -> None:
    """k8s.io/kubernetes requires its staging modules at v0.0.0; each needs a replace to the release."""
    text = (binaries.MODULES_DIR / "kubernetes" / "go.mod").read_text()
    minor = binaries.versions()["kubernetes"].split(".", 1)[1]
    replaces = [line.split() for line in text.splitlines() if "=>" in line]
    assert len(replaces) >= 30
    assert all(r[0] == r[2] and r[3] == f"v0.{minor}" for r in replaces)


def test_go_binary_names() -> None:
    assert binaries._go_binary_name("go.etcd.io/etcd/server/v3") == "server"
    assert binaries._go_binary_name("k8s.io/kubernetes/cmd/kubectl") == "kubectl"


def test_version_stamp_flags() -> None:
    flags = binaries._kubernetes_ldflags("v1.34.4")
    assert "-X k8s.io/component-base/version.gitVersion=v1.34.4" in flags
    assert "-X k8s.io/client-go/pkg/version.gitMinor=34" in flags


def test_missing_go_is_one_clear_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYKUEUE_CACHE_DIR", str(tmp_path))  # an empty cache: everything is missing
    monkeypatch.setenv("PATH", str(tmp_path))  # and no go
    with pytest.raises(binaries.BuildError) as err:
        binaries.ensure()
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("building the test cluster's Kubernetes binaries needs Go 1.24 or newer on PATH")
    assert "kube-apiserver" in message


def test_cli_build_without_go_exits_2(tmp_path: Path) -> None:
    env = dict(os.environ, PYKUEUE_CACHE_DIR=str(tmp_path), PATH=str(tmp_path))
    result = subprocess.run([sys.executable, "-m", "pykueue.cli", "dev-cluster", "build"],
                            capture_output=True, text=True, env=env)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("pykueue: error: building the test cluster's Kubernetes binaries needs Go")


def test_fake_node_defaults_and_keeps_what_the_test_says() -> None:
    node = fake_node({"metadata": {"name": "n", "labels": {"a": "b"}},
                      "status": {"capacity": {"cpu": "4", "nvidia.com/gpu": "2"}}})
    assert node["metadata"]["annotations"] == {"kwok.x-k8s.io/node": "fake"}
    assert node["metadata"]["labels"] == {"a": "b", "kubernetes.io/hostname": "n"}
    assert node["status"]["allocatable"] == {"cpu": "4", "nvidia.com/gpu": "2"}
    plain = fake_node({"metadata": {"name": "p"}})
    assert plain["status"]["capacity"] == {"cpu": "32", "memory": "256Gi", "pods": "110"}


def test_load_nodes_rejects_other_kinds(tmp_path: Path) -> None:
    good = tmp_path / "nodes.yaml"
    good.write_text("kind: Node\nmetadata: {name: a}\n---\nkind: List\nitems:\n- kind: Node\n  metadata: {name: b}\n")
    assert [n["metadata"]["name"] for n in load_nodes(good)] == ["a", "b"]
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: Pod\nmetadata: {name: a}\n")
    with pytest.raises(ClusterError, match="every document must be a Node"):
        load_nodes(bad)


def test_pki_chain_and_identities(tmp_path: Path) -> None:
    certs = pki.make_cluster_pki(tmp_path)
    ca = x509.load_pem_x509_certificate(certs.ca.cert.read_bytes())
    admin = x509.load_pem_x509_certificate(certs.admin.cert.read_bytes())
    serving = x509.load_pem_x509_certificate(certs.serving.cert.read_bytes())
    admin.verify_directly_issued_by(ca)
    serving.verify_directly_issued_by(ca)
    org = admin.subject.get_attributes_for_oid(x509.NameOID.ORGANIZATION_NAME)[0].value
    assert org == "system:masters"
    names = serving.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "kubernetes.default.svc" in names.get_values_for_type(x509.DNSName)
    assert oct(certs.admin.key.stat().st_mode & 0o777) == "0o600"


def test_state_of_a_directory_without_cluster(tmp_path: Path) -> None:
    with pytest.raises(ClusterError, match="no cluster was started"):
        DevCluster.load(tmp_path)


def test_env_puts_helm_beside_kubectl(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    """`pykueue dev-cluster env`: KUBECONFIG, then kubectl's and helm's directories on PATH."""
    from pykueue.cli import main

    helm = tmp_path / "helm-bin" / "helm"
    helm.parent.mkdir()
    helm.write_text("#!/bin/sh\n")
    helm.chmod(0o755)
    monkeypatch.setenv("PYKUEUE_HELM", str(helm))
    cluster = tmp_path / "kc"
    cluster.mkdir()
    (cluster / "cluster.json").write_text(json.dumps({"tier": 3, "binDir": "/k8s/bin", "ports": {}, "processes": []}))
    assert main(["dev-cluster", "env", "--dir", str(cluster)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"export KUBECONFIG={cluster / 'kubeconfig'}", f'export PATH=/k8s/bin:{helm.parent}:"$PATH"']


def test_tier_3_taints_kwoks_nodes_and_keeps_their_annotation() -> None:
    """Tier 3: an ordinary pod must land on the real node, so kwok's nodes carry a NoSchedule taint
    (once, beside the caller's own) and still the annotation kwok selects them by."""
    from pykueue.devcluster.cluster import FAKE_NODE_ANNOTATION, FAKE_NODE_TAINT

    own = {"key": "gpu", "value": "h100", "effect": "NoSchedule"}
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "spec": {"taints": [own]}}
    tainted = fake_node(fake_node(node, tainted=True), tainted=True)
    assert tainted["spec"]["taints"] == [own, FAKE_NODE_TAINT]
    assert tainted["metadata"]["annotations"][FAKE_NODE_ANNOTATION[0]] == FAKE_NODE_ANNOTATION[1]
    assert "taints" not in fake_node({"metadata": {"name": "m"}}).get("spec", {})  # tier 2: as declared
