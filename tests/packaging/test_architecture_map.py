"""docs/architecture.md stays a true one-page map: every module its "Where each rule lives" table names
exists, and every symbol a row names beside a module is defined in it (a pointer to a function that
moved fails here); the page stays short enough to read at once."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MAP = REPO / "docs" / "architecture.md"


def _rows() -> list[str]:
    text = MAP.read_text()
    table = text.split("## Where each rule lives", 1)[1].split("\n## ", 1)[0]
    return [line for line in table.splitlines() if line.startswith("| ") and not line.startswith("| ---")][1:]


def _pointers(cell: str) -> list[tuple[str, list[str]]]:
    """(module path, symbols) for each ``path.py`` (``a``, ``b``) in a cell; a bare file name is in the
    folder named before it (``engine/preemption/`` (``common.py``, ...))."""
    found, folder = [], ""
    for m in re.finditer(r"`([\w/]+/)`|`([\w/]+\.py)`(?: \(([^()]*(?:\([^()]*\)[^()]*)*)\))?", cell):
        if m.group(1):
            folder = m.group(1)
            continue
        path = m.group(2) if "/" in m.group(2) else folder + m.group(2)
        symbols = re.findall(r"`([A-Za-z_][\w.]*)`", m.group(3) or "")
        found.append((path, [s for s in symbols if not s.endswith(".py")]))
    return found


def _module(path: str) -> Path | None:
    for base in (REPO / "pykueue", REPO):
        if (base / path).is_file():
            return base / path
    return None


def test_every_pointer_of_the_rule_table_names_what_is_there() -> None:
    rows, missing = _rows(), []
    assert len(rows) > 30
    for row in rows:
        cell = row.rsplit("|", 2)[-2]
        for path, symbols in _pointers(cell):
            module = _module(path)
            if module is None:
                missing.append(f"{path}: no such module")
                continue
            source = module.read_text()
            for symbol in symbols:
                name = symbol.rsplit(".", 1)[-1]
                defined = rf"(def|class) {re.escape(name)}\b|^\s*(self\.)?{re.escape(name)}\s*[:=]"
                imported = rf"^from [\w.]+ import [^\n]*\b{re.escape(name)}\b"  # raised or used there
                if not re.search(defined, source, re.M) and not re.search(imported, source, re.M):
                    missing.append(f"{path}: {symbol}")
    assert missing == []


def test_the_map_is_one_page() -> None:
    assert len(MAP.read_text()) < 16_000
