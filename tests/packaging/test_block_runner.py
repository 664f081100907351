"""The doc-block runner (readme_blocks.running) stops a block whose controller exited on an error at
once, with that controller's log, instead of letting its `until grep` wait out the test's timeout."""

from __future__ import annotations

import time
from pathlib import Path

from tests.packaging.readme_blocks import running

BLOCK = """mkdir -p /tmp/kc
(sleep 1; echo 'pykueue: error: webhook server: address already in use' > /tmp/kc/controller.log) &
until grep -q 'webhooks registered' /tmp/kc/controller.log 2>/dev/null; do sleep 1; done
"""


def test_a_block_whose_controller_died_fails_at_once_with_its_log(tmp_path: Path) -> None:
    started = time.monotonic()
    with running(BLOCK, tmp_path, timeout=120) as (returncode, out):
        assert returncode == -1
        assert "the block's controller exited" in out and "address already in use" in out
    assert time.monotonic() - started < 15


def test_a_block_that_ends_gives_its_status_and_output(tmp_path: Path) -> None:
    with running("echo hello; exit 3", tmp_path, timeout=30) as (returncode, out):
        assert (returncode, out) == (3, "hello\n")
