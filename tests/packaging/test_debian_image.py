"""The image built from Debian's packages (`pykueue.devcluster.image`) is the Dockerfile's image: the
same user, entrypoint, command, virtualenv and environment, read from the OCI archive itself."""

from __future__ import annotations

import json
import shlex
import tarfile

import pytest

from pykueue.devcluster import image
from tests.packaging.dockerfile import instructions

pytestmark = pytest.mark.e2e  # builds the image (root, mmdebstrap) on first use; .ci/run builds it first


def _config() -> dict:
    with tarfile.open(image.ensure()) as tar:
        index = json.load(tar.extractfile("index.json"))
        manifest = json.load(tar.extractfile(f"blobs/sha256/{index['manifests'][0]['digest'].split(':')[1]}"))
        assert index["manifests"][0]["annotations"]["org.opencontainers.image.ref.name"] == image.ref()
        return json.load(tar.extractfile(f"blobs/sha256/{manifest['config']['digest'].split(':')[1]}"))["config"]


def test_the_debian_image_runs_what_the_dockerfile_runs() -> None:
    final = instructions()[max(i for i, (w, _) in enumerate(instructions()) if w == "FROM"):]
    docker = {w: r for w, r in final}
    config = _config()
    assert config["User"] == docker["USER"]
    assert config["Entrypoint"] == json.loads(docker["ENTRYPOINT"])
    assert config["Cmd"] == json.loads(docker["CMD"])
    env = dict(e.split("=", 1) for e in config["Env"])
    for pair in shlex.split(docker["ENV"]):
        name, _, value = pair.partition("=")
        if name == "PATH":
            assert env["PATH"].startswith(value.split(":")[0] + ":")  # /opt/pykueue/bin first
        else:
            assert env[name] == value


def _image_files() -> set[str]:
    """Every path in the image's layers, without the leading ./"""
    with tarfile.open(image.ensure()) as tar:
        index = json.load(tar.extractfile("index.json"))
        manifest = json.load(tar.extractfile(f"blobs/sha256/{index['manifests'][0]['digest'].split(':')[1]}"))
        names: set[str] = set()
        for layer in manifest["layers"]:
            with tarfile.open(fileobj=tar.extractfile(f"blobs/sha256/{layer['digest'].split(':')[1]}")) as fs:
                names |= {n.lstrip("./") for n in fs.getnames()}
    return names


def test_the_debian_image_carries_the_compiled_engine() -> None:
    """Its package is the wheel built here, whose hook compiled the engine (this machine has the
    toolchain: .ci/run installs it): the extension modules are in the virtualenv, beside the sources."""
    names = {n for n in _image_files() if "/site-packages/pykueue/" in n}
    engine = [n for n in names if n.endswith("/pykueue/engine/engine.py")]
    assert engine, "the package is not in the image"
    site = engine[0].rsplit("/pykueue/", 1)[0]
    assert any(n.startswith(f"{site}/pykueue/engine/engine.cpython-311") and n.endswith(".so") for n in names), \
        sorted(n for n in names if "/pykueue/engine/" in n)[:20]
    assert f"{site}/pykueue/_compiled.json" in names


def test_the_debian_image_has_no_shell_package_manager_or_pip() -> None:
    """What the controller never runs is not in the image: no shell, no dpkg or apt, no pip in the
    virtualenv (image.STRIPPED); the interpreter and the package are (tier 3 runs it on the node)."""
    names = _image_files()
    for absent in ("usr/bin/sh", "bin/sh", "usr/bin/dash", "usr/bin/bash", "usr/bin/dpkg", "usr/bin/apt-get",
                   "opt/pykueue/bin/pip", "opt/pykueue/bin/pip3"):
        assert absent not in names, absent
    assert not any("/site-packages/pip/" in n for n in names)
    assert "usr/bin/python3" in names or "usr/bin/python3.11" in names
    assert "opt/pykueue/bin/pykueue" in names
