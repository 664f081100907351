"""Fixtures for the API boundary tests: load inline YAML written to ``tmp_path``."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from pykueue.api import Inputs, Problem, load_paths

from .helpers import Loader, fake_workload_from_job, write


@pytest.fixture
def load(tmp_path: Path) -> Loader:
    """``load(yaml_text, config=None)`` -> (inputs, problems) for one file named input.yaml."""

    def run(text: str, config: str | None = None) -> tuple[Inputs, list[Problem]]:
        path = write(tmp_path, text)
        config_path = str(write(tmp_path, config, "config.yaml")) if config is not None else None
        return load_paths([str(path)], config_path)

    return run


@pytest.fixture
def fake_job_integration(monkeypatch: pytest.MonkeyPatch) -> None:
    """Install a stand-in ``pykueue.jobs.job.workload`` so loader tests do not depend on the real integration."""
    import pykueue.jobs.job  # noqa: F401  (the package stays real: only its Workload rules are stood in for)

    module = types.ModuleType("pykueue.jobs.job.workload")
    module.workload_from_job = fake_workload_from_job  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pykueue.jobs.job.workload", module)
