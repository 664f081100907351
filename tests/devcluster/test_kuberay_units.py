"""The ray addon's build and options without a cluster: its pinned version, its own cache directory,
and one clear line for what cannot work."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pykueue.devcluster import binaries, kuberay
from pykueue.devcluster.cluster import ClusterError, DevCluster, check_addons


def test_kuberay_is_pinned_and_cached_apart_from_the_kubernetes_binaries(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYKUEUE_CACHE_DIR", str(tmp_path))
    assert kuberay.version() == "v1.6.2"
    assert kuberay.home() == tmp_path / "kuberay-v1.6.2"
    assert kuberay.home().parent == binaries.bin_dir().parent.parent  # same cache, another directory
    assert kuberay.missing() == ["ray-operator", "crds/ray.io_rayclusters.yaml", "crds/ray.io_rayjobs.yaml",
                                 "crds/ray.io_rayservices.yaml"]
    go_mod = (kuberay.MODULE_DIR / "go.mod").read_text()
    assert "tool github.com/ray-project/kuberay/ray-operator" in go_mod
    assert (kuberay.MODULE_DIR / "go.sum").read_text().count("github.com/ray-project/kuberay/ray-operator v1.6.2") == 2


def test_addons_need_tier_2_and_a_known_name() -> None:
    check_addons(("ray",), 2)
    check_addons((), 1)
    with pytest.raises(ClusterError, match=r"^--addons ray needs --tier 2"):
        check_addons(("ray",), 1)
    with pytest.raises(ClusterError, match=r"^unknown addon spark \(known: ray, jobset, lws, kubeflow\)$"):
        check_addons(("ray", "spark"), 2)
    with pytest.raises(ClusterError, match="needs a tier 2 cluster"):
        DevCluster(Path("/nonexistent"), tier=1).start_ray()


def test_missing_go_is_one_clear_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYKUEUE_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(binaries.BuildError, match="needs Go 1.24 or newer on PATH"):
        kuberay.ensure()


@pytest.mark.parametrize("args,message", [
    (["up", "--dir", "X", "--tier", "1", "--addons", "ray"], "pykueue: error: --addons ray needs --tier 2"),
    (["up", "--dir", "X", "--tier", "2", "--addons", "ray,spark"], "pykueue: error: unknown addon spark"),
    (["build", "--addons", "spark"], "pykueue: error: unknown addon spark"),
])
def test_cli_refuses_bad_addons_in_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    args = [str(tmp_path / "c") if a == "X" else a for a in args]
    env = dict(os.environ, PYKUEUE_CACHE_DIR=str(tmp_path))
    result = subprocess.run([sys.executable, "-m", "pykueue.cli", "dev-cluster", *args],
                            capture_output=True, text=True, env=env)
    assert result.returncode == 2
    assert result.stderr.startswith(message) and result.stderr.count("\n") == 1
    assert not (tmp_path / "c").exists()  # refused before anything started
