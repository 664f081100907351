"""Command-line conventions (issue 10, "Rough edges"): ``--version``, ``-o``, help for every option,
durations wherever a duration is taken, a wrong option reported by the subcommand it was given to, and
a problem with a file the user named as one line on stderr with exit 2, never a traceback."""

from __future__ import annotations

import argparse
import json
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from pykueue.cli import _parser, main

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "pykueue" / "examples" / "demo.yaml"
OURS = ("simulate", "validate", "demo")


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def exits(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """main(argv) that argparse ends with SystemExit: (status, stdout, stderr)."""
    with pytest.raises(SystemExit) as stop:
        main(argv)
    out, err = capsys.readouterr()
    return int(stop.value.code or 0), out, err


def test_version_is_the_installed_distributions(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = exits(["--version"], capsys)
    assert (code, err) == (0, "")
    assert out in (f"pykueue {version('pykueue')} (pure-Python engine)\n", f"pykueue {version('pykueue')} (compiled engine)\n")
    assert out.split()[1].count(".") == 2  # X.Y.Z


def test_version_says_which_engine_an_import_gets(capsys: pytest.CaptureFixture[str]) -> None:
    """The engine is pure Python here (an editable install); the same check sees a compiled one by its
    extension module (tests/test_compiled.py runs the unit tests against such a build)."""
    import importlib.util
    import sysconfig

    origin = importlib.util.find_spec("pykueue.engine.engine").origin or ""
    compiled = origin.endswith(sysconfig.get_config_var("EXT_SUFFIX") or ".so")
    _, out, _ = exits(["--version"], capsys)
    assert out.endswith("(compiled engine)\n" if compiled else "(pure-Python engine)\n")


def test_o_is_short_for_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", str(DEMO), "-o", "json", "--until", "1m"]) == 0
    long_form = capsys.readouterr().out
    assert main(["simulate", str(DEMO), "--output", "json", "--until", "1m"]) == 0
    assert capsys.readouterr().out == long_form
    assert json.loads(long_form)["kind"] == "SimulationResult"


@pytest.mark.parametrize("command", OURS)
def test_help_of_each_subcommand_explains_every_option(command: str, capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # one help text per line
    parser = subparsers(_parser())[command]
    code, out, _ = exits([command, "--help"], capsys)
    assert code == 0 and out.startswith(f"usage: pykueue {command} ")
    for action in parser._actions:
        assert action.help and action.help != argparse.SUPPRESS, action.option_strings or action.dest
        assert action.help in out
        for option in action.option_strings:
            assert option in out


def test_durations_take_go_units(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", str(DEMO), "-o", "json", "--until", "1m"]) == 0
    assert json.loads(capsys.readouterr().out)["endTime"] == 60.0
    assert main(["simulate", str(DEMO), "-o", "json", "--until", "0h0m12.5s"]) == 0
    assert json.loads(capsys.readouterr().out)["endTime"] == 12.5


@pytest.mark.parametrize(("argv", "prog", "unknown"), [
    (["simulate", str(DEMO), "--bogus"], "pykueue simulate", "--bogus"),
    (["simulate", "--bogus", str(DEMO)], "pykueue simulate", "--bogus"),
    (["validate", str(DEMO), "--until", "1s"], "pykueue validate", "--until 1s"),
    (["demo", "--fast"], "pykueue demo", "--fast"),
    (["dev-cluster", "up", "--dir", "/nonexistent", "--bogus"], "pykueue dev-cluster up", "--bogus"),
    (["--bogus", "simulate", str(DEMO)], "pykueue", "--bogus"),
])
def test_a_wrong_option_shows_the_usage_of_the_command_it_was_given_to(
        argv: list[str], prog: str, unknown: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = exits(argv, capsys)
    assert code == 2 and out == ""
    assert err.startswith(f"usage: {prog} [-h]")
    assert err.splitlines()[-1] == f"{prog}: error: unrecognized arguments: {unknown}"


def test_a_bad_value_shows_the_usage_of_its_command(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = exits(["simulate", str(DEMO), "-o", "html"], capsys)
    assert code == 2
    assert err.startswith("usage: pykueue simulate [-h]")
    assert err.splitlines()[-1] == ("pykueue simulate: error: argument -o/--output: invalid choice: 'html' "
                                    "(choose from 'json', 'yaml', 'table')")


# ------------------------------------------------------------------------------ files the user named


def one_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2, err
    assert out == ""
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    return lines[0]


GENERATOR = """\
cohorts:
  - className: cohort
    count: 1
    queuesSets:
    - className: cq
      count: 1
      nominalQuota: 2
      workloadsSets:
      - count: 2
        creationIntervalMs: 100
        workloads:
        - {className: small, runtimeMs: 200, request: 1}
"""


def test_report_into_a_missing_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "missing" / "r.html"
    assert one_line(["simulate", str(DEMO), "--report", str(target)], capsys) == (
        f"pykueue: error: --report: cannot write {target}: no such directory {target.parent}")


def test_report_onto_a_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert one_line(["simulate", str(DEMO), "--report", str(tmp_path)], capsys) == (
        f"pykueue: error: --report: cannot write {tmp_path}: it is a directory")


def test_report_without_plotly(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                               monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m == "plotly" or m.startswith("plotly.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "plotly", None)  # `import plotly` raises ImportError
    target = tmp_path / "r.html"
    assert one_line(["simulate", str(DEMO), "--report", str(target)], capsys) == (
        "pykueue: error: --report needs plotly, which is not installed: pip install 'pykueue[report]'")
    assert not target.exists()


def test_a_missing_generator(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "generator.yaml"
    assert one_line(["simulate", "--generator", str(missing)], capsys) == f"{missing}: cannot read: No such file or directory"


def test_a_missing_rangespec(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gen = tmp_path / "generator.yaml"
    gen.write_text(GENERATOR)
    missing = tmp_path / "rangespec.yaml"
    assert one_line(["simulate", "--generator", str(gen), "--rangespec", str(missing)], capsys) == (
        f"{missing}: cannot read: No such file or directory")


@pytest.mark.parametrize("mode", ["paths", "generator"])
def test_a_missing_config(mode: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gen = tmp_path / "generator.yaml"
    gen.write_text(GENERATOR)
    missing = tmp_path / "config.yaml"
    source = [str(DEMO)] if mode == "paths" else ["--generator", str(gen)]
    line = one_line(["simulate", *source, "--config", str(missing)], capsys)
    assert line.startswith(f"{missing}:") and "no such file or directory" in line


def test_a_directory_as_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "other.yaml").write_text("kind: Nothing\n")
    assert one_line(["simulate", str(DEMO), "--config", str(tmp_path)], capsys) == (
        f"pykueue: error: --config: {tmp_path} is a directory; give the Configuration file")
