"""The controller's image built from Debian's packages, for clusters that cannot pull from a registry.

What the Dockerfile builds, without a registry base image: a Debian root filesystem made by
``mmdebstrap`` (python3 and its venv module), the package installed with pip into a virtualenv at
/opt/pykueue (bytecode compiled there: the pod's root filesystem is read-only), run as uid 65532 with
``pykueue`` as entrypoint; written as an OCI archive (``pykueue.devcluster.oci``). The package goes in
as the wheel ``pip wheel`` builds here, whose build hook compiles the engine when this machine has a C
compiler and Python's headers (this machine is Debian bookworm like the tree, so the extension modules
fit its Python 3.11); the tree itself holds no compiler, as the Dockerfile's final stage holds none. Both steps are
cached outside the clone: the Debian tree under a key of its package list, the image under a key of
the package's sources, so a change to them builds a new image and nothing else does.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pykueue.devcluster import binaries, oci

REPO_ROOT = binaries.REPO_ROOT
SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
PACKAGES = ("python3", "python3-venv", "ca-certificates")
VENV = "/opt/pykueue"
USER = "65532:65532"
NAME = "pykueue"
PAUSE_REF = "pykueue.dev/pause:catatonit"  # the node's sandbox image: Debian's static catatonit, run as -P


class ImageError(binaries.BuildError):
    """The image cannot be built here; the message says what failed and where its log is."""


def _digest(*parts: bytes) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(len(part).to_bytes(8, "big") + part)
    return digest.hexdigest()[:16]


def base_key() -> str:
    """The Debian tree's key: suite, mirror and package list."""
    return _digest(SUITE.encode(), MIRROR.encode(), " ".join(PACKAGES).encode())


def source_files() -> list[Path]:
    """What the image is made of: the package's sources, its metadata and this recipe."""
    files = [REPO_ROOT / "pyproject.toml", REPO_ROOT / "setup.py", Path(__file__), Path(oci.__file__)]
    files += sorted(p for p in (REPO_ROOT / "pykueue").rglob("*")
                    if p.is_file() and "__pycache__" not in p.parts and p.suffix in (".py", ".yaml", ".json", ".typed"))
    return files


def image_key() -> str:
    """The image's key: the Debian tree's and every source file's path and content."""
    parts = [base_key().encode()]
    for path in source_files():
        parts += [str(path.relative_to(REPO_ROOT)).encode(), path.read_bytes()]
    return _digest(*parts)


