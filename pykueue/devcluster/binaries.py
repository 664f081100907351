"""The Kubernetes binaries the test clusters run, built from pinned Go modules into a shared cache.

No registry ships kube-apiserver, etcd or kwok as packages, so each tool is built from its Go module
through a small wrapper module in `hack/k8s/<tool>/` (go.mod and go.sum committed, so the build is
reproducible). The binaries land in a cache outside the clone, named for the pinned versions, so a
second run, another clone and CI reuse them; a build happens only for binaries that are missing.
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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
MODULES_DIR = REPO_ROOT / "hack" / "k8s"
MIN_GO = (1, 24)


class BuildError(RuntimeError):
    """The binaries are missing and cannot be built here; the message says what to install or read."""


@dataclass(frozen=True, slots=True)
class GoTool:
    """One wrapper module and the commands it builds."""

    module_dir: str
    module: str
    packages: tuple[tuple[str, str], ...]  # (binary name, Go package path)


TOOLS = (
    GoTool(
        "kubernetes",
        "k8s.io/kubernetes",
        tuple(
            (name, f"k8s.io/kubernetes/cmd/{name}")
            for name in ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl",
                         "kubelet", "kube-proxy")
        ),
    ),
    GoTool("etcd", "go.etcd.io/etcd/server/v3", (("etcd", "go.etcd.io/etcd/server/v3"),)),
    GoTool("kwok", "sigs.k8s.io/kwok", (("kwok", "sigs.k8s.io/kwok/cmd/kwok"),)),
)
# The real node's (tier 3): built only when a tier 3 cluster asks for them.
NODE_BINARIES = ("kubelet", "kube-proxy")
BINARIES = tuple(name for tool in TOOLS for name, _ in tool.packages if name not in NODE_BINARIES)


def pinned_version(tool: GoTool) -> str:
    """The version of `tool.module` that its wrapper go.mod requires."""
    text = (MODULES_DIR / tool.module_dir / "go.mod").read_text()
    match = re.search(rf"^\s*(?:require\s+)?{re.escape(tool.module)} (v\S+)", text, re.MULTILINE)
    if match is None:
        raise BuildError(f"{MODULES_DIR / tool.module_dir / 'go.mod'} does not require {tool.module}")
    return match.group(1)


def versions() -> dict[str, str]:
    """Pinned versions by wrapper name: kubernetes, etcd, kwok."""
    return {tool.module_dir: pinned_version(tool) for tool in TOOLS}


def cache_root() -> Path:
    """Where built binaries are kept: $PYKUEUE_CACHE_DIR, else the user's cache directory."""
    if explicit := os.environ.get("PYKUEUE_CACHE_DIR"):
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pykueue"


def bin_dir() -> Path:
    """The directory for this set of pinned versions ($PYKUEUE_K8S_BIN overrides it)."""
    if explicit := os.environ.get("PYKUEUE_K8S_BIN"):
        return Path(explicit)
    v = versions()
    return cache_root() / f"k8s-{v['kubernetes']}-etcd-{v['etcd']}-kwok-{v['kwok']}" / "bin"


def missing(directory: Path | None = None, names: tuple[str, ...] = BINARIES) -> list[str]:
    """Binaries (of ``names``) not yet in the cache."""
    directory = directory or bin_dir()
    return [name for name in names if not os.access(directory / name, os.X_OK)]


def _kubernetes_ldflags(version: str) -> str:
    """Stamp the version the way Kubernetes' release build does, so the servers report it."""
    major, minor = version.lstrip("v").split(".")[:2]
    flags = ["-s", "-w"]
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [
            f"-X {pkg}.gitVersion={version}",
            f"-X {pkg}.gitMajor={major}",
            f"-X {pkg}.gitMinor={minor}",
            f"-X {pkg}.gitTreeState=clean",
        ]
    return " ".join(flags)


