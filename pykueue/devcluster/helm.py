"""helm, built from its pinned Go module like the cluster binaries, into a cache of its own.

The chart's tests run `helm lint` and `helm template`, and `config/manifests.yaml` is rendered with
the same helm, so the rendering is reproducible. helm gets its own cache directory
(`helm-<version>/bin/helm`) rather than joining the Kubernetes binaries' set, whose directory name
would change and force every machine to rebuild Kubernetes.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pykueue.devcluster.binaries import MIN_GO, REPO_ROOT, BuildError, _go, cache_root, report

MODULE_DIR = REPO_ROOT / "hack" / "helm"
MODULE = "helm.sh/helm/v3"
PACKAGE = "helm.sh/helm/v3/cmd/helm"


def _go_mod() -> str:
    path = MODULE_DIR / "go.mod"
    try:
        return path.read_text()
    except FileNotFoundError:
        raise BuildError(f"helm is missing and its Go wrapper module ({path}) is only in a clone of "
                         "the pykueue repository") from None


def _required(module: str, text: str) -> str | None:
    match = re.search(rf"^\s*(?:require\s+)?{re.escape(module)} (v\S+)", text, re.MULTILINE)
    return match.group(1) if match else None


def version() -> str:
    """The helm release hack/helm/go.mod pins."""
    pinned = _required(MODULE, _go_mod())
    if pinned is None:
        raise BuildError(f"{MODULE_DIR / 'go.mod'} does not require {MODULE}")
    return pinned


def path() -> Path:
    """Where helm is, or will be once built ($PYKUEUE_HELM names a helm built elsewhere)."""
    if explicit := os.environ.get("PYKUEUE_HELM"):
        return Path(explicit)
    return cache_root() / f"helm-{version()}" / "bin" / "helm"


def _ldflags(helm_version: str, go_mod: str) -> str:
    """Stamp what helm's Makefile stamps: its version, and the Kubernetes version its client-go
    speaks, which `helm template` reports as `.Capabilities.KubeVersion` and `helm lint` checks
    deprecated APIs against (v1.20 otherwise)."""
    flags = ["-s", "-w", f"-X helm.sh/helm/v3/internal/version.version={helm_version}",
             "-X helm.sh/helm/v3/internal/version.gitTreeState=clean"]
    client_go = _required("k8s.io/client-go", go_mod)
    if client_go is not None:
        major, minor = client_go.lstrip("v").split(".")[:2]
        kube_major = str(int(major) + 1)  # client-go v0.34 goes with Kubernetes 1.34
        for pkg in ("helm.sh/helm/v3/pkg/lint/rules", "helm.sh/helm/v3/pkg/chartutil"):
            flags += [f"-X {pkg}.k8sVersionMajor={kube_major}", f"-X {pkg}.k8sVersionMinor={minor}"]
    return " ".join(flags)


def ensure(log=sys.stderr) -> Path:
    """Return helm's path, building it first when it is missing (under a lock, so concurrent
    callers build once)."""
    target = path()
    if os.access(target, os.X_OK):
        return target
    if os.environ.get("PYKUEUE_HELM"):
        raise BuildError(f"PYKUEUE_HELM={target} is not an executable")
    go_mod = _go_mod()
    if shutil.which("go") is None:
        raise BuildError(f"building helm needs Go {MIN_GO[0]}.{MIN_GO[1]} or newer on PATH "
                         f"(https://go.dev/doc/install); missing: {target}")
    go = _go()  # the same minimum version check as the cluster binaries
    helm_version = version()
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent.parent / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.access(target, os.X_OK):  # another caller built it while we waited
            return target
        print(f"pykueue: building helm ({MODULE} {helm_version}) into {target.parent}", file=log, flush=True)
        started = time.monotonic()
        env = dict(os.environ, CGO_ENABLED="0", GOFLAGS="-mod=readonly -buildvcs=false")
        logfile = target.parent.parent / "build-helm.log"
        with tempfile.TemporaryDirectory(dir=target.parent.parent, prefix=".build-") as tmp:
            cmd = [go, "build", "-trimpath", "-ldflags", _ldflags(helm_version, go_mod), "-o", tmp + "/helm", PACKAGE]
            with open(logfile, "w") as out:
                result = subprocess.run(cmd, cwd=MODULE_DIR, env=env, stdout=out, stderr=out)
            if result.returncode != 0:
                tail = logfile.read_text().strip().splitlines()[-3:]
                raise BuildError(f"go build of {MODULE} {helm_version} failed (exit {result.returncode}); "
                                 f"full log in {logfile}: {' | '.join(tail)}")
            os.replace(Path(tmp) / "helm", target)
        print(f"pykueue: built helm in {time.monotonic() - started:.0f} s", file=log, flush=True)
    return target


def main() -> int:
    """`python -m pykueue.devcluster.helm`: build or reuse, print the path."""
    return report(ensure)


if __name__ == "__main__":
    raise SystemExit(main())
