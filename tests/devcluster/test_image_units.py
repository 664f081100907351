"""The image's cache key and its OCI archive, without building it: a change to any source file gives a
new key (a rebuild), the same tree gives the same layer, and the archive names the image for ctr."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

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

