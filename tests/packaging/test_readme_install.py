"""The README's "Install on a cluster" block, run as it stands: a newcomer's commands from the test
cluster's start through `kubectl apply --server-side -f config/manifests.yaml` to seed 001's smoke Job
admitted, with the controller running locally on the ServiceAccount's token.

Only `/tmp/kc` is changed, to a directory of this test; the controller the block starts in the
background is stopped by its process group and the cluster by `pykueue dev-cluster down`.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pykueue.devcluster import binaries

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]


def install_block() -> str:
    """The first sh block of the README's "Install on a cluster" section."""
    text = (REPO / "README.md").read_text()
    section = text.split("\n## Install on a cluster\n", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"```sh\n(.*?)```", section, re.DOTALL)
    assert match, "no sh block in the README's Install on a cluster section"
    return match.group(1)


@pytest.fixture
def workdir(tmp_path: Path) -> Iterator[Path]:
    try:
        binaries.ensure()
    except binaries.BuildError as exc:
        pytest.exit(f"pykueue: the cluster tests cannot run: {exc}", returncode=4)
    yield tmp_path
    subprocess.run([sys.executable, "-m", "pykueue.cli", "dev-cluster", "down", "--dir", str(tmp_path / "kc")],
                   capture_output=True, timeout=120)


def test_readme_install_admits_seed_001_smoke_job(workdir: Path) -> None:
    script = "set -euo pipefail\n" + install_block().replace("/tmp/kc", str(workdir / "kc"))
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG",)}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # `pykueue` of this venv
    # A session of its own: the controller the block leaves in the background is in its process group.
    proc = subprocess.Popen(["bash", "-c", script], cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=420)
    finally:
        with contextlib.suppress(ProcessLookupError):  # the block's own group: the controller it started
            os.killpg(proc.pid, signal.SIGTERM)
        proc.wait()
    assert proc.returncode == 0, out[-3000:]
    assert "deployment.apps/pykueue-controller scaled" in out
    assert out.count("job.batch/train-smoke condition met") == 2, out[-3000:]  # unsuspended, then Complete
    assert re.search(r"^workload\.kueue\.x-k8s\.io/job-train-smoke-\w+ condition met$", out, re.MULTILINE)
    assert re.search(r"^job-train-smoke-\w+\s+gpu-queue\s+team-a\s+True\s", out, re.MULTILINE), out[-3000:]
    assert re.search(r"^team-a\s+research\s+0\b", out, re.MULTILINE), out[-1000:]  # nothing pending
    assert "secrets" not in out  # `kubectl auth can-i --list` as the ServiceAccount
    assert "without a token: 401" in out
    assert re.search(r'^kueue_admitted_workloads_total\{cluster_queue="team-a"\} 1\.0$', out, re.MULTILINE), out[-3000:]
    log = (workdir / "kc" / "controller.log").read_text()
    assert "controller ready" in log
    assert not [line for line in log.splitlines() if ": 403 " in line or "Forbidden" in line]
