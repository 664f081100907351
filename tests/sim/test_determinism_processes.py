"""The same input gives byte-identical ``pykueue simulate -o json`` output in any process.

Every scenario in tests/scenarios and the packaged demo are simulated in two fresh interpreters with
different ``PYTHONHASHSEED`` values (so set and dict orders of strings differ), the second one taking the
files in reverse order (so state a process keeps between runs, such as module-level counters, cannot
hide behind the same history). Each process runs the CLI's ``main`` in-process for every file, which
is what ``python -m pykueue.cli simulate FILE -o json`` runs, and prints one line per file: its exit
status and a digest of stdout and of stderr. The two lists must be identical.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.scenario_harness import SCENARIOS

ROOT = Path(__file__).resolve().parents[2]
FILES = [*sorted(SCENARIOS.glob("*.yaml")), ROOT / "pykueue" / "examples" / "demo.yaml"]

HELPER = r"""
import contextlib, hashlib, io, sys, tempfile
from pathlib import Path
import yaml
from pykueue.cli import main

for name in sys.argv[1:]:
    path = Path(name)
    text = path.read_text()
    head, _, rest = text.partition("\n---\n")
    meta = yaml.safe_load(head) if head.lstrip().startswith("kind: Scenario") else None
    args = ["--until", str(meta["until"])] if meta and "until" in meta else []
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "inputs.yaml"
        f.write_text(rest if meta is not None else text)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["simulate", str(f), "-o", "json", *args])
    digest = lambda s: hashlib.sha256(s.replace(str(f), "INPUT").encode()).hexdigest()[:16]
    print(path.name, code, len(out.getvalue()), digest(out.getvalue()), digest(err.getvalue()))
"""


def outputs(seed: str, files: list[Path]) -> dict[str, str]:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    proc = subprocess.run([sys.executable, "-c", HELPER, *map(str, files)], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == len(files), proc.stdout
    return {line.split()[0]: line for line in lines}


def test_every_scenario_is_byte_identical_across_hash_seeds_and_run_orders() -> None:
    assert len(FILES) > 50
    first = outputs("0", FILES)
    second = outputs("12345", FILES[::-1])
    differ = sorted(name for name in first if first[name] != second.get(name))
    assert not differ, "\n".join(f"{first[n]}\n{second.get(n)}" for n in differ)
    # The run covered successful runs and the other exit statuses the scenarios pin.
    codes = {line.split()[1] for line in first.values()}
    assert {"0", "2", "3"} <= codes, codes
