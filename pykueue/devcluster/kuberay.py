"""KubeRay's operator and CRDs for the tier-2 cluster's ``ray`` addon, built from the Go module proxy.

KubeRay publishes its operator as a Go module (``github.com/ray-project/kuberay/ray-operator``, a
main package at the module's root), so it is built like the Kubernetes binaries: through a wrapper
module, ``hack/k8s/kuberay/`` (go.mod and go.sum committed), into a cache directory of its own,
``kuberay-<version>/``, so that the Kubernetes binaries' directory name, and every cache of it,
stays as it is (``go_wrapped.py`` builds it). The CRDs (RayCluster, RayJob, RayService) are the ones the same module version
carries in ``config/crd/bases``, copied from the Go module cache next to the binary.
"""

from __future__ import annotations

import sys
from pathlib import Path

from pykueue.devcluster.binaries import report
from pykueue.devcluster.go_wrapped import Wrapped

MODULE = "github.com/ray-project/kuberay/ray-operator"
BINARY = "ray-operator"
CRD_FILES = ("ray.io_rayclusters.yaml", "ray.io_rayjobs.yaml", "ray.io_rayservices.yaml")
CRD_NAMES = ("rayclusters.ray.io", "rayjobs.ray.io", "rayservices.ray.io")
BUILD = Wrapped("kuberay", MODULE, MODULE, BINARY, BINARY, ("config", "crd", "bases"), CRD_FILES)
MODULE_DIR = BUILD.module_dir


def version() -> str:
    """The KubeRay release hack/k8s/kuberay/go.mod pins."""
    return BUILD.version()


def home() -> Path:
    """``kuberay-<version>/`` in the cache: ``bin/ray-operator`` and ``crds/``."""
    return BUILD.home()


def missing(directory: Path | None = None) -> list[str]:
    return BUILD.missing(directory or home())


def ensure(log=sys.stderr) -> Path:
    """The addon's directory, building the operator and copying the CRDs first when they are missing
    (under a lock, so concurrent callers build once)."""
    return BUILD.ensure(log)


def main() -> int:
    """`python -m pykueue.devcluster.kuberay`: build or reuse, print the directory."""
    return report(ensure)


if __name__ == "__main__":
    raise SystemExit(main())
