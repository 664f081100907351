"""The image's cache key and its OCI archive, without building it: a change to any source file gives a
new key (a rebuild), the same tree gives the same layer, and the archive names the image for ctr."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from pykueue import cli
from pykueue.devcluster import image, oci


def test_a_changed_source_file_changes_the_images_key(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "pykueue").mkdir(parents=True)
    (repo / "pyproject.toml").write_text('[project]\nversion = "0.1.0"\n')
    source = repo / "pykueue" / "a.py"
    source.write_text("x = 1\n")
    monkeypatch.setattr(image, "REPO_ROOT", repo)
    monkeypatch.setattr(image, "source_files", lambda: [repo / "pyproject.toml", source])
    first = image.image_key()
    assert image.image_key() == first
    source.write_text("x = 2\n")
    assert image.image_key() != first


def test_the_archive_is_reproducible_and_named(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "tool").write_text("#!/bin/sh\n")
    (root / "bin" / "tool").chmod(0o755)
    (root / "link").symlink_to("bin/tool")
    config = oci.ImageConfig(entrypoint=("/bin/tool",), user="65532:65532")
    first = oci.write_archive(root, config, "pykueue:0.1.0", tmp_path / "a.tar")
    second = oci.write_archive(root, config, "pykueue:0.1.0", tmp_path / "b.tar")
    assert first == second  # same tree, same manifest digest
    with tarfile.open(tmp_path / "a.tar") as tar:
        index = json.load(tar.extractfile("index.json"))
        docker = json.load(tar.extractfile("manifest.json"))
        manifest = json.load(tar.extractfile(f"blobs/sha256/{first.split(':')[1]}"))
        layer = tar.extractfile(f"blobs/sha256/{manifest['layers'][0]['digest'].split(':')[1]}")
        with tarfile.open(fileobj=layer) as inner:
            members = {m.name: m for m in inner.getmembers()}
    assert index["manifests"][0]["annotations"]["io.containerd.image.name"] == "docker.io/library/pykueue:0.1.0"
    assert docker[0]["RepoTags"] == ["pykueue:0.1.0"]
    assert members["bin/tool"].mode & 0o777 == 0o755 and members["link"].issym()
    assert {m.mtime for m in members.values()} == {0}



def test_image_build_has_help_that_names_the_cache(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        cli.main(["image", "build", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert stop.value.code == 0 and out.startswith("usage: pykueue image build")
    assert "~/.cache/pykueue" in out and "root" in out and "mmdebstrap" in out


def test_image_build_prints_the_cached_archive_without_root_or_mmdebstrap(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PYKUEUE_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    monkeypatch.setattr(image.os, "geteuid", lambda: 1000)
    archive = image.archive_path()
    archive.parent.mkdir()
    archive.write_bytes(b"built before")
    assert cli.main(["image", "build"]) == 0
    assert capsys.readouterr() == (f"{archive}\n", "")


def _cached_debian_tree() -> None:
    python = image._base_dir() / "rootfs" / "usr" / "bin" / "python3"
    python.parent.mkdir(parents=True)
    python.write_bytes(b"")


@pytest.mark.parametrize(("euid", "tree", "words"), [
    (1000, True, "building the image needs root (mmdebstrap in root mode, chroot); nothing is cached at "),
    (0, False, "building the image needs Debian's mmdebstrap, not found on PATH (apt-get install mmdebstrap)"),
])
def test_image_build_without_root_or_mmdebstrap_is_one_line_before_anything_is_made(
        euid: int, tree: bool, words: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Root is checked even when the Debian tree is cached (pip runs in a chroot); mmdebstrap only when
    the tree must be made. Nothing is started or written: no lock, no log, no partial tree."""
    monkeypatch.setenv("PYKUEUE_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    monkeypatch.setattr(image.os, "geteuid", lambda: euid)
    if tree:
        _cached_debian_tree()
    before = sorted(tmp_path.rglob("*"))
    monkeypatch.setattr(image.subprocess, "run", lambda *a, **k: pytest.fail(f"ran {a}"))
    assert cli.main(["image", "build"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"pykueue: error: {words}") and err.count("\n") == 1, err
    assert sorted(tmp_path.rglob("*")) == before


def test_image_build_as_a_user_exits_2_with_one_line(tmp_path: Path) -> None:
    """The command itself, run as nobody: one line on stderr, exit 2, no traceback."""
    result = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                             str(Path(sys.prefix) / "bin" / "python"), "-m", "pykueue.cli", "image", "build"],
                            capture_output=True, text=True, timeout=60, cwd="/",
                            env={"PATH": "/usr/bin:/bin", "PYKUEUE_CACHE_DIR": "/nonexistent/pykueue-cache"})
    assert result.returncode == 2 and result.stdout == "", result
    assert result.stderr.startswith("pykueue: error: building the image needs root") \
        and result.stderr.count("\n") == 1, result.stderr
