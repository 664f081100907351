"""The engine type-checks clean under mypy (``[tool.mypy]`` in pyproject.toml): its annotations are
true, and mypyc, which compiles from them (``pykueue/compiled.py``), keeps building it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_engine_type_checks_clean(tmp_path: Path) -> None:
    pytest.importorskip("mypy", reason="mypy is in the [test] extra")
    done = subprocess.run([sys.executable, "-m", "mypy", "-p", "pykueue.engine", "--cache-dir", str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("Success: no issues found"), done.stdout
