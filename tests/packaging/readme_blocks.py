"""Running the README's (and docs/cluster.md's) shell blocks as they stand: the block of a section, a cluster directory for it,
and the script run in a session of its own (the controller a block leaves in the background is in its
process group, and is stopped with it)."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from pykueue.devcluster import binaries

REPO = Path(__file__).resolve().parents[2]


def sh_block(section: str, doc: str = "README.md") -> str:
    """The first sh block of ``doc``'s section ``## SECTION`` (``doc`` relative to the repository)."""
    text = (REPO / doc).read_text()
    assert f"\n## {section}\n" in text, f"no section {section!r} in {doc}"
    body = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"```sh\n(.*?)```", body, re.DOTALL)
    assert match, f"no sh block in {doc}'s {section} section"
    return match.group(1)


def block_before_down(section: str, doc: str) -> str:
    """A block that ends by stopping its dev cluster, without that last line: the test looks at what it
    left running (the ``workdir`` fixture stops the cluster afterwards)."""
    body, _, last = sh_block(section, doc).rstrip("\n").rpartition("\n")
    assert last == "kill %1; pykueue dev-cluster down --dir /tmp/kc", last
    return body + "\n"


@pytest.fixture
def workdir(tmp_path: Path) -> Iterator[Path]:
    """A directory standing for /tmp; the cluster a block starts in its kc/ is stopped afterwards."""
    try:
        binaries.ensure()
    except binaries.BuildError as exc:
        pytest.exit(f"pykueue: the cluster tests cannot run: {exc}", returncode=4)
    yield tmp_path
    subprocess.run([sys.executable, "-m", "pykueue.cli", "dev-cluster", "down", "--dir", str(tmp_path / "kc")],
                   capture_output=True, timeout=120)


@contextlib.contextmanager
def running(block: str, workdir: Path, timeout: float = 420) -> Iterator[tuple[int, str]]:
    """Run ``block`` with /tmp/kc in ``workdir`` and this venv's ``pykueue``; yield (exit status, output);
    on leaving, stop what the block left running in the background."""
    script = "set -euo pipefail\n" + block.replace("/tmp/kc", str(workdir / "kc"))
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG",)}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    proc = subprocess.Popen(["bash", "-c", script], cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                out, _ = proc.communicate(timeout=min(5.0, max(0.1, deadline - time.monotonic())))
                break
            except subprocess.TimeoutExpired:
                if time.monotonic() >= deadline:
                    raise
                # a controller the block started that exited with an error (a port taken, say) leaves its
                # `until grep ... controller.log` waiting for ever: the block fails now, with that log
                died = _controller_error(workdir)
                if died is not None:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGTERM)
                    out, _ = proc.communicate()
                    yield -1, f"{out}\n--- the block's controller exited ---\n{died}"
                    return
        yield proc.returncode, out
    finally:
        with contextlib.suppress(ProcessLookupError):  # the block's own group: the controller it started
            os.killpg(proc.pid, signal.SIGTERM)
        proc.wait()


def _controller_error(workdir: Path) -> str | None:
    """The tail of a controller log under ``workdir`` whose controller stopped on an error, or None."""
    for log in workdir.glob("*/controller.log"):
        text = log.read_text(errors="replace")
        if "pykueue: error:" in text:
            return "\n".join(text.splitlines()[-15:])
    return None


INSTALL_DOC = "docs/cluster.md"  # where the development install block lives
INSTALL_SECTION = "Developing: the manifest installed, the controller run locally"


def seed_001_documents() -> list[dict]:
    """Seed 001's objects as docs/cluster.md's install block applies them (the heredoc after its ``# seed 001``
    line): the ResourceFlavor, team-a's ClusterQueue, its LocalQueue and the smoke Job, in that order."""
    after = sh_block(INSTALL_SECTION, INSTALL_DOC).split("\n# seed 001", 1)[1]
    body = after.split("<<'EOF'\n", 1)[1].split("\nEOF\n", 1)[0]
    return list(yaml.safe_load_all(body))