def _go() -> str:
    go = shutil.which("go")
    if go is None:
        raise BuildError(
            "building the test cluster's Kubernetes binaries needs Go "
            f"{MIN_GO[0]}.{MIN_GO[1]} or newer on PATH (https://go.dev/doc/install); "
            f"missing from {bin_dir()}: {', '.join(missing(names=BINARIES + NODE_BINARIES))}"
        )
    out = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True).stdout.strip()
    match = re.match(r"go(\d+)\.(\d+)", out)
    if match and (int(match.group(1)), int(match.group(2))) < MIN_GO:
        raise BuildError(
            f"building the test cluster's Kubernetes binaries needs Go {MIN_GO[0]}.{MIN_GO[1]} or newer; "
            f"{go} is {out}"
        )
    return go


def ensure(log=sys.stderr, *, node: bool = False) -> Path:
    """Return the binary directory, building whatever is missing first (under a lock, so that
    concurrent callers build once); with ``node``, the real node's binaries too."""
    target = bin_dir()
    names = BINARIES + NODE_BINARIES if node else BINARIES
    if not missing(target, names):
        return target
    if os.environ.get("PYKUEUE_K8S_BIN"):
        raise BuildError(f"PYKUEUE_K8S_BIN={target} lacks {', '.join(missing(target, names))}")
    if not MODULES_DIR.is_dir():
        raise BuildError(
            f"the Kubernetes binaries are missing from {target} and the Go wrapper modules that build "
            f"them ({MODULES_DIR}) are only in a clone of the pykueue repository"
        )
    go = _go()
    target.mkdir(parents=True, exist_ok=True)
    with open(target.parent / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for tool in TOOLS:
            wanted = [(name, pkg) for name, pkg in tool.packages if name in missing(target, names)]
            if wanted:
                _build(go, tool, wanted, target, log)
    return target


def _go_binary_name(pkg: str) -> str:
    """The file name `go build -o DIR/` gives a main package: its last path element, or the one
    before a major-version suffix (go.etcd.io/etcd/server/v3 -> server)."""
    parts = pkg.split("/")
    return parts[-2] if re.fullmatch(r"v\d+", parts[-1]) else parts[-1]


def _build(go: str, tool: GoTool, wanted: list[tuple[str, str]], target: Path, log) -> None:
    version = pinned_version(tool)
    ldflags = _kubernetes_ldflags(version) if tool.module_dir == "kubernetes" else "-s -w"
    names = ", ".join(name for name, _ in wanted)
    print(f"pykueue: building {names} ({tool.module} {version}) into {target}", file=log, flush=True)
    started = time.monotonic()
    env = dict(os.environ, CGO_ENABLED="0", GOFLAGS="-mod=readonly -buildvcs=false")
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".build-") as tmp:
        logfile = target.parent / f"build-{tool.module_dir}.log"
        cmd = [go, "build", "-trimpath", "-ldflags", ldflags, "-o", tmp + "/", *(pkg for _, pkg in wanted)]
        with open(logfile, "w") as out:
            result = subprocess.run(cmd, cwd=MODULES_DIR / tool.module_dir, env=env, stdout=out, stderr=out)
        if result.returncode != 0:
            tail = logfile.read_text().strip().splitlines()[-3:]
            raise BuildError(
                f"go build of {tool.module} {version} failed (exit {result.returncode}); "
                f"full log in {logfile}: {' | '.join(tail)}"
            )
        for name, pkg in wanted:
            os.replace(Path(tmp) / _go_binary_name(pkg), target / name)
    print(f"pykueue: built {names} in {time.monotonic() - started:.0f} s", file=log, flush=True)


def report(build: Callable[[], Path]) -> int:
    """A build's command line: build or reuse, print where; exit 2 with one line when it cannot."""
    try:
        print(build())
    except BuildError as exc:
        print(f"pykueue: error: {exc}", file=sys.stderr)
        return 2
    return 0


def main(argv: list[str] | None = None) -> int:
    """`python -m pykueue.devcluster.binaries [--node]`: build or reuse, print the directory; with
    ``--node``, the real node's kubelet and kube-proxy too (tier 3)."""
    node = "--node" in (sys.argv[1:] if argv is None else argv)
    return report(lambda: ensure(node=node))


if __name__ == "__main__":
    raise SystemExit(main())
