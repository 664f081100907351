"""The controller's image built from Debian's packages, for clusters that cannot pull from a registry.

What the Dockerfile builds, without a registry base image: a Debian root filesystem made by
``mmdebstrap`` (python3 and its venv module), the package installed with pip into a virtualenv at
/opt/pykueue (bytecode compiled there: the pod's root filesystem is read-only), run as uid 65532 with
``pykueue`` as entrypoint; written as an OCI archive (``pykueue.devcluster.oci``). The package goes in
as the wheel ``pip wheel`` builds here, whose build hook compiles the engine when this machine has a C
compiler and Python's headers (this machine is Debian bookworm like the tree, so the extension modules
fit its Python 3.11); the tree itself holds no compiler, as the Dockerfile's final stage holds none.
Three steps are cached outside the clone, each under a key of what goes into it, as a Dockerfile's
layers are: the Debian tree (its package list), the tree with the package's dependencies installed in
the virtualenv (pyproject.toml's ``dependencies``: the slow, networked pip step), and the image (the
package's sources). A change to the sources copies the second and installs only the wheel into it.
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
from collections.abc import Callable
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


def dependencies() -> list[str]:
    """pyproject.toml's run-time requirements: what the dependency layer installs."""
    import tomllib

    return list(tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["dependencies"])


def deps_key() -> str:
    """The dependency layer's key: the Debian tree's and the requirements."""
    return _digest(base_key().encode(), VENV.encode(), "\n".join(dependencies()).encode())


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


def _layer(target: Path, made: Path, message: str, log, make: Callable[[Path, Path], None]) -> Path:
    """A cached tree ``target/rootfs``: returned when ``made`` (a path inside it) exists; otherwise
    ``make(partial, logfile)`` builds it in ``rootfs.partial``, renamed into place only once whole."""
    if made.exists():
        return target / "rootfs"
    target.mkdir(parents=True, exist_ok=True)
    logfile = target / "build.log"
    logfile.write_text("")
    print(f"pykueue: {message} in {target}", file=log, flush=True)
    partial = target / "rootfs.partial"
    shutil.rmtree(partial, ignore_errors=True)
    make(partial, logfile)
    os.replace(partial, target / "rootfs")
    return target / "rootfs"


def _base(log) -> Path:
    """The Debian tree (cached): mmdebstrap as root, the essential variant plus PACKAGES."""
    def make(partial: Path, logfile: Path) -> None:
        _run(["mmdebstrap", "--mode=root", "--variant=essential", f"--include={','.join(PACKAGES)}",
              "--dpkgopt=path-exclude=/usr/share/{doc,man,info,locale}/*", SUITE, str(partial), MIRROR],
             logfile, "mmdebstrap")

    target = _base_dir()
    return _layer(target, target / "rootfs" / "usr" / "bin" / "python3",
                  f"making the image's Debian tree ({SUITE}: {', '.join(PACKAGES)})", log, make)


def _pip_env() -> tuple[list[str], Path | None]:
    """The environment pip runs with in the chroot, and the host's trust store for the build only (an
    egress proxy's CA may be in it; the image keeps Debian's own)."""
    host_ca = Path(os.environ.get("PIP_CERT") or os.environ.get("SSL_CERT_FILE")
                   or "/etc/ssl/certs/ca-certificates.crt")
    found = host_ca if host_ca.is_file() else None
    env = ["env", "-i", "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "PIP_NO_CACHE_DIR=1",
           "PIP_DISABLE_PIP_VERSION_CHECK=1", "PIP_DEFAULT_TIMEOUT=180",
           *(["PIP_CERT=/src/build-ca.crt"] if found else [])]
    return env, found


