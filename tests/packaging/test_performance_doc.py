"""docs/performance.md names no figure without the command that reproduces it (issue 41): each section
holding a table of figures has a shell block of its own or in its parent section, and every command in
those blocks exists and takes the flags written there."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "performance.md"
SH = re.compile(r"```sh\n(.*?)```", re.DOTALL)


def sections() -> list[tuple[str, str, str]]:
    """(heading, parent ## heading, body) for every ## and ### section."""
    out, parent = [], ""
    for part in re.split(r"^(?=#{2,3} )", DOC.read_text(), flags=re.MULTILINE)[1:]:
        heading, _, body = part.partition("\n")
        if heading.startswith("## "):
            parent = heading
        out.append((heading, parent, body))
    return out


def has_figure_table(body: str) -> bool:
    rows = [line for line in body.splitlines() if line.startswith("|") and not line.startswith("| ---")]
    return any(re.search(r"\d", row) for row in rows[1:])  # below the header: a figure


def test_every_table_of_figures_has_its_command() -> None:
    bodies = {heading: body for heading, _, body in sections()}
    missing = [heading for heading, parent, body in sections()
               if has_figure_table(body) and not (SH.search(body) or SH.search(bodies[parent]))]
    assert not missing, f"docs/performance.md: figures without a command in {missing}"


def commands() -> list[str]:
    text = " ".join(block.replace("\\\n", " ") for block in SH.findall(DOC.read_text()))
    return [line.strip() for line in re.split(r"\n", text) if line.strip()]


@pytest.mark.parametrize("script", sorted(set(re.findall(r"python (bench/\w+\.py)", DOC.read_text()))))
def test_each_bench_command_exists_and_takes_its_flags(script: str) -> None:
    assert (REPO / script).is_file(), f"docs/performance.md names {script}, which does not exist"
    usage = subprocess.run([sys.executable, script, "--help"], cwd=REPO, capture_output=True, text=True,
                           timeout=120)
    assert usage.returncode == 0, usage.stderr
    written = set()
    for line in commands():
        if script in line:
            written |= set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", line.split(script, 1)[1]))
    unknown = sorted(flag for flag in written if flag not in usage.stdout)
    assert not unknown, f"{script} does not take {unknown}"


def test_the_simulate_commands_name_files_that_exist() -> None:
    paths = re.findall(r"(pykueue/examples/\S+\.yaml)", " ".join(commands()))
    assert paths and all((REPO / p).is_file() for p in paths), paths
