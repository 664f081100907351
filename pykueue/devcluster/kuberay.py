"""KubeRay's operator and CRDs for the tier-2 cluster's ``ray`` addon, built from the Go module proxy.

KubeRay publishes its operator as a Go module (``github.com/ray-project/kuberay/ray-operator``, a
main package at the module's root), so it is built like the Kubernetes binaries: through a wrapper
module, ``hack/k8s/kuberay/`` (go.mod and go.sum committed), into a cache directory of its own,
``kuberay-<version>/``, so that the Kubernetes binaries' directory name, and every cache of it,
stays as it is. The CRDs (RayCluster, RayJob, RayService) are the ones the same module version
carries in ``config/crd/bases``, copied from the Go module cache next to the binary.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pykueue.devcluster.binaries import (
    MODULES_DIR,
    BuildError,
    GoTool,
    _go,
    cache_root,
    pinned_version,
    report,
)

MODULE_DIR = MODULES_DIR / "kuberay"
MODULE = "github.com/ray-project/kuberay/ray-operator"
BINARY = "ray-operator"
CRD_FILES = ("ray.io_rayclusters.yaml", "ray.io_rayjobs.yaml", "ray.io_rayservices.yaml")
CRD_NAMES = ("rayclusters.ray.io", "rayjobs.ray.io", "rayservices.ray.io")


def version() -> str:
    """The KubeRay release hack/k8s/kuberay/go.mod pins."""
    if not (MODULE_DIR / "go.mod").is_file():
        raise BuildError(f"KubeRay's operator is missing and its Go wrapper module ({MODULE_DIR}) is only in a "
                         "clone of the pykueue repository")
    return pinned_version(GoTool(MODULE_DIR.name, MODULE, ((BINARY, MODULE),)))


def home() -> Path:
    """``kuberay-<version>/`` in the cache: ``bin/ray-operator`` and ``crds/``."""
    return cache_root() / f"kuberay-{version()}"


def missing(directory: Path | None = None) -> list[str]:
    directory = directory or home()
    out = [] if os.access(directory / "bin" / BINARY, os.X_OK) else [BINARY]
    return out + [f"crds/{name}" for name in CRD_FILES if not (directory / "crds" / name).is_file()]


def ensure(log=sys.stderr) -> Path:
    """The addon's directory, building the operator and copying the CRDs first when they are missing
    (under a lock, so concurrent callers build once)."""
    target = home()
    if not missing(target):
        return target
    go = _go()
    target.mkdir(parents=True, exist_ok=True)
    with open(target / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if missing(target):  # another caller may have built it while we waited
            _build(go, target, version(), log)
    return target


def _run(go: str, args: list[str], logfile: Path, what: str) -> str:
    """Run ``go ARGS`` in the wrapper module; its stderr goes to the log, its stdout is returned."""
    env = dict(os.environ, CGO_ENABLED="0", GOFLAGS="-mod=readonly -buildvcs=false")
    with open(logfile, "a") as out:
        result = subprocess.run([go, *args], cwd=MODULE_DIR, env=env, stdout=subprocess.PIPE, stderr=out, text=True)
    if result.returncode != 0:
        tail = logfile.read_text().strip().splitlines()[-3:]
        raise BuildError(f"{what} of {MODULE} failed (exit {result.returncode}); full log in {logfile}: "
                         f"{' | '.join(tail)}")
    return result.stdout


def _build(go: str, target: Path, pinned: str, log) -> None:
    logfile = target / "build.log"
    logfile.write_text("")
    print(f"pykueue: building {BINARY} ({MODULE} {pinned}) into {target}", file=log, flush=True)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(dir=target, prefix=".build-") as tmp:
        _run(go, ["build", "-trimpath", "-ldflags", "-s -w", "-o", f"{tmp}/{BINARY}", MODULE], logfile, "go build")
        # the module's source, which the build just fetched, carries the CRDs of the same release
        found = _run(go, ["mod", "download", "-json", f"{MODULE}@{pinned}"], logfile, "go mod download")
        source = Path(json.loads(found)["Dir"]) / "config" / "crd" / "bases"
        (target / "crds").mkdir(exist_ok=True)
        for name in CRD_FILES:
            if not (source / name).is_file():
                raise BuildError(f"{MODULE} {pinned} has no {name} in {source}")
            shutil.copyfile(source / name, target / "crds" / name)
        (target / "bin").mkdir(exist_ok=True)
        os.replace(Path(tmp) / BINARY, target / "bin" / BINARY)
    print(f"pykueue: built {BINARY} in {time.monotonic() - started:.0f} s", file=log, flush=True)


def main() -> int:
    """`python -m pykueue.devcluster.kuberay`: build or reuse, print the directory."""
    return report(ensure)


if __name__ == "__main__":
    raise SystemExit(main())
