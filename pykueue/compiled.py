"""An optional compiled build of the engine and the simulate path with mypyc: ``python -m pykueue.compiled build|clean|status``.

The pure-Python code is the default and always works. ``build`` compiles the modules in
``COMPILED`` with mypyc (the ``compiled`` extra: ``pip install 'pykueue[compiled]'``, plus a C
compiler and Python's headers) and puts the extension modules beside their ``.py`` files in the
package this interpreter imports (an editable install's source tree, or site-packages); Python
imports an extension module before a source file of the same name, so every driver then runs the
compiled engine with nothing else changed. The C sources, object files and mypy's cache stay in a
temporary directory. ``clean`` removes the extension modules again; ``status`` says which engine an
import gets, and whether a build is stale (a source changed since: the compiled code would not be
the code in the tree, so rebuild or clean).

The build must behave exactly as the pure code: ``tests/test_compiled.py`` runs the scenarios and
the baseline generator through both and compares the bytes, and runs the unit tests of every
compiled module's layer against the compiled build.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from pykueue.devcluster.binaries import cache_root

# The modules compiled, relative to the directory that holds the package ``pykueue``.
COMPILED = (
    *[f"pykueue/engine/{name}.py" for name in (
        "cluster", "engine", "events", "fair_sharing", "flavors", "hierarchy", "host", "merging", "model", "podset_reducer",
        "quantity_text", "queue_manager", "queues", "quota", "scheduler", "selectors", "slices", "status", "timers",
        "workload",
    )],
    *[f"pykueue/engine/preemption/{name}.py" for name in ("__init__", "classical", "common", "fairsharing")],
    # The simulator's loop and its streamed result: with the engine compiled, these were most of a run.
    *[f"pykueue/sim/{name}.py" for name in (
        "entries", "event_log", "result", "result_json", "result_yaml", "simulator",
    )],
    "pykueue/perf/summary.py",
    # Reading a generator run: its manifests made, validated and converted for the engine.
    *[f"pykueue/api/{name}.py" for name in (
        "convert", "loader", "names", "priority", "timing", "validation", "workloads",
    )],
    *[f"pykueue/perf/{name}.py" for name in ("generator", "run")],
)
# mypyc's shared library for the whole group (each module's own extension is a small shim into it).
GROUP = "pykueue._compiled"
# Written beside the extension modules: the hash of the sources they were built from, mypyc's warnings.
MANIFEST = "_compiled.json"
# Builds kept in the cache (the most recent ones): each is about 4 MB.
CACHE_KEEP = 4
# The flags `mypy -p pykueue.engine` runs with (pyproject.toml's [tool.mypy]), given explicitly so a
# build from site-packages, with no pyproject.toml, type-checks the same way.
MYPY_FLAGS = ("--ignore-missing-imports", "--follow-imports=silent", "--explicit-package-bases",
              "--python-version", f"{sys.version_info.major}.{sys.version_info.minor}")


class BuildError(Exception):
    """A build that cannot run or failed, said in one line for the person who asked for it."""


class ToolchainMissing(BuildError):
    """mypyc, a C compiler or Python's headers are not there: no build is possible here."""


def source_root() -> Path:
    """The directory holding the package ``pykueue`` this interpreter imports (``pykueue`` is a
    namespace package: ``cli.py`` is never compiled, so its place is the package's)."""
    spec = importlib.util.find_spec("pykueue.cli")
    assert spec is not None and spec.origin is not None
    return Path(spec.origin).resolve().parent.parent


def ext_suffix() -> str:
    return sysconfig.get_config_var("EXT_SUFFIX") or ".so"


def source_hash(root: Path, modules: tuple[str, ...] = COMPILED, mypy_version: str | None = None) -> str:
    """One hash over the compiled modules' sources, the interpreter and mypy's version (``mypy_version``:
    the one a build recorded, where mypy need not be installed, as beside a wheel's build): a build is
    reusable exactly when this is unchanged."""
    digest = hashlib.sha256()
    digest.update(f"{sys.version}\n{ext_suffix()}\n{mypy_version or _mypy_version()}\n".encode())
    for rel in modules:
        digest.update(rel.encode() + b"\0" + (root / rel).read_bytes() + b"\0")
    return digest.hexdigest()


def _mypy_version() -> str:
    try:
        from mypy.version import __version__
    except ImportError:
        return "none"
    return __version__


