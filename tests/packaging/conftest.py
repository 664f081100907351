"""Fixtures for the packaging tests: helm, built from its pinned Go module like the cluster binaries."""

from __future__ import annotations

from pathlib import Path

import pytest

from pykueue.devcluster import helm
from pykueue.devcluster.binaries import BuildError


@pytest.fixture(scope="session")
def helm_bin() -> Path:
    """The pinned helm; built on first use. Like the cluster binaries, a missing Go stops the run
    with one line rather than skipping: CI must never pass without having checked the chart."""
    try:
        return helm.ensure()
    except BuildError as exc:
        pytest.exit(f"pykueue: the chart tests cannot run: {exc}", returncode=4)
