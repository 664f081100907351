"""Upstream Kueue's manager for the live bench, without a cluster: the pinned release (v0.17.0, what
the Go module proxy serves), its own cache directory, and the Configuration it runs with."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pykueue.devcluster import binaries, upstream_kueue


def test_upstream_kueue_is_pinned_and_cached_apart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYKUEUE_CACHE_DIR", str(tmp_path))
    assert upstream_kueue.version() == "v0.17.0"
    assert upstream_kueue.home() == tmp_path / "kueue-v0.17.0"
    assert upstream_kueue.missing() == ["kueue", "crds/"]
    go_mod = (upstream_kueue.BUILD.module_dir / "go.mod").read_text()
    assert "tool sigs.k8s.io/kueue/cmd/kueue" in go_mod
    assert (upstream_kueue.BUILD.module_dir / "go.sum").read_text().count("sigs.k8s.io/kueue v0.17.0") == 2


def test_missing_go_is_one_clear_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYKUEUE_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(binaries.BuildError, match="needs Go 1.24 or newer on PATH"):
        upstream_kueue.ensure()


def test_the_configuration_runs_without_certificate_management_or_leader_election(tmp_path: Path) -> None:
    config = upstream_kueue.configuration(tmp_path, 1234, 5678)
    assert (config["apiVersion"], config["kind"]) == ("config.kueue.x-k8s.io/v1beta2", "Configuration")
    assert config["internalCertManagement"] == {"enable": False}
    assert config["leaderElection"] == {"leaderElect": False}
    assert config["webhook"] == {"host": "127.0.0.1", "port": 5678, "certDir": str(tmp_path / "webhook-certs")}
    assert config["health"] == {"healthProbeBindAddress": "127.0.0.1:1234"}
    assert config["integrations"] == {"frameworks": ["batch/job"]}
    assert config["featureGates"] == {"VisibilityOnDemand": False}  # pykueue's is off in the bench too


def test_the_manager_command_points_at_its_config_and_certificate(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(upstream_kueue, "ensure", lambda: tmp_path / "built")
    monkeypatch.setattr(upstream_kueue, "METRICS_CERTS", tmp_path / "metrics")
    monkeypatch.setattr(upstream_kueue.metrics_certificate, "__defaults__", (tmp_path / "metrics",))
    cmd, health = upstream_kueue.manager_command(tmp_path / "kubeconfig", tmp_path / "work")
    assert cmd == [str(tmp_path / "built" / "bin" / "kueue"), f"--kubeconfig={tmp_path / 'kubeconfig'}",
                       f"--config={tmp_path / 'work' / 'upstream-kueue.yaml'}"]
    written = yaml.safe_load((tmp_path / "work" / "upstream-kueue.yaml").read_text())
    assert written["health"]["healthProbeBindAddress"] == f"127.0.0.1:{health}"
    certs = tmp_path / "work" / "webhook-certs"
    assert written["webhook"]["certDir"] == str(certs)
    assert (certs / "tls.crt").is_file() and (certs / "tls.key").is_file()  # controller-runtime's names
    assert (tmp_path / "metrics" / "tls.crt").read_bytes() == (certs / "tls.crt").read_bytes()
