"""What every tool built through a Go wrapper module under ``hack/k8s/`` with the CRDs of its release
shares: one build at a time per cache directory, ``go`` run in the wrapper module with its output kept
in a log, and the CRDs copied from the module's own source next to the binary.

KubeRay's operator (``kuberay.py``) and upstream Kueue's manager (``upstream_kueue.py``) are each built
this way into a cache directory of their own, ``<name>-<version>/``: ``bin/<binary>`` and ``crds/``.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from pykueue.devcluster.binaries import MODULES_DIR, BuildError, GoTool, _go, cache_root, pinned_version


@dataclass(frozen=True, slots=True)
class Wrapped:
    """One binary built from a Go module through ``hack/k8s/<wrapper>/``, with the CRDs its release
    carries under ``crd_dir`` (``crd_names``, or every ``*.yaml`` there when empty)."""

    wrapper: str
    module: str
    package: str
    binary: str
    title: str
    crd_dir: tuple[str, ...]
    crd_names: tuple[str, ...] = ()

    @property
    def module_dir(self) -> Path:
        return MODULES_DIR / self.wrapper

    def version(self) -> str:
        """The release the wrapper's go.mod pins."""
        if not (self.module_dir / "go.mod").is_file():
            raise BuildError(f"{self.title} is missing and its Go wrapper module ({self.module_dir}) is only in a "
                             "clone of the pykueue repository")
        return pinned_version(GoTool(self.wrapper, self.module, ((self.binary, self.package),)))

    def home(self) -> Path:
        return cache_root() / f"{self.wrapper}-{self.version()}"

    def missing(self, directory: Path) -> list[str]:
        out = [] if os.access(directory / "bin" / self.binary, os.X_OK) else [self.binary]
        if self.crd_names:
            return out + [f"crds/{name}" for name in self.crd_names if not (directory / "crds" / name).is_file()]
        return out + ([] if any((directory / "crds").glob("*.yaml")) else ["crds/"])

    def ensure(self, log: TextIO) -> Path:
        """The build's directory, building the binary and copying the CRDs first when they are missing
        (under a lock, so concurrent callers build once)."""
        target = self.home()
        if not self.missing(target):
            return target
        go = _go()
        target.mkdir(parents=True, exist_ok=True)
        with open(target / ".build.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if self.missing(target):  # another caller may have built it while we waited
                self._build(go, target, self.version(), log)
        return target

    def _run(self, go: str, args: list[str], logfile: Path, what: str) -> str:
        """``go ARGS`` in the wrapper module; its stderr goes to the log, its stdout is returned."""
        env = dict(os.environ, CGO_ENABLED="0", GOFLAGS="-mod=readonly -buildvcs=false")
        with open(logfile, "a") as out:
            result = subprocess.run([go, *args], cwd=self.module_dir, env=env, stdout=subprocess.PIPE, stderr=out,
                                    text=True)
        if result.returncode != 0:
            tail = logfile.read_text().strip().splitlines()[-3:]
            raise BuildError(f"{what} of {self.package} failed (exit {result.returncode}); full log in {logfile}: "
                             f"{' | '.join(tail)}")
        return result.stdout

    def _build(self, go: str, target: Path, pinned: str, log: TextIO) -> None:
        logfile = target / "build.log"
        logfile.write_text("")
        print(f"pykueue: building {self.title} ({self.package} {pinned}) into {target}", file=log, flush=True)
        started = time.monotonic()
        with tempfile.TemporaryDirectory(dir=target, prefix=".build-") as tmp:
            self._run(go, ["build", "-trimpath", "-ldflags", "-s -w", "-o", f"{tmp}/{self.binary}", self.package],
                      logfile, "go build")
            # the module's source, which the build just fetched, carries the CRDs of the same release
            found = self._run(go, ["mod", "download", "-json", f"{self.module}@{pinned}"], logfile, "go mod download")
            source = Path(json.loads(found)["Dir"]).joinpath(*self.crd_dir)
            crds = [source / name for name in self.crd_names] or sorted(source.glob("*.yaml"))
            absent = [crd.name for crd in crds if not crd.is_file()] or ([] if crds else ["any CRD"])
            if absent:
                raise BuildError(f"{self.module} {pinned} has no {', '.join(absent)} in {source}")
            (target / "crds").mkdir(exist_ok=True)
            for crd in crds:
                shutil.copyfile(crd, target / "crds" / crd.name)
            (target / "bin").mkdir(exist_ok=True)
            os.replace(Path(tmp) / self.binary, target / "bin" / self.binary)
        print(f"pykueue: built {self.title} in {time.monotonic() - started:.0f} s", file=log, flush=True)