def build_wheel(dest: Path, logfile: Path) -> Path:
    """The wheel pip builds from this tree's package files (copied first: pip builds in place, and
    the clone stays as it was), with setup.py's hook compiling the engine where it can."""
    tree = dest / "tree"
    tree.mkdir(parents=True)
    for name in ("pyproject.toml", "setup.py"):
        shutil.copy2(REPO_ROOT / name, tree / name)
    shutil.copytree(REPO_ROOT / "pykueue", tree / "pykueue",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.c", "_compiled.json"))
    _run([sys.executable, "-m", "pip", "wheel", str(tree), "--no-deps", "-v", "-w", str(dest / "dist")],
         logfile, "building the wheel")
    (wheel,) = (dest / "dist").glob("pykueue-*.whl")
    return wheel


def version() -> str:
    """pyproject.toml's version: the chart's appVersion, so its default image tag."""
    import tomllib

    return tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["version"]


def ref() -> str:
    """The image's name, as the chart's default values name it (repository pykueue, tag appVersion)."""
    return f"{NAME}:{version()}"


def archive_path() -> Path:
    return binaries.cache_root() / f"image-{image_key()}" / "pykueue.tar"


def pause_archive() -> Path:
    """The sandbox image every pod's namespaces are held by: Debian's catatonit (static) as ``-P``."""
    source = Path("/usr/bin/catatonit")
    if not source.exists():
        raise ImageError("the node's sandbox image needs Debian's catatonit (apt-get install catatonit)")
    out = binaries.cache_root() / f"pause-{_digest(source.read_bytes())}" / "pause.tar"
    if not out.exists():
        with tempfile.TemporaryDirectory(prefix=".pause-", dir=binaries.cache_root()) as tmp:
            shutil.copy2(source, Path(tmp) / "catatonit")
            oci.write_archive(Path(tmp), oci.ImageConfig(entrypoint=("/catatonit", "-P")), PAUSE_REF, out)
    return out


def _run(cmd: list[str], log: Path, what: str) -> None:
    with open(log, "a") as out:
        out.write(f"$ {' '.join(cmd)}\n")
        out.flush()
        result = subprocess.run(cmd, stdout=out, stderr=out, stdin=subprocess.DEVNULL)
    if result.returncode != 0:
        tail = log.read_text(errors="replace").strip().splitlines()[-3:]
        raise ImageError(f"{what} failed (exit {result.returncode}); full log in {log}: {' | '.join(tail)}")


def _base_dir() -> Path:
    return binaries.cache_root() / f"debian-{SUITE}-{base_key()}"


def _base_made(target: Path) -> bool:
    return (target / "rootfs" / "usr" / "bin" / "python3").exists()


def _check_can_build() -> None:
    """Before anything is made: root (mmdebstrap's root mode, chroot for pip), and mmdebstrap when the
    Debian tree is not cached yet. Without them the build would fail halfway with a tool's own words."""
    if os.geteuid() != 0:
        raise ImageError(f"building the image needs root (mmdebstrap in root mode, chroot); nothing is cached "
                         f"at {archive_path()} yet")
    if not _base_made(_base_dir()) and shutil.which("mmdebstrap") is None:
        raise ImageError("building the image needs Debian's mmdebstrap, not found on PATH "
                         "(apt-get install mmdebstrap)")


def _base(log) -> Path:
    """The Debian tree (cached): mmdebstrap as root, the essential variant plus PACKAGES."""
    target = _base_dir()
    if _base_made(target):
        return target / "rootfs"
    target.mkdir(parents=True, exist_ok=True)
    logfile = target / "build.log"
    logfile.write_text("")
    print(f"pykueue: making the image's Debian tree ({SUITE}: {', '.join(PACKAGES)}) in {target}", file=log, flush=True)
    partial = target / "rootfs.partial"
    shutil.rmtree(partial, ignore_errors=True)
    _run(["mmdebstrap", "--mode=root", "--variant=essential", f"--include={','.join(PACKAGES)}",
          "--dpkgopt=path-exclude=/usr/share/{doc,man,info,locale}/*", SUITE, str(partial), MIRROR],
         logfile, "mmdebstrap")
    os.replace(partial, target / "rootfs")
    return target / "rootfs"


def ensure(log=sys.stderr) -> Path:
    """The image's OCI archive, built first when missing (under a lock: concurrent callers build once)."""
    out = archive_path()
    if out.exists():
        return out
    _check_can_build()
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.parent / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if out.exists():
            return out
        started = time.monotonic()
        base = _base(log)
        logfile = out.parent / "build.log"
        logfile.write_text("")
        print(f"pykueue: building the image {ref()} into {out.parent}", file=log, flush=True)
        with tempfile.TemporaryDirectory(prefix=".image-", dir=out.parent) as tmp:
            root = Path(tmp) / "rootfs"
            _run(["cp", "-a", str(base), str(root)], logfile, "copying the Debian tree")
            src = root / "src"
            src.mkdir()
            wheel = build_wheel(Path(tmp) / "wheel", logfile)
            shutil.copy2(wheel, src / wheel.name)
            shutil.copy2("/etc/resolv.conf", root / "etc" / "resolv.conf")  # pip reaches PyPI from the chroot
            # This machine's trust store for the build only (an egress proxy's CA may be in it); the
            # image keeps Debian's own.
            host_ca = Path(os.environ.get("PIP_CERT") or os.environ.get("SSL_CERT_FILE")
                           or "/etc/ssl/certs/ca-certificates.crt")
            if host_ca.is_file():
                shutil.copy2(host_ca, src / "build-ca.crt")
            env = ["env", "-i", "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "PIP_NO_CACHE_DIR=1",
                   "PIP_DISABLE_PIP_VERSION_CHECK=1", "PIP_DEFAULT_TIMEOUT=180",
                   *(["PIP_CERT=/src/build-ca.crt"] if host_ca.is_file() else [])]
            _run(["chroot", str(root), *env, "/bin/sh", "-c",
                  f"set -e; python3 -m venv {VENV}; {VENV}/bin/pip install --quiet /src/{wheel.name}; "
                  f"{VENV}/bin/pykueue --help >/dev/null; {VENV}/bin/pykueue --version"],
                 logfile, "installing the package into the image's virtualenv")
            shutil.rmtree(src)
            (root / "etc" / "resolv.conf").write_text("")  # the runtime mounts the pod's own
            for cache in ("var/cache/apt", "var/lib/apt/lists"):
                shutil.rmtree(root / cache, ignore_errors=True)
            config = oci.ImageConfig(
                entrypoint=("pykueue",), cmd=("controller",), user=USER, workdir="/",
                env=(f"PATH={VENV}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                     "PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1", "HOME=/tmp"),
                labels={"org.opencontainers.image.title": "pykueue",
                        "org.opencontainers.image.version": version()},
            )
            oci.write_archive(root, config, ref(), out)
        print(f"pykueue: built {ref()} in {time.monotonic() - started:.0f} s: {out}", file=log, flush=True)
    _prune(keep=KEEP_IMAGES)
    return out


KEEP_IMAGES = 3  # each is about 330 MB; older keys are of sources no clone has any more, most likely


def _prune(keep: int) -> None:
    """Remove all but the ``keep`` newest built images (another clone's newest may go too: it is
    then built again, never used half-removed, as each is one archive renamed into place)."""
    built = sorted((d for d in binaries.cache_root().glob("image-*") if (d / "pykueue.tar").exists()),
                   key=lambda d: (d / "pykueue.tar").stat().st_mtime, reverse=True)
    for old in built[keep:]:
        shutil.rmtree(old, ignore_errors=True)


def main() -> int:
    """`python -m pykueue.devcluster.image`, the same as `pykueue image build`."""
    return binaries.report(ensure)


if __name__ == "__main__":
    raise SystemExit(main())
