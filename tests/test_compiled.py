"""The compiled build (``python -m pykueue.compiled build``, mypyc) behaves exactly as the pure code.

The build is made once per source hash and kept under ``<cache>/compiled/`` (``$PYKUEUE_CACHE_DIR``,
else ``~/.cache/pykueue``, as the Kubernetes binaries), so a second run, or CI with that cache, does
not compile again. Two copies of the package are made in a temporary directory, one with the
extension modules and one without, so the comparison never depends on whether the developer's own
tree holds a build. Both run every scenario of ``tests/scenarios`` and upstream's baseline generator
(``--output json``) in one process each, and their outputs, exit statuses and messages must be the
same bytes. The unit tests of every compiled module's layer (``_SUITES``) then run against the
compiled copy: a compiled module checks its declared types at run time, which pure Python never
does, so a path of bad user input that pure code survives could fail compiled.

Skipped, with the reason, when mypyc or a C compiler is missing (``pip install -e '.[test]'`` brings
mypyc). On the 2-core machine: about three minutes to compile, a minute for the comparison and
three for the unit tests.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pykueue import compiled
from tests.scenario_harness import SCENARIOS, split

ROOT = Path(__file__).resolve().parent.parent
BASELINE = ROOT / "pykueue" / "examples" / "perf" / "baseline" / "generator.yaml"

# Runs cases of `pykueue ...` in one process: {"engine": module file, "cases": {name: [exit, stdout, stderr]}}.
_RUNNER = """\
import contextlib, io, json, sys
import pykueue.engine.engine as engine
from pykueue.cli import main
cases = json.loads(sys.argv[1])
out = {"engine": engine.__file__, "cases": {}}
for name, argv in cases:
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(argv)
    out["cases"][name] = [code, stdout.getvalue(), stderr.getvalue()]
json.dump(out, sys.stdout)
"""

# The suites that run against the compiled copy too: the engine's, and those of every compiled module
# outside it (the loader, the simulator, the streamed result and summary) with the CLI and the
# controller's pure parts that call them.
# In two halves of about equal time, so that two pytest-xdist workers share them.
_SUITES = [["tests/engine", "tests/perf", "tests/sim", "tests/test_scenarios.py"],
           ["tests/api", "tests/jobs", "tests/controller", "tests/dashboard", "tests/test_cli.py",
            "tests/test_cli_conventions.py", "tests/test_cli_robustness.py"]]

# Tests that cannot hold for a compiled build, and why.
_PURE_ONLY = [
    # They replace engine functions with monkeypatch; compiled callers call the compiled function
    # directly, so the patches are never seen. The shortcuts they check are the same code compiled.
    "tests/engine/test_preemption_shortcuts.py",
    "tests/engine/test_shared_candidate_merge.py",
    "tests/engine/test_others_first.py",
    # A float `now` is refused with a TypeError either way; compiled, mypyc's own check of the `int`
    # parameter words it ("int object expected; got float") before the engine's message.
    "tests/engine/test_instant_loop.py::test_time_is_integer_microseconds",
    # mypy on the sources: nothing compiled about it.
    "tests/engine/test_types.py",
    # A forecast copies the engine with deepcopy, which cannot rebuild mypyc's classes: compiled, it
    # says it is unavailable (explain prints that instead of an expected start; the rest of
    # tests/sim/test_explain.py runs compiled with it).
    "tests/engine/test_forecast.py",
    "tests/sim/test_explain_forecast.py",
    "tests/sim/test_explain.py::test_the_readme_example_is_real_output",
    # They check that the facts table shares one tuple between equal workloads by asking for two and
    # comparing identity; compiled, a fixed-size tuple returned from a function is unboxed and boxed
    # again (mypyc), so each answer is a new tuple while the table still holds the one shared.
    "tests/perf/test_facts_streamed.py::test_streamed_facts_equal_the_facts_of_the_list",
    "tests/perf/test_perf_summary.py::test_observations_from_simulation_result",
    # It deletes an attribute of a run to play an older one; a compiled class has fixed attributes.
    "tests/sim/test_report_sections.py::test_recorded_reasons_are_used_when_the_run_has_them",
]


def _run(tree: Path, cases: list[list]) -> dict:
    done = subprocess.run([sys.executable, "-c", _RUNNER, json.dumps(cases)], cwd=tree, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def build() -> Path:
    """The cached build of this tree's sources."""
    try:
        return compiled.cached_build(ROOT)
    except compiled.ToolchainMissing as e:
        pytest.skip(f"no compiled build possible here: {e}")


