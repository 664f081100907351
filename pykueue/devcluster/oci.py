"""OCI image archives written from a root filesystem on disk, with no registry and no image builder.

An image is one uncompressed layer (the tree as a tar, owners and modes kept), a config (user,
entrypoint, environment) and a manifest, in an OCI image layout tar that also carries Docker's
``manifest.json``, so ``ctr images import`` and ``podman load`` both read it and name the image.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

LAYER_TYPE = "application/vnd.oci.image.layer.v1.tar"
CONFIG_TYPE = "application/vnd.oci.image.config.v1+json"
MANIFEST_TYPE = "application/vnd.oci.image.manifest.v1+json"
EPOCH = 0  # every member's mtime: the same tree gives the same layer digest


@dataclass(frozen=True)
class ImageConfig:
    """What the runtime reads from an image's config: whom to run as and what."""

    entrypoint: tuple[str, ...]
    cmd: tuple[str, ...] = ()
    user: str = ""
    env: tuple[str, ...] = ("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",)
    workdir: str = "/"
    labels: dict[str, str] = field(default_factory=dict)


def _members(root: Path) -> Iterator[Path]:
    """Every path under ``root`` in a stable order, directories before what they hold."""
    for directory, dirs, files in os.walk(root):
        dirs.sort()
        base = Path(directory)
        for name in (*dirs, *sorted(files)):
            yield base / name


def write_layer(root: Path, out: Path) -> None:
    """``root``'s tree as an uncompressed layer tar: numeric owners, modes, links and device nodes
    as they are, times zeroed so an unchanged tree gives the same digest."""
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tar:
        for path in _members(root):
            info = tar.gettarinfo(str(path), arcname=str(path.relative_to(root)))
            info.mtime = EPOCH
            info.uname = info.gname = ""
            info.pax_headers = {}
            if info.isreg():
                with open(path, "rb") as handle:
                    tar.addfile(info, handle)
            else:
                tar.addfile(info)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _blob(tar: tarfile.TarFile, data: bytes) -> str:
    digest = hashlib.sha256(data).hexdigest()
    info = tarfile.TarInfo(f"blobs/sha256/{digest}")
    info.size, info.mtime = len(data), EPOCH
    tar.addfile(info, io.BytesIO(data))
    return digest


def write_archive(root: Path, config: ImageConfig, ref: str, out: Path) -> str:
    """An image of ``root`` named ``ref`` (``name:tag``) as an archive at ``out``; returns the
    manifest's digest. Written beside ``out`` and renamed, so a reader never sees half of one."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=".oci-") as tmp:
        layer = Path(tmp) / "layer.tar"
        write_layer(root, layer)
        layer_digest, layer_size = _sha256(layer), layer.stat().st_size
        image_config: dict[str, Any] = {
            "architecture": "amd64",
            "os": "linux",
            "config": {
                "User": config.user,
                "Entrypoint": list(config.entrypoint),
                "Cmd": list(config.cmd) or None,
                "Env": list(config.env),
                "WorkingDir": config.workdir,
                "Labels": config.labels or None,
            },
            "rootfs": {"type": "layers", "diff_ids": [f"sha256:{layer_digest}"]},
            "history": [{"created_by": "pykueue.devcluster.oci"}],
        }
        partial = Path(tmp) / "image.tar"
        with tarfile.open(partial, "w") as tar:
            config_bytes = json.dumps(image_config, sort_keys=True).encode()
            config_digest = _blob(tar, config_bytes)
            info = tarfile.TarInfo(f"blobs/sha256/{layer_digest}")
            info.size, info.mtime = layer_size, EPOCH
            with open(layer, "rb") as handle:
                tar.addfile(info, handle)
            manifest = {
                "schemaVersion": 2,
                "mediaType": MANIFEST_TYPE,
                "config": {"mediaType": CONFIG_TYPE, "digest": f"sha256:{config_digest}", "size": len(config_bytes)},
                "layers": [{"mediaType": LAYER_TYPE, "digest": f"sha256:{layer_digest}", "size": layer_size}],
            }
            manifest_bytes = json.dumps(manifest, sort_keys=True).encode()
            manifest_digest = _blob(tar, manifest_bytes)
            name = ref if "/" in ref.split(":")[0] else f"docker.io/library/{ref}"
            index = {
                "schemaVersion": 2,
                "manifests": [{
                    "mediaType": MANIFEST_TYPE, "digest": f"sha256:{manifest_digest}", "size": len(manifest_bytes),
                    "annotations": {"io.containerd.image.name": name, "org.opencontainers.image.ref.name": ref},
                }],
            }
            docker = [{"Config": f"blobs/sha256/{config_digest}", "RepoTags": [ref],
                       "Layers": [f"blobs/sha256/{layer_digest}"]}]
            for member, value in (("oci-layout", {"imageLayoutVersion": "1.0.0"}), ("index.json", index),
                                  ("manifest.json", docker)):
                data = json.dumps(value).encode()
                info = tarfile.TarInfo(member)
                info.size, info.mtime = len(data), EPOCH
                tar.addfile(info, io.BytesIO(data))
        os.replace(partial, out)
    return f"sha256:{manifest_digest}"
