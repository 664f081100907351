"""docs/cluster.md's MultiKueue block, run as it stands: three dev clusters side by side (each its own
--dir and ports), a controller on each, and a Job on the manager completed by a worker."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.packaging.readme_blocks import running, sh_block, workdir  # noqa: F401 - workdir is a fixture

SECTION = "MultiKueue: a manager dispatching Jobs to worker clusters"


def test_manager_and_two_workers_run_a_job(workdir: Path) -> None:  # noqa: F811
    block = sh_block(SECTION, "docs/cluster.md")
    try:
        with running(block, workdir, timeout=600) as (status, out):
            assert status == 0, out[-4000:]
            assert {"w1", "w2"} & {line.strip() for line in out.splitlines()}, out[-2000:]
    finally:
        for name in ("kc-w1", "kc-w2"):  # the fixture stops kc (the manager)
            subprocess.run([sys.executable, "-m", "pykueue.cli", "dev-cluster", "down", "--dir", str(workdir / name)],
                           capture_output=True, timeout=120)