@pytest.fixture(scope="module")
def trees(build: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(pure copy, compiled copy) of the package."""
    base = tmp_path_factory.mktemp("compiled-vs-pure")
    return compiled.copy_package(ROOT, base / "pure", None), compiled.copy_package(ROOT, base / "compiled", build)


def test_the_build_has_no_mypyc_warnings(trees: tuple[Path, Path]) -> None:
    """mypyc warns where it will not keep Python's meaning, e.g. a generator expression built as a
    list: that made the preemption search judge every candidate before taking any (the candidates of
    a queue back at its nominal quota were taken anyway)."""
    manifest = json.loads((trees[1] / "pykueue" / compiled.MANIFEST).read_text())
    assert manifest["warnings"] == []
    assert manifest["hash"] == compiled.source_hash(ROOT)


def test_scenarios_and_baseline_are_byte_identical(trees: tuple[Path, Path], tmp_path: Path) -> None:
    cases: list[list] = []
    for path in sorted(SCENARIOS.glob("*.yaml")):
        meta, inputs = split(path)
        f = tmp_path / path.name
        f.write_text(inputs)
        until = ["--until", str(meta["until"])] if "until" in meta else []
        # Both writers are compiled: the YAML one writes most values itself and hands the rest to PyYAML.
        for fmt in ("json", "yaml"):
            cases.append([f"{path.stem}:{fmt}", ["simulate", str(f), "--output", fmt, *until]])
    for fmt in ("json", "yaml"):
        cases.append([f"baseline:{fmt}", ["simulate", "--generator", str(BASELINE), "--output", fmt]])
    pure, fast = (_run(tree, cases) for tree in trees)
    assert pure["engine"].endswith("engine.py"), pure["engine"]
    assert fast["engine"].endswith(f"engine{compiled.ext_suffix()}"), fast["engine"]
    assert len(pure["cases"]) == len(cases) > 160
    differ = [name for name, got in pure["cases"].items() if fast["cases"][name] != got]
    assert differ == []
    for fmt in ("json", "yaml"):
        assert pure["cases"][f"baseline:{fmt}"][0] == 0 and len(pure["cases"][f"baseline:{fmt}"][1]) > 10_000_000


@pytest.mark.parametrize("suites", _SUITES, ids=["engine-sim", "api-controller"])
def test_unit_tests_pass_compiled(trees: tuple[Path, Path], suites: list[str]) -> None:
    tree = trees[1]
    shutil.copytree(ROOT / "tests", tree / "tests", dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__", "cluster", "e2e", "test_compiled.py"))
    for name in ("bench", "config", "docs"):  # files some of those tests read
        shutil.copytree(ROOT / name, tree / name, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(ROOT / "pyproject.toml", tree / "pyproject.toml")
    shutil.copy2(ROOT / "README.md", tree / "README.md")
    deselect = [arg for test in _PURE_ONLY for arg in ("--deselect", test)]
    # The compiled modules are imported before pytest starts, so every test gets them whatever sys.path becomes.
    script = (f"import sys, pytest, pykueue.engine.engine as e, pykueue.api.loader as l\n"
              f"assert e.__file__.endswith({compiled.ext_suffix()!r}), e.__file__\n"
              f"assert l.__file__.endswith({compiled.ext_suffix()!r}), l.__file__\n"
              f"sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', *{suites!r}, *{deselect!r}]))\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=tree, capture_output=True, text=True, timeout=2400)
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-2000:]
    assert " passed" in done.stdout and "failed" not in done.stdout, done.stdout[-2000:]


def _compiled_command(tree: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pykueue.compiled", *args], cwd=tree, capture_output=True,
                          text=True, timeout=300, env=env)


def test_status_stale_and_clean(build: Path, tmp_path: Path) -> None:
    tree = compiled.copy_package(ROOT, tmp_path, build)
    done = _compiled_command(tree, "status")
    assert (done.returncode, done.stdout.split(":")[0]) == (0, f"compiled ({len(compiled.COMPILED) + 1} extension modules)")
    with open(tree / "pykueue" / "engine" / "quota.py", "a") as f:
        f.write("# an edit after the build\n")
    done = _compiled_command(tree, "status")
    assert done.returncode == 1 and done.stdout.startswith("STALE compiled build"), done.stdout
    done = _compiled_command(tree, "clean")
    assert done.stdout == f"removed {len(compiled.COMPILED) + 1} extension modules\n"
    assert not list((tree / "pykueue").rglob(f"*{compiled.ext_suffix()}"))
    assert not (tree / "pykueue" / compiled.MANIFEST).exists()
    done = _compiled_command(tree, "status")
    assert done.returncode == 1 and done.stdout.startswith("pure Python"), done.stdout
    assert _compiled_command(tree, "clean").stdout == "no compiled build to remove\n"


def test_this_tree_holds_no_stale_build() -> None:
    """A build left in the developer's tree after the sources changed would run the old engine
    everywhere (the extension module is imported before the source): status must not say STALE."""
    message, _ = compiled.status(ROOT)
    assert not message.startswith("STALE"), message


def test_build_without_a_c_compiler_is_one_line(tmp_path: Path) -> None:
    pytest.importorskip("mypyc")
    done = _compiled_command(ROOT, "build", "--into", str(tmp_path), env={**os.environ, "CC": "/nonexistent/cc"})
    assert done.returncode == 1
    assert done.stderr == ("pykueue.compiled: no C compiler: /nonexistent/cc is not on PATH "
                           "(install gcc or clang, e.g. apt-get install build-essential)\n")
    assert not list(tmp_path.iterdir())


def test_build_without_mypyc_is_one_line(tmp_path: Path) -> None:
    script = ("import sys\nsys.modules['mypyc'] = None  # an import of it fails as when not installed\n"
              f"from pykueue.compiled import main\nsys.exit(main(['build', '--into', {str(tmp_path)!r}]))\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr) == (
        1, "pykueue.compiled: mypyc is not installed: pip install 'pykueue[compiled]' (it comes with mypy)\n")


def test_the_cache_keeps_the_most_recently_used_builds(tmp_path: Path) -> None:
    for age, name in enumerate(["e", "d", "c", "b", "a", "f"]):  # "e" oldest ... "f" newest
        (tmp_path / name / "pykueue").mkdir(parents=True)
        os.utime(tmp_path / name, (1000 + age, 1000 + age))
    (tmp_path / ".lock").touch()
    compiled.prune(tmp_path, keep=4)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".lock", "a", "b", "c", "f"]