def check_toolchain() -> None:
    """Raises ToolchainMissing naming what is missing: mypyc, a C compiler or Python's headers."""
    try:
        import mypyc.build  # noqa: F401
    except ImportError as e:
        raise ToolchainMissing("mypyc is not installed: pip install 'pykueue[compiled]' (it comes with mypy)") from e
    cc = (sysconfig.get_config_var("CC") or "cc").split()
    compiler = os.environ.get("CC", "").split() or cc
    if not compiler or shutil.which(compiler[0]) is None:
        raise ToolchainMissing(f"no C compiler: {compiler[0] if compiler else 'cc'} is not on PATH "
                         "(install gcc or clang, e.g. apt-get install build-essential)")
    header = Path(sysconfig.get_paths()["include"]) / "Python.h"
    if not header.exists():
        raise ToolchainMissing(f"Python's C headers are missing ({header}): install python3-dev or its equivalent")


def compile_into(root: Path, out: Path, modules: tuple[str, ...] = COMPILED) -> list[str]:
    """Compiles ``modules`` (paths under ``root``) with mypyc and writes the extension modules into
    ``out`` at the same relative places, with the manifest. Returns their relative paths. The work
    happens in a child process in a temporary directory, so nothing lands in the current directory
    and setuptools' output stays out of the caller's."""
    check_toolchain()
    with tempfile.TemporaryDirectory(prefix="pykueue-mypyc-") as work:
        lib = Path(work) / "lib"
        script = Path(work) / "build.py"
        script.write_text(_BUILD_SCRIPT)
        env = dict(os.environ, MYPYPATH=str(root))
        args = [sys.executable, str(script), json.dumps({
            "files": [str(root / rel) for rel in modules], "flags": list(MYPY_FLAGS), "group": GROUP,
            "work": work, "lib": str(lib)})]
        done = subprocess.run(args, cwd=work, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
            raise BuildError(f"mypyc failed (exit {done.returncode}):\n{tail}")
        # e.g. "Treating generator comprehension as list": mypyc builds a generator expression
        # eagerly, which changes what the code does wherever the laziness mattered.
        warnings = [line.replace(str(root) + os.sep, "") for line in (done.stdout + done.stderr).splitlines()
                    if ": warning:" in line]
        built = sorted(str(p.relative_to(lib)) for p in lib.rglob(f"*{ext_suffix()}"))
        expected = _extensions(modules)
        if set(built) != expected:
            raise BuildError(f"mypyc built {built}, expected {sorted(expected)}")
        for rel in built:
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            staged = out / (rel + ".new")
            shutil.copy2(lib / rel, staged)
            os.replace(staged, out / rel)  # a running process keeps the file it mapped
        for stale in installed(out):  # a module an earlier build compiled and this one does not
            if str(stale.relative_to(out)) not in built:
                stale.unlink()
    manifest = {"hash": source_hash(root, modules), "mypy": _mypy_version(), "modules": list(modules),
                "extensions": built, "warnings": warnings}
    (out / "pykueue" / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return built


def _extensions(modules: tuple[str, ...]) -> set[str]:
    """What a build of ``modules`` consists of: ``pykueue/engine/x.py`` -> ``pykueue/engine/x<EXT_SUFFIX>``
    (a package's ``__init__`` too), and the group's shared library."""
    return {rel.removesuffix(".py") + ext_suffix() for rel in (*modules, GROUP.replace(".", "/") + "__mypyc.py")}


# Run in the child: mypycify the files, then setuptools' build_ext into `lib`, temporaries in `work`.
_BUILD_SCRIPT = """\
import json, sys
from setuptools import Distribution
from mypyc.build import mypycify
cfg = json.loads(sys.argv[1])
flags = cfg["flags"] + ["--cache-dir", cfg["work"] + "/mypy-cache"]
exts = mypycify(flags + cfg["files"], group_name=cfg["group"], target_dir=cfg["work"] + "/c")
dist = Distribution({"name": "pykueue-compiled", "ext_modules": exts})
cmd = dist.get_command_obj("build_ext")
cmd.build_lib, cmd.build_temp, cmd.inplace = cfg["lib"], cfg["work"] + "/temp", False
dist.run_command("build_ext")
"""


def cached_build(root: Path | None = None) -> Path:
    """A build of ``root``'s sources (default: the package in use) kept under
    ``<cache>/compiled/<hash>`` (``$PYKUEUE_CACHE_DIR``, else ``~/.cache/pykueue``, as the
    Kubernetes binaries), made when missing, one build at a time; returns the directory holding its
    ``pykueue/`` extension modules. The tests and ``bench/cli_speed.py --compiled`` share it."""
    root = root or source_root()
    digest = source_hash(root)
    base = cache_root() / "compiled"
    base.mkdir(parents=True, exist_ok=True)
    where = base / digest[:24]
    with open(base / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a run that waited here finds the build made
        if not (where / "pykueue" / MANIFEST).exists():
            staging = base / f".staging-{os.getpid()}"
            shutil.rmtree(staging, ignore_errors=True)
            try:
                compile_into(root, staging)
                shutil.rmtree(where, ignore_errors=True)  # a build cut short
                os.replace(staging, where)
            finally:
                shutil.rmtree(staging, ignore_errors=True)
        os.utime(where)  # used now: the last to be pruned
        prune(base)
    return where


def prune(base: Path, keep: int = CACHE_KEEP) -> None:
    """Removes all but the ``keep`` most recently used builds under ``base``."""
    builds = sorted((d for d in base.iterdir() if d.is_dir() and not d.name.startswith(".")),
                    key=lambda d: d.stat().st_mtime)
    for old in builds[:-keep]:
        shutil.rmtree(old, ignore_errors=True)


def copy_package(root: Path, dest: Path, build: Path | None) -> Path:
    """``root``'s package sources copied under ``dest`` (without any build in them), plus the
    extension modules of ``build`` when given: a pure or a compiled tree to run from (cwd ``dest``)."""
    shutil.copytree(root / "pykueue", dest / "pykueue",
                    ignore=shutil.ignore_patterns("__pycache__", f"*{ext_suffix()}", MANIFEST))
    if build is not None:
        shutil.copytree(build / "pykueue", dest / "pykueue", dirs_exist_ok=True)
    return dest


def installed(root: Path) -> list[Path]:
    """The extension modules of a build present in the package under ``root``: every one there (the
    package has no others), so a build of an earlier, longer ``COMPILED`` leaves none behind."""
    return sorted((root / "pykueue").rglob(f"*{ext_suffix()}"))


def clean(root: Path) -> list[Path]:
    removed = installed(root)
    manifest = root / "pykueue" / MANIFEST
    for path in [*removed, manifest]:
        path.unlink(missing_ok=True)
    return removed


def status(root: Path) -> tuple[str, bool]:
    """A sentence on the engine an import gets here, and whether it is compiled and current."""
    spec = importlib.util.find_spec("pykueue.engine.engine")
    origin = spec.origin if spec is not None else None
    present = installed(root)
    if not present:
        return f"pure Python (no compiled build under {root / 'pykueue'}): {origin}", False
    manifest = root / "pykueue" / MANIFEST
    try:
        recorded = json.loads(manifest.read_text())
        built, mypy_version = recorded["hash"], recorded.get("mypy")
    except (OSError, ValueError, KeyError, TypeError):
        built, mypy_version = None, None
    if built != source_hash(root, mypy_version=mypy_version):
        return (f"STALE compiled build under {root / 'pykueue'}: the sources (or the interpreter or mypy) changed "
                "since it was built; run `python -m pykueue.compiled build` again or `clean`"), False
    if origin is None or not origin.endswith(ext_suffix()):
        return f"compiled build present but not imported: pykueue.engine.engine is {origin}", False
    return f"compiled ({len(present)} extension modules): {origin}", True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pykueue.compiled", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    build_parser = sub.add_parser("build", help="compile the engine into the package this interpreter imports")
    build_parser.add_argument("--into", type=Path, help="write the extension modules under this directory "
                              "(as DIR/pykueue/...) instead of into the package")
    sub.add_parser("clean", help="remove a compiled build from the package")
    sub.add_parser("status", help="say whether the engine an import gets is compiled (exit 0) or not (exit 1)")
    args = parser.parse_args(argv)
    root = source_root()
    if args.command == "build":
        out = args.into if args.into is not None else root
        try:
            check_toolchain()
            print(f"compiling {len(COMPILED)} modules with mypyc (about a minute) ...", file=sys.stderr)
            built = compile_into(root, out)
        except BuildError as e:
            print(f"pykueue.compiled: {e}", file=sys.stderr)
            return 1
        except OSError as e:  # e.g. a package in a site-packages this user cannot write
            print(f"pykueue.compiled: cannot write the build: {e}", file=sys.stderr)
            return 1
        for line in json.loads((out / "pykueue" / MANIFEST).read_text())["warnings"]:
            print(line, file=sys.stderr)
        print(f"built {len(built)} extension modules under {out / 'pykueue'}")
        return 0
    if args.command == "clean":
        try:
            removed = clean(root)
        except OSError as e:
            print(f"pykueue.compiled: cannot remove the build: {e}", file=sys.stderr)
            return 1
        print(f"removed {len(removed)} extension modules" if removed else "no compiled build to remove")
        return 0
    message, compiled = status(root)
    print(message)
    return 0 if compiled else 1


if __name__ == "__main__":
    sys.exit(main())