def _deps(base: Path, log) -> Path:
    """The Debian tree with the virtualenv and the package's dependencies in it (cached by
    ``deps_key``): the one step that reaches PyPI, done once per requirement list."""
    def make(partial: Path, logfile: Path) -> None:
        _run(["cp", "-a", str(base), str(partial)], logfile, "copying the Debian tree")
        src = partial / "src"
        src.mkdir()
        (src / "requirements.txt").write_text("\n".join(dependencies()) + "\n")
        shutil.copy2("/etc/resolv.conf", partial / "etc" / "resolv.conf")  # pip reaches PyPI from the chroot
        env, host_ca = _pip_env()
        if host_ca is not None:
            shutil.copy2(host_ca, src / "build-ca.crt")
        _run(["chroot", str(partial), *env, "/bin/sh", "-c",
              f"set -e; python3 -m venv {VENV}; {VENV}/bin/pip install --quiet -r /src/requirements.txt"],
             logfile, "installing the dependencies into the image's virtualenv")
        shutil.rmtree(src)
        (partial / "etc" / "resolv.conf").write_text("")
        for cache in ("var/cache/apt", "var/lib/apt/lists"):
            shutil.rmtree(partial / cache, ignore_errors=True)

    target = binaries.cache_root() / f"deps-{deps_key()}"
    return _layer(target, target / "rootfs" / VENV.lstrip("/") / "bin" / "python3",
                  "installing the image's dependencies", log, make)


# What the running controller never uses and an intruder would: the shells, the package managers (dpkg
# is Essential in Debian, apt is not installed), pip in the virtualenv and the wheels venv seeds from.
# Removed from the one layer the image has, after the build's last chroot step (each ran /bin/sh).
STRIPPED = ("usr/bin/sh", "usr/bin/dash", "usr/bin/bash", "usr/bin/rbash", "usr/bin/dpkg", "usr/bin/dpkg-deb",
            "usr/bin/dpkg-divert", "usr/bin/dpkg-query", "usr/bin/dpkg-split", "usr/bin/dpkg-statoverride",
            "usr/bin/dpkg-trigger", "usr/bin/dpkg-maintscript-helper", "usr/bin/dpkg-realpath",
            "usr/bin/update-alternatives", "usr/bin/apt", "usr/bin/apt-get", "usr/share/python-wheels")
STRIPPED_GLOBS = (f"{VENV.lstrip('/')}/bin/pip*", f"{VENV.lstrip('/')}/lib/python3*/site-packages/pip",
                  f"{VENV.lstrip('/')}/lib/python3*/site-packages/pip-*")


def _strip(root: Path) -> None:
    """``STRIPPED`` out of the image's tree (a path absent already is fine; a symlink goes, not its target)."""
    paths = [root / p for p in STRIPPED] + [p for pattern in STRIPPED_GLOBS for p in root.glob(pattern)]
    for path in paths:
        if path.is_symlink() or path.is_file():
            path.unlink()
        elif path.is_dir():
            shutil.rmtree(path)


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
        base = _deps(_base(log), log)
        logfile = out.parent / "build.log"
        logfile.write_text("")
        print(f"pykueue: building the image {ref()} into {out.parent}", file=log, flush=True)
        with tempfile.TemporaryDirectory(prefix=".image-", dir=out.parent) as tmp:
            root = Path(tmp) / "rootfs"
            _run(["cp", "-a", str(base), str(root)], logfile, "copying the dependency layer")
            src = root / "src"
            src.mkdir()
            wheel = build_wheel(Path(tmp) / "wheel", logfile)
            shutil.copy2(wheel, src / wheel.name)
            env, _ = _pip_env()
            # the dependencies are in the layer: the wheel alone, no network
            _run(["chroot", str(root), *env, "/bin/sh", "-c",
                  f"set -e; {VENV}/bin/pip install --quiet --no-deps --no-index /src/{wheel.name}; "
                  f"{VENV}/bin/pip check >/dev/null; {VENV}/bin/pykueue --help >/dev/null; {VENV}/bin/pykueue --version"],
                 logfile, "installing the package into the image's virtualenv")
            shutil.rmtree(src)
            _strip(root)
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
