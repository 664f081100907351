"""Building helm from hack/helm like the cluster binaries, without building it: the pinned version,
the version stamps, the cache path and the errors that replace a build."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from pykueue.devcluster import binaries, helm


def test_pinned_version_is_the_wrapper_modules() -> None:
    text = (helm.MODULE_DIR / "go.mod").read_text()
    assert f"helm.sh/helm/v3 {helm.version()}" in text
    assert "tool helm.sh/helm/v3/cmd/helm" in text
    assert (helm.MODULE_DIR / "go.sum").stat().st_size > 0  # committed, so the build is reproducible
    go_line = next(line for line in text.splitlines() if line.startswith("go "))
    major, minor = (int(x) for x in go_line.split()[1].split(".")[:2])
    assert (major, minor) <= binaries.MIN_GO  # the Go the README asks for builds helm too


def test_stamps_helm_and_kubernetes_versions() -> None:
    flags = helm._ldflags("v3.19.5", "require (\n\tk8s.io/client-go v0.34.2 // indirect\n)\n")
    assert "-X helm.sh/helm/v3/internal/version.version=v3.19.5" in flags
    for pkg in ("helm.sh/helm/v3/pkg/chartutil", "helm.sh/helm/v3/pkg/lint/rules"):
        assert f"-X {pkg}.k8sVersionMajor=1" in flags and f"-X {pkg}.k8sVersionMinor=34" in flags


def test_cache_path_is_its_own(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("PYKUEUE_HELM", raising=False)
    monkeypatch.setenv("PYKUEUE_CACHE_DIR", str(tmp_path))
    assert helm.path() == tmp_path / f"helm-{helm.version()}" / "bin" / "helm"
    assert helm.path().parent != binaries.bin_dir()


def test_existing_helm_is_reused_without_go(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PYKUEUE_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("PYKUEUE_HELM", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    target = helm.path()
    target.parent.mkdir(parents=True)
    target.write_text("#!/bin/sh\n")
    target.chmod(target.stat().st_mode | stat.S_IXUSR)
    assert helm.ensure() == target


def test_without_go_one_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PYKUEUE_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("PYKUEUE_HELM", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    with pytest.raises(binaries.BuildError, match=r"building helm needs Go 1\.24 or newer on PATH"):
        helm.ensure()


def test_explicit_helm_must_exist(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PYKUEUE_HELM", str(tmp_path / "helm"))
    with pytest.raises(binaries.BuildError, match="PYKUEUE_HELM="):
        helm.ensure()


def test_module_main_reports_errors_in_one_line(tmp_path: Path) -> None:
    env = dict(os.environ, PYKUEUE_HELM=str(tmp_path / "helm"))
    result = subprocess.run([sys.executable, "-m", "pykueue.devcluster.helm"], env=env, capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stderr.startswith("pykueue: error: PYKUEUE_HELM=") and result.stderr.count("\n") == 1


@pytest.mark.cluster
def test_built_helm_reports_the_pinned_version(helm_bin: Path) -> None:
    out = subprocess.run([str(helm_bin), "version", "--template", "{{.Version}}"], capture_output=True, text=True)
    assert out.stdout == helm.version()
