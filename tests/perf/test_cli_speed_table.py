"""bench/cli_speed.py's table: each build's CPU over the reference's, and the compiled build's over
this tree's (``--compiled``)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "cli_speed.py"


def _bench():
    spec = importlib.util.spec_from_file_location("cli_speed", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _row(**cpu: float) -> dict:
    return {"scenario": "baseline", "format": "json",
            "figures": {label.replace("_", " "): {"cpu": v, "median": v + 1, "rss_mb": 100.0, "wall": v}
                        for label, v in cpu.items()}}


def test_ratios_with_the_compiled_build_and_the_reference(capsys: pytest.CaptureFixture[str]) -> None:
    _bench().print_table([_row(this_tree=5.0, compiled=4.0, ref=10.0)], ["this tree", "compiled", "ref"], reference="ref")
    head, _, line = capsys.readouterr().out.splitlines()
    assert head.endswith("| this tree / ref | compiled / ref | compiled / this tree |")
    assert line == ("| baseline | json | 5.00 (6.00) | 100 | 4.00 (5.00) | 100 | 10.00 (11.00) | 100 "
                    "| 0.50x | 0.40x | 0.80x |")


def test_no_ratio_without_a_second_build(capsys: pytest.CaptureFixture[str]) -> None:
    _bench().print_table([_row(this_tree=5.0)], ["this tree"])
    head, _, line = capsys.readouterr().out.splitlines()
    assert head == "| scenario | output | this tree CPU s (median) | this tree peak MB |"
    assert line == "| baseline | json | 5.00 (6.00) | 100 |"


def test_best_is_the_lowest_cpu_with_the_median_beside() -> None:
    runs = [{"cpu": c, "rss_kb": 1024 * m, "wall": c + 1} for c, m in ((3.4, 60), (3.0, 64), (5.9, 62))]
    assert _bench().best(runs) == {"cpu": 3.0, "median": 3.4, "rss_mb": 64.0, "wall": 4.0}


def test_instruction_counts_and_their_ratios(capsys: pytest.CaptureFixture[str]) -> None:
    row = _row(this_tree=5.0, ref=10.0)
    row["figures"]["this tree"]["ir"] = 16_070_000_000
    row["figures"]["ref"]["ir"] = 32_140_000_000
    _bench().print_table([row], ["this tree", "ref"], reference="ref", metric="ir")
    head, _, line = capsys.readouterr().out.splitlines()
    assert head == "| scenario | output | this tree instructions (G) | ref instructions (G) | this tree / ref |"
    assert line == "| baseline | json | 16.070 | 32.140 | 0.50x |"


def test_best_keeps_the_lowest_instruction_count() -> None:
    runs = [{"cpu": 3.0, "rss_kb": 1024, "wall": 4.0, "ir": 200}, {"cpu": 3.2, "rss_kb": 1024, "wall": 4.0, "ir": 150}]
    assert _bench().best(runs)["ir"] == 150
    assert "ir" not in _bench().best([{"cpu": 3.0, "rss_kb": 1024, "wall": 4.0}])


def test_the_instruction_count_is_read_from_callgrinds_summary() -> None:
    stderr = "==77== Events    : Ir\n==77== Collected : 4312196387\n==77== \n==77== I   refs:      4,312,196,387\n"
    found = _bench()._COLLECTED.search(stderr)
    assert found is not None and int(found.group(1)) == 4_312_196_387
