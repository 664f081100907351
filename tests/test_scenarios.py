"""Every file in tests/scenarios is a named case: its inputs and the outcome it expects."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scenario_harness import SCENARIOS, check, simulate, split

FILES = sorted(SCENARIOS.glob("*.yaml"))


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_scenario(path: Path, tmp_path: Path) -> None:
    meta, inputs = split(path)
    args = ["--until", str(meta["until"])] if "until" in meta else []
    code, result, stderr = simulate(inputs, tmp_path, *args)
    want_code = meta.get("exitCode", 0)
    assert code == want_code, stderr
    if want_code == 0:
        assert result is not None
        check(meta, result)
    for line in meta.get("stderrContains") or []:
        assert line in stderr, stderr
