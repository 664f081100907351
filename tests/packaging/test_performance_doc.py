"""docs/performance.md names no figure without the command that reproduces it (issue 41): each section
holding a table of figures has a shell block of its own or in its parent section, and every command in
those blocks exists and takes the flags written there."""

from __future__ import annotations

import importlib.util
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


# ------------------------------------------------------------------ bench/perf_doc.py, the generator


def _generator():
    spec = importlib.util.spec_from_file_location("perf_doc", REPO / "bench" / "perf_doc.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up while being made
    spec.loader.exec_module(module)
    return module


def _machine(gen, before: float = 9.5, after: float = 8.0, peak: float | None = None):
    return gen.Machine("x86_64", 2, 23.4, "3.11.7", before, after, before if peak is None else peak)


def test_the_document_has_both_generated_blocks_each_with_its_commands() -> None:
    text = DOC.read_text()
    for name, command in (("simulate", "python bench/cli_speed.py"), ("live", "python bench/cluster_perf.py")):
        found = re.search(rf"<!-- perf_doc:{name} -->\n(.*?)\n<!-- /perf_doc:{name} -->", text, re.DOTALL)
        assert found, f"docs/performance.md has no perf_doc:{name} block"
        block = found.group(1)
        assert block.startswith("Measured on "), block[:200]
        assert command in "".join(SH.findall(block)), f"the {name} block names no {command}"
        assert has_figure_table(block), f"the {name} block holds no table of figures"


def test_the_machine_line_says_when_the_cores_were_busy() -> None:
    gen = _generator()
    assert gen.machine_line(_machine(gen)) == (
        "Measured on x86_64, 2 cores, 23.4 GB, Python 3.11.7; load average 9.5 before, at most 9.5 during and "
        "8.0 after the run (busy: other work shares the cores).")
    assert gen.machine_line(_machine(gen, 0.4, 1.0)).endswith(
        "load average 0.4 before, at most 0.4 during and 1.0 after the run.")
    # quiet at both ends, busy in between: the peak sampled during the run says so
    assert gen.machine_line(_machine(gen, 0.8, 1.2, peak=12.0)).endswith(
        "at most 12.0 during and 1.2 after the run (busy: other work shares the cores).")


def _builds(tree: float, compiled: float, reference: float) -> dict:
    return {"this tree": {"cpu": tree, "median": tree + 0.1, "rss_mb": 64.4, "wall": tree},
            "compiled": {"cpu": compiled, "median": compiled + 0.2, "rss_mb": 69.0, "wall": compiled},
            "5ef5fcd": {"cpu": reference, "median": reference + 0.4, "rss_mb": 256.0, "wall": reference}}


def test_the_simulate_table_from_given_figures() -> None:
    gen = _generator()
    rows = [{"scenario": "baseline", "format": "json", "figures": _builds(2.0, 1.0, 4.0)},
            {"scenario": "baseline", "format": "yaml", "figures": _builds(3.0, 1.6, 20.0)}]
    command = gen.simulate_command(3, ("baseline:json", "baseline:yaml"))
    block = gen.simulate_block(rows, _machine(gen), command)
    assert block.split("\n\n")[1:] == [
        "```sh\npython bench/cli_speed.py --compiled --repeat 3 --json --runs baseline:json baseline:yaml\n```",
        "| scenario | output | this tree | peak | compiled | peak | 5ef5fcd | peak | this tree / 5ef5fcd "
        "| compiled / 5ef5fcd |\n"
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n"
        "| baseline (15,000 workloads, 30 queues) | json | 2.00 (2.10) s | 64 MB | 1.00 (1.20) s | 69 MB "
        "| 4.00 (4.40) s | 256 MB | 0.50x | 0.25x |\n"
        "| baseline | yaml | 3.00 (3.10) s | 64 MB | 1.60 (1.80) s | 69 MB | 20.00 (20.40) s | 256 MB "
        "| 0.15x | 0.08x |"]


def _summary(usage: float, large: int, medium: int, small: int, wall_ms: int = 0) -> dict:
    # classes in an order of their own: the table puts them large, medium, small
    return {"wallMs": wall_ms, "clusterQueueClasses": {"cq": {"avgUsagePercent": usage}},
            "workloadClasses": {"small": {"avgTimeToAdmissionMs": small}, "large": {"avgTimeToAdmissionMs": large},
                                "medium": {"avgTimeToAdmissionMs": medium}}}


def test_the_live_table_from_given_figures() -> None:
    gen = _generator()
    ours = {"controller": "pykueue controller", "wallSeconds": 50.0, "controllerCpuSecondsDuringRun": 10.0,
            "controllerPeakMB": 200.4, "apiserverCpuSeconds": 60.0, "etcdCpuSeconds": 10.0, "rangespec": "pass",
            "failures": [], "workloads": 4500, "simulateCpuSeconds": 1.5,
            "live": _summary(90.0, 0, 20_000, 30_000), "simulated": _summary(98.7, 0, 41_000, 54_200, 25_600)}
    theirs = {"controller": "upstream Kueue v0.17.0 (Go)", "wallSeconds": 100.0,
              "controllerCpuSecondsDuringRun": 40.0, "controllerPeakMB": 100.0, "apiserverCpuSeconds": 80.0,
              "etcdCpuSeconds": 20.0, "rangespec": "fail", "failures": ["cq usage 40.0 below 50"],
              "workloads": 4500, "live": _summary(40.0, 8_000, 40_000, 120_000)}
    block = gen.live_block({"pykueue": ours, "upstream": theirs}, _machine(gen), 0.3)
    common = "--generator pykueue/examples/perf/baseline/generator.yaml --rangespec " \
             "pykueue/examples/perf/baseline/rangespec.yaml --scale 0.3 --controller"
    assert block.split("\n\n")[1:] == [
        f"```sh\npython bench/cluster_perf.py {common} pykueue\npython bench/cluster_perf.py {common} upstream\n```",
        "Baseline at scale 0.3 (4,500 workloads; `--scale` keeps that fraction of each workloads set, queues "
        "whole), both controllers one after the other in one run:",
        "| controller | wall | controller CPU / peak | API server / etcd CPU | usage "
        "| avg time to admission large / medium / small | rangespec |\n"
        "| --- | --- | --- | --- | --- | --- | --- |\n"
        "| pykueue controller | 50.0 s | 10.0 s / 200 MB | 60.0 s / 10.0 s | 90.0 % | 0.0 s / 20.0 s / 30.0 s "
        "| pass |\n"
        "| upstream Kueue v0.17.0 (Go) | 100.0 s | 40.0 s / 100 MB | 80.0 s / 20.0 s | 40.0 % "
        "| 8.0 s / 40.0 s / 120.0 s | fail: cq usage 40.0 below 50 |\n"
        "| simulate, same config | 25.6 s (virtual) | 1.5 s (in-process) | - | 98.7 % | 0.0 s / 41.0 s / 54.2 s "
        "| - |\n"
        "| pykueue / upstream | 0.50x | 0.25x / 2.00x | 0.75x / 0.50x | - | 0.00x / 0.50x / 0.25x | - |"]


def test_a_block_is_replaced_between_its_markers_and_nowhere_else() -> None:
    gen = _generator()
    text = "intro\n<!-- perf_doc:live -->\nold | 1 |\n<!-- /perf_doc:live -->\nprose 2\n"
    assert gen.replace_block(text, "live", "new") == "intro\n<!-- perf_doc:live -->\nnew\n<!-- /perf_doc:live -->\nprose 2\n"
    empty = "<!-- perf_doc:live -->\n<!-- /perf_doc:live -->\n"  # as a new document holds it
    assert gen.replace_block(empty, "live", "new") == "<!-- perf_doc:live -->\nnew\n<!-- /perf_doc:live -->\n"
    with pytest.raises(SystemExit, match="no <!-- perf_doc:simulate -->"):
        gen.replace_block(text, "simulate", "new")
