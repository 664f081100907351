"""A wheel built from a checkout carries the compiled engine (setup.py's build hook), installs into a
fresh virtualenv as a user's ``pip install .`` does, and runs the same simulation byte for byte; where
the compiled build is refused the wheel is pure Python and one line says why."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "pykueue" / "examples" / "demo.yaml"  # what `pykueue demo` plays


def _checkout(dest: Path) -> Path:
    """The files git tracks (and setup.py), as a fresh clone has them: no build output, no venv."""
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    for rel in {*files, "setup.py", "pyproject.toml"}:
        source = ROOT / rel
        if source.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / rel)
    return dest


def _wheel(tree: Path, out: Path, env: dict[str, str] | None = None) -> tuple[Path, str]:
    """The wheel pip builds from ``tree`` (in an isolated build environment, as a user's), and the
    build's output (pip shows the backend's lines only with -v)."""
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", ".", "--no-deps", "-v", "-w", str(out)], cwd=tree,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=1800,
                          env={**os.environ, **(env or {})})
    assert done.returncode == 0, done.stdout[-5000:]
    (wheel,) = out.glob("pykueue-*.whl")
    return wheel, done.stdout


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _checkout(tmp_path_factory.mktemp("checkout"))


def test_a_wheel_carries_the_compiled_engine_and_simulates_as_the_pure_one(checkout: Path, tmp_path: Path) -> None:
    wheel, stderr = _wheel(checkout, tmp_path / "dist")
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    names = zipfile.ZipFile(wheel).namelist()
    assert f"pykueue/engine/engine{suffix}" in names and "pykueue/_compiled.json" in names, names[:20]
    assert "pykueue/engine/engine.py" in names  # the sources ship beside it, as mypyc's wheels do
    assert not wheel.name.endswith("-none-any.whl"), wheel.name  # tagged for this interpreter and platform
    assert "pykueue: compiled engine built" in stderr, stderr[-2000:]
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    done = subprocess.run([str(python), "-m", "pip", "install", "-q", str(wheel)], capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    version = subprocess.run([str(venv / "bin" / "pykueue"), "--version"], capture_output=True, text=True, cwd=tmp_path)
    assert version.stdout.endswith("(compiled engine)\n"), version.stdout + version.stderr
    status = subprocess.run([str(python), "-m", "pykueue.compiled", "status"], capture_output=True, text=True,
                            cwd=tmp_path)
    assert status.returncode == 0 and status.stdout.startswith("compiled ("), status.stdout + status.stderr
    args = ["simulate", str(SCENARIO), "-o", "json"]
    compiled = subprocess.run([str(venv / "bin" / "pykueue"), *args], capture_output=True, text=True, cwd=tmp_path)
    pure = subprocess.run([sys.executable, "-m", "pykueue.cli", *args], capture_output=True, text=True, cwd=ROOT)
    assert compiled.returncode == pure.returncode == 0, compiled.stderr + pure.stderr
    assert compiled.stdout == pure.stdout


def test_where_the_build_is_refused_the_wheel_is_pure_and_says_why(checkout: Path, tmp_path: Path) -> None:
    wheel, stderr = _wheel(checkout, tmp_path / "dist", {"PYKUEUE_PURE": "1"})
    assert wheel.name.endswith("-py3-none-any.whl"), wheel.name
    assert not [n for n in zipfile.ZipFile(wheel).namelist() if n.endswith(sysconfig.get_config_var("EXT_SUFFIX"))]
    lines = [line.strip() for line in stderr.splitlines() if line.strip().startswith("pykueue:")]
    assert lines == ["pykueue: building pure Python (the compiled engine needs mypyc, a C compiler and Python's "
                     "headers: PYKUEUE_PURE is set)"], stderr[-2000:]
