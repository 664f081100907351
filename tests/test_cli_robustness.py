"""Hostile and mistaken input through the real CLI: exit 2 with one line per problem, never a traceback
or a signal; input that cannot mean what its author thinks is refused or warned about; output survives
a closed pipe and a killed run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import IO

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "tests" / "scenarios" / "preempt_reclaim_lent_quota.yaml"

SETUP = """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: f}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: f
      resources: [{name: cpu, nominalQuota: 4}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq, namespace: default}
spec: {clusterQueue: cq}
"""


def workload(name: str, annotations: str = "", cpu: str = "1") -> str:
    meta = f"  annotations:\n{annotations}" if annotations else ""
    return f"""\
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata:
  name: {name}
  namespace: default
{meta}spec:
  queueName: lq
  podSets:
  - name: main
    count: 1
    template:
      spec:
        containers: [{{name: c, resources: {{requests: {{cpu: "{cpu}"}}}}}}]
"""


def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The CLI in a subprocess; a signal shows as a negative return code."""
    return subprocess.run([sys.executable, "-m", "pykueue.cli", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def write(tmp_path: Path, text: str, name: str = "input.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def invalid(proc: subprocess.CompletedProcess[str], lines: int = 1) -> list[str]:
    """Exit 2, nothing on stdout, ``lines`` lines on stderr and no traceback: those lines."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    found = proc.stderr.splitlines()
    assert len(found) == lines, proc.stderr
    return found


def inputs_of(path: Path, tmp: Path) -> Path:
    """A scenario file without its leading Scenario document."""
    return write(tmp, path.read_text().partition("\n---\n")[2], path.name)


# --- crashes ------------------------------------------------------------------------------------------


def test_values_python_cannot_build_are_yaml_errors_at_their_position(tmp_path: Path) -> None:
    f = write(
        tmp_path,
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n  creationTimestamp: 2024-02-30\n"
        "---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: b\n  labels:\n    x: " + "9" * 5000 + "\n",
    )
    first, second = invalid(run("validate", str(f)), lines=2)
    # validate prints the line of the bad value, which its message names too
    assert first.startswith(f"{f}:5: ") and "line 5, column 22" in first and "day is out of range" in first
    assert second.startswith(f"{f}:12: ") and "line 12, column 8" in second and "5000 digits" in second


@pytest.mark.parametrize(
    "nesting",
    [
        "x: " + "[" * 200_000 + "]" * 200_000,  # libyaml's composer recurses in C: a signal, once
        "x: " + "{a: " * 3_000 + "}" * 3_000,
        "x:\n" + "".join(" " * (i + 1) + "k:\n" for i in range(2_000)),
        "x:\n " + " ".join(["-"] * 5_000) + " 1",
    ],
    ids=["flow-sequences", "flow-mappings", "block-mappings", "block-sequences"],
)
def test_deep_nesting_is_refused_without_a_crash(tmp_path: Path, nesting: str) -> None:
    f = write(tmp_path, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n  labels:\n    " + nesting.replace("\n", "\n    ") + "\n")
    (line,) = invalid(run("validate", str(f), timeout=60))
    where = re.search(r"YAML error at line (\d+), column", line)
    assert where is not None and int(where.group(1)) >= 6  # the labels' values start on line 6
    assert line.startswith(f"{f}:{where.group(1)}: ") and "nested more than 100 levels deep" in line


def test_aliases_that_nest_or_expand_without_end_are_refused(tmp_path: Path) -> None:
    """Each line of text can add a level through an alias, or multiply the document tenfold (a
    "billion laughs" that a repr of the spec would expand); a document can even contain itself."""
    deeper = "".join(f"    a{i}: &a{i} {{y: *a{i - 1}}}\n" for i in range(1, 3000))
    tenfold = "".join(f"    l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 10) + "]\n" for i in range(1, 10))
    f = write(tmp_path, SETUP + "---\n"
              + workload("deep").replace("spec:\n", "spec:\n  x:\n    a0: &a0 {x: 1}\n" + deeper, 1) + "---\n"
              + workload("laughs").replace("spec:\n", "spec:\n  x:\n    l0: &l0 [lol]\n" + tenfold, 1) + "---\n"
              + workload("itself").replace("spec:\n", "spec:\n  x: &self [*self]\n", 1))
    lines = invalid(run("validate", str(f), timeout=60), lines=3)
    # each at its document's first line: SETUP is 19 lines and a marker; "deep" is the workload's 13
    # lines, 2 more and 2999 aliases; "laughs" 13 + 2 + 9; each followed by a marker
    deep, laughs = 21, 21 + 13 + 2 + 2999 + 1
    itself = laughs + 13 + 2 + 9 + 1
    assert lines == [
        f"{f}:{deep}: Document -: <document>: YAML error: aliases nest collections more than 100 levels deep (pykueue's limit)",
        f"{f}:{laughs}: Document -: <document>: YAML error: aliases expand the document to more than 1000000 values",
        f"{f}:{itself}: Document -: <document>: YAML error: aliases nest collections more than 100 levels deep (pykueue's limit)",
    ]


def bounded(*args: str, memory: int = 1 << 30, timeout: float = 60) -> tuple[subprocess.CompletedProcess[str], float]:
    """The CLI in a subprocess held to ``memory`` bytes of address space (a reader without bounds dies
    of ``MemoryError`` there, rather than taking the machine's memory), and how long it took."""
    import resource
    import time

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pykueue.cli", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, preexec_fn=limit)
    return proc, time.perf_counter() - started


def alias_bomb(tmp_path: Path, name: str = "bomb.yaml") -> Path:
    """About 200 KB: a ResourceFlavor whose name is a 100,000-character string and whose 12,500 node
    labels are each an alias of it, 1.25 GB of text once expanded (each label is also a problem whose
    message quotes the value)."""
    labels = "".join(f"    k{i}: *a\n" for i in range(12_500))
    text = (f"apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata:\n  name: &a {'x' * 100_000}\n"
            f"spec:\n  nodeLabels:\n{labels}")
    assert 200_000 < len(text) < 300_000
    return write(tmp_path, text, name)


EXPANDED = "Document -: <document>: YAML error: aliases expand the document to more than 3145728 characters"


@pytest.mark.parametrize("command", ["simulate", "validate", "explain", "what-if", "config"])
def test_aliases_of_a_long_string_are_refused_quickly(tmp_path: Path, command: str) -> None:
    """Every command that reads the file refuses the expansion in its first document, with the file
    and the document named, exit 2, in well under 5 s and 1 GiB."""
    bomb = alias_bomb(tmp_path)
    plain = write(tmp_path, SETUP, "setup.yaml")
    argv = {"simulate": ["simulate", str(bomb), "--output", "json"], "validate": ["validate", str(bomb)],
            "explain": ["explain", "default/w", str(plain), str(bomb)],
            "what-if": ["explain", "--what-if", str(bomb), str(plain)],
            "config": ["simulate", str(plain), "--config", str(bomb), "--output", "json"]}[command]
    proc, took = bounded(*argv)
    (line,) = invalid(proc)
    # validate names the document's first line, the others its number: both are 1 here
    assert line == f"{bomb}:1: {EXPANDED}"
    assert took < 5, took


def test_a_generator_of_aliases_is_refused_quickly(tmp_path: Path) -> None:
    classes = ", ".join(["*a"] * 25_000)
    gen = write(tmp_path, f"cohorts:\n- className: &a {'x' * 100_000}\n  count: 1\n  queuesSets: [{classes}]\n",
                "generator.yaml")
    proc, took = bounded("simulate", "--generator", str(gen))
    (line,) = invalid(proc)
    assert line == f"{gen}: invalid YAML: YAML error: aliases expand the document to more than 3145728 characters"
    assert took < 5, took


def test_a_file_past_the_byte_limit_is_refused_unread(tmp_path: Path) -> None:
    """300 MiB (sparse: nothing is written) against 256 MiB: refused from its size, and a device
    with no end is read one byte past the limit, then refused."""
    big = tmp_path / "big.yaml"
    with open(big, "wb") as handle:
        handle.truncate(300 * 1024 * 1024)
    proc, took = bounded("simulate", str(big), "--output", "json")
    (line,) = invalid(proc)
    assert line == f"{big}:0: File {big}: <file>: 314572800 bytes, more than the 268435456 bytes pykueue reads of one file"
    assert took < 5, took
    (line,) = invalid(bounded("validate", "/dev/zero")[0])
    assert line == "/dev/zero: File /dev/zero: <file>: more than the 268435456 bytes pykueue reads of one file"


def _cohort_chain(depth: int) -> str:
    docs = [SETUP.replace("  namespaceSelector: {}\n", f"  cohortName: c{depth - 1}\n  namespaceSelector: {{}}\n")]
    for i in range(depth):
        parent = f"spec: {{parentName: c{i - 1}}}\n" if i else ""
        docs.append(f"apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {{name: c{i}}}\n{parent}")
    docs.append(workload("w"))
    return "---\n".join(docs)


def test_cohort_trees_deeper_than_the_documented_limit_are_refused(tmp_path: Path) -> None:
    deepest = write(tmp_path, _cohort_chain(100), "deepest.yaml")
    assert run("simulate", str(deepest), "--output", "json").returncode == 0
    too_deep = write(tmp_path, _cohort_chain(1000), "too-deep.yaml")
    (line,) = invalid(run("simulate", str(too_deep), "--output", "json"))
    # document 4 + 100 is cohort c100, the first one past 100 levels
    assert line.startswith(f'{too_deep}:104: Cohort c100: spec.parentName: Invalid value: "c99": ')
    assert "at most 100 levels deep" in line


@pytest.mark.parametrize(
    ("where", "args", "text", "expected"),
    [
        ("until", ["--until", "9999999999999h"], "", "pykueue: error: --until: invalid duration"),
        ("annotation", [], "    pykueue.dev/arrival: " + "9" * 400 + "s\n",
         "Workload default/w: metadata.annotations[pykueue.dev/arrival]: invalid duration"),
        ("config", ["--config", "CONFIG"], "",
         "Configuration config: waitForPodsReady.timeout: invalid duration"),
    ],
)
def test_durations_too_large_to_represent(
    tmp_path: Path, where: str, args: list[str], text: str, expected: str
) -> None:
    f = write(tmp_path, SETUP + "---\n" + workload("w", text))
    config = write(tmp_path, "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
                             "waitForPodsReady: {timeout: 99999999999999999999999h}\n", "config.yaml")
    args = [str(config) if a == "CONFIG" else a for a in args]
    (line,) = invalid(run("simulate", str(f), "--output", "json", *args))
    assert expected in line and "out of range" in line


def test_a_generator_count_that_cannot_be_meant_is_refused_at_once(tmp_path: Path) -> None:
    f = write(tmp_path, """\
cohorts:
- className: cohort
  count: 1
  queuesSets:
  - className: cq
    count: 1
    nominalQuota: 20
    workloadsSets:
    - count: 100000000000
      creationIntervalMs: 100
      workloads:
      - {className: small, runtimeMs: 200, priority: 50, request: 1}
""", "generator.yaml")
    (line,) = invalid(run("simulate", "--generator", str(f), timeout=60))
    assert line == f"{f}: cohorts: the counts generate 100000000000 Workloads; pykueue simulates at most 10000000"


def test_an_unreadable_directory_is_a_problem(tmp_path: Path) -> None:
    folder = tmp_path / "manifests"
    folder.mkdir()
    (folder / "a.yaml").write_text(SETUP)
    # root reads any directory, so the refusal is staged in the child process itself
    stage = (
        "import os, sys\n"
        "real = os.listdir\n"
        "def listdir(path='.'):\n"
        f"    if os.path.abspath(path) == {str(folder)!r}:\n"
        "        raise PermissionError(13, 'Permission denied', path)\n"
        "    return real(path)\n"
        "os.listdir = listdir\n"
        "from pykueue.cli import main\n"
        f"sys.exit(main(['validate', {str(folder)!r}]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", stage], capture_output=True, text=True, timeout=60, cwd=ROOT)
    (line,) = invalid(proc)
    assert line == f"{folder}: File {folder}: <file>: cannot list the directory: Permission denied"


def test_negative_until_is_refused(tmp_path: Path) -> None:
    f = inputs_of(SCENARIO, tmp_path)
    for value in ("-5s", "-0.5"):
        (line,) = invalid(run("simulate", str(f), "--until", value))
        assert line == f"pykueue: error: --until: '{value}' is negative; the clock starts at 0"


# --- the reader agrees with kubectl and PyYAML ----------------------------------------------------


def test_a_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    f = tmp_path / "bom.yaml"
    f.write_bytes(b"\xef\xbb\xbf" + SETUP.encode())
    proc = run("simulate", str(f), "--output", "json")
    assert proc.returncode == 0, proc.stderr
    assert '"name": "cq"' in proc.stdout


def test_a_no_break_space_is_part_of_the_value_as_pyyaml_reads_it(tmp_path: Path) -> None:
    # YAML keeps a trailing no-break space in a plain scalar; the fast reader used to strip it
    f = write(tmp_path, SETUP + "---\n" + workload("w").replace("queueName: lq", "queueName: lq\u00a0"))
    (line,) = invalid(run("validate", str(f)))
    # line 27: SETUP's 19, a marker, then the Workload's apiVersion, kind, metadata, name, namespace, spec
    assert line.startswith(f'{f}:27: Workload default/w: spec.queueName: Invalid value: "lq')  # "lq\u00a0"


# --- input that cannot mean what its author thinks ----------------------------------------------


def test_rangespec_without_generator_is_refused_even_unparsable(tmp_path: Path) -> None:
    f = inputs_of(SCENARIO, tmp_path)
    spec = write(tmp_path, "cmd: [\n", "rangespec.yaml")
    (line,) = invalid(run("simulate", str(f), "--rangespec", str(spec)))
    assert line.startswith("pykueue: error: --rangespec needs --generator")


def test_a_script_for_an_admission_check_that_does_not_exist_is_warned_about(tmp_path: Path) -> None:
    check = "apiVersion: kueue.x-k8s.io/v1beta2\nkind: AdmissionCheck\nmetadata: {name: prov}\nspec: {controllerName: x}\n"
    f = write(tmp_path, SETUP + "---\n" + check + "---\n"
              + workload("w", "    pykueue.dev/admission-checks: prov=Ready@1s;provv=Ready@1s\n"))
    proc = run("simulate", str(f), "--output", "json")
    assert proc.returncode == 0 and proc.stdout.startswith("{")
    assert proc.stderr.splitlines() == [
        f"Warning: {f}:5: Workload default/w: metadata.annotations[pykueue.dev/admission-checks]: "
        'no AdmissionCheck "provv" among the inputs: its script is never played'
    ]


def test_a_job_with_no_containers_is_refused(tmp_path: Path) -> None:
    f = write(tmp_path, SETUP + """\
---
apiVersion: batch/v1
kind: Job
metadata:
  name: j
  namespace: default
  labels: {kueue.x-k8s.io/queue-name: lq}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: []
""")
    (line,) = invalid(run("simulate", str(f), "--output", "json"))
    assert line == f"{f}:4: Job default/j: spec.template.spec.containers: Required value"


def test_annotations_over_the_api_servers_256_kib_are_refused(tmp_path: Path) -> None:
    def with_annotations(accents: int) -> str:  # 4 bytes of keys and "xy", then 2 bytes per "é"
        return SETUP + "---\n" + workload("w", f"    a: xy\n    b: {'é' * accents}\n")

    at_limit = write(tmp_path, with_annotations(131_070), "at-limit.yaml")  # 262144 bytes
    assert run("validate", str(at_limit)).returncode == 0
    over = write(tmp_path, with_annotations(131_071), "over.yaml")  # 262146 bytes, 131075 characters
    (line,) = invalid(run("validate", str(over)))
    assert line == f"{over}:26: Workload default/w: metadata.annotations: Too long: may not be more than 262144 bytes"


def test_an_empty_config_file_is_refused(tmp_path: Path) -> None:
    f = write(tmp_path, SETUP)
    config = write(tmp_path, "# nothing yet\n", "config.yaml")
    (line,) = invalid(run("simulate", str(f), "--config", str(config), "--output", "json"))
    assert line == f"{config}:0: File {config}: <file>: the --config file holds no document; it must hold a Kueue Configuration"


def test_dangling_symlinks_in_a_directory_are_problems(tmp_path: Path) -> None:
    folder = tmp_path / "manifests"
    folder.mkdir()
    (folder / "a.yaml").write_text(SETUP)
    (folder / "b.yaml").symlink_to(tmp_path / "gone.yaml")
    (line,) = invalid(run("validate", str(folder)))
    assert line == f"{folder / 'b.yaml'}: File {folder / 'b.yaml'}: <file>: a symbolic link to {tmp_path / 'gone.yaml'}, which does not exist"


# --- output ------------------------------------------------------------------------------------


def test_a_closed_pipe_ends_the_run_quietly(tmp_path: Path) -> None:
    many = SETUP + "".join("---\n" + workload(f"w{i:04d}") for i in range(1500))
    f = write(tmp_path, many)
    for output in ("table", "json"):  # rich's own handling exited 1; streamed JSON must not complain
        proc = subprocess.Popen([sys.executable, "-m", "pykueue.cli", "simulate", str(f), "--output", output],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.readline()  # like head -1
        proc.stdout.close()
        stderr = proc.stderr.read().decode()
        assert (output, proc.wait(timeout=120), stderr) == (output, 0, "")


def test_a_report_killed_mid_write_leaves_the_previous_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("plotly")
    from pykueue.api.loader import load_paths
    from pykueue.sim import report
    from pykueue.sim.result import build_result
    from pykueue.sim.simulator import Simulation

    inputs, problems = load_paths([str(inputs_of(SCENARIO, tmp_path))])
    assert problems == []
    run_ = Simulation(inputs, record_usage=True).run()
    result = build_result(run_)
    target = tmp_path / "report.html"
    target.write_text("previous report")

    class Killed(BaseException):
        pass

    class DiesHalfway:
        """A file that takes half of what it is given, then the process is killed."""

        def __init__(self, handle: IO[str]) -> None:
            self.handle = handle

        def write(self, text: str) -> int:
            self.handle.write(text[: len(text) // 2])
            self.handle.flush()
            raise Killed

        def __getattr__(self, name: str) -> object:
            return getattr(self.handle, name)

        def __enter__(self) -> DiesHalfway:
            return self

        def __exit__(self, *exc: object) -> None:
            self.handle.close()

    real_open, real_fdopen = open, os.fdopen
    monkeypatch.setattr(report, "open", lambda *a, **k: DiesHalfway(real_open(*a, **k)), raising=False)
    monkeypatch.setattr(os, "fdopen", lambda *a, **k: DiesHalfway(real_fdopen(*a, **k)))
    with pytest.raises(Killed):
        report.write_report(run_, result, str(target))
    assert target.read_text() == "previous report"
    assert sorted(p.name for p in tmp_path.iterdir()) == [SCENARIO.name, "report.html"]

    monkeypatch.undo()
    report.write_report(run_, result, str(target))
    assert target.read_text().startswith("<!DOCTYPE html>")
    umask = os.umask(0)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask  # as an ordinary open would create it
    assert sorted(p.name for p in tmp_path.iterdir()) == [SCENARIO.name, "report.html"]
