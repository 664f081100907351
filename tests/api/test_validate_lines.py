"""`pykueue validate` for people at an editor: each problem at its line (not the document number that
`simulate` prints, as its spec fixes), warnings beside the errors, and a hint for common mistakes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from pykueue.api.inputs import Problem, Source
from pykueue.api.locate import Lines, path_tokens

ROOT = Path(__file__).resolve().parents[2]

FILE = """\
# quotas for team a
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: gpu-t4
spec:
  nodeSelector: {gpu-type: nvidia-t4}
---

# a comment and a blank line before the object
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-a}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: ["cpu"]
    flavors:
    - name: gpu-t4
      resources:
      - name: cpu
        nominalQuota: "-2"
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: q, namespace: team-a}
spec: {clusterQueue: team-b}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: q2, namespace: team-a}
spec: {clusterQueue: team-a}
"""


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pykueue.cli", *args], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)


def test_errors_and_warnings_together_each_at_its_line(tmp_path: Path) -> None:
    f = tmp_path / "quotas.yaml"
    f.write_text(FILE)
    proc = run("validate", str(f))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        # line 7: the nodeSelector key, with the hint
        f'{f}:7: ResourceFlavor gpu-t4: spec.nodeSelector: unknown field "nodeSelector"; '
        "did you mean spec.nodeLabels?",
        # line 22: the nominalQuota key of the first resource of the first flavor
        f'{f}:22: ClusterQueue team-a: spec.resourceGroups[0].flavors[0].resources[0].nominalQuota: '
        'Invalid value: "-2": must be greater than or equal to 0',
        # line 27: the LocalQueue's spec (a flow mapping: the key is on the spec line); a warning, shown
        # although the file has errors
        f'Warning: {f}:27: LocalQueue team-a/q: spec.clusterQueue: no ClusterQueue "team-b" among the '
        'inputs: workloads in this LocalQueue stay pending (did you mean "team-a"?)',
        # q2 names team-a, which is written but invalid: no warning that it does not exist
    ]


def test_simulate_keeps_the_document_number_its_spec_fixes(tmp_path: Path) -> None:
    f = tmp_path / "quotas.yaml"
    f.write_text(FILE)
    proc = run("simulate", str(f), "-o", "json")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        f'{f}:1: ResourceFlavor gpu-t4: spec.nodeSelector: unknown field "nodeSelector"; '
        "did you mean spec.nodeLabels?",
        f'{f}:2: ClusterQueue team-a: spec.resourceGroups[0].flavors[0].resources[0].nominalQuota: '
        'Invalid value: "-2": must be greater than or equal to 0',
    ]


def test_a_missing_field_points_at_the_nearest_written_one_and_a_document_at_its_first_line(
        tmp_path: Path) -> None:
    f = tmp_path / "cq.yaml"
    f.write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n\n"
                 "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: cq}\nspec:\n"
                 "  namespaceSelector: {}\n  resourceGroups:\n  - coveredResources: [cpu]\n"
                 "    flavors:\n    - name: f\n      resources:\n      - name: cpu\n")
    lines = Lines()
    missing = Problem(Source(str(f), 2), "ClusterQueue", None, "cq",
                      "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota", "Required value")
    assert lines.line(missing) == 16  # the resource's list item "- name: cpu"
    whole = Problem(Source(str(f), 2), "ClusterQueue", None, "cq", "<document>", "a second ClusterQueue")
    assert lines.line(whole) == 6  # its apiVersion, after the blank line
    file_level = Problem(Source(str(f), 0), "File", None, str(f), "<file>", "cannot read")
    assert lines.format(file_level) == f"{f}: File {f}: <file>: cannot read"
    gone = Problem(Source(str(tmp_path / "gone.yaml"), 1), "Namespace", None, "a", "metadata.name", "x")
    assert lines.line(gone) is None


def test_path_tokens_keep_map_keys_whole() -> None:
    assert path_tokens("metadata.labels[kueue.x-k8s.io/queue-name]") == [
        "metadata", "labels", "kueue.x-k8s.io/queue-name"]
    assert path_tokens("spec.resourceGroups[0].flavors[1].name") == [
        "spec", "resourceGroups", 0, "flavors", 1, "name"]


def test_hints_for_common_mistakes(tmp_path: Path) -> None:
    f = tmp_path / "mistakes.yaml"
    f.write_text(
        # seed 004's ResourceFlavor: v1beta1, nodeSelector written at the top level
        "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata:\n  name: gpu-t4\n"
        "nodeSelector:\n  gpu-type: nvidia-t4\n---\n"
        # v1beta1's cohort in a v1beta2 ClusterQueue, and a misspelt nominalQuota
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: cq}\nspec:\n"
        "  cohort: research\n  namespaceSelector: {}\n  resourceGroups:\n  - coveredResources: [cpu]\n"
        "    flavors: [{name: gpu-t4, resources: [{name: cpu, nominalQuta: 4}]}]\n---\n"
        # a LocalQueue with clusterQueueName, and a field with no close match: no hint
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: q, namespace: a}\n"
        "spec: {clusterQueueName: cq, color: blue}\n"
    )
    proc = run("validate", str(f))
    assert proc.returncode == 2
    flavors = "spec.resourceGroups[0].flavors[0].resources[0]"
    assert proc.stderr.splitlines() == [
        f'{f}:5: ResourceFlavor gpu-t4: nodeSelector: unknown field "nodeSelector"; did you mean spec.nodeLabels?',
        f'{f}:12: ClusterQueue cq: spec.cohort: unknown field "cohort"; did you mean spec.cohortName?',
        f"{f}:16: ClusterQueue cq: {flavors}.nominalQuota: Required value",
        f'{f}:16: ClusterQueue cq: {flavors}.nominalQuta: unknown field "nominalQuta"; '
        f"did you mean {flavors}.nominalQuota?",
        f'{f}:21: LocalQueue a/q: spec.clusterQueueName: unknown field "clusterQueueName"; '
        "did you mean spec.clusterQueue?",
        f'{f}:21: LocalQueue a/q: spec.color: unknown field "color"',
    ]


def test_v1beta1_cohort_is_no_mistake(tmp_path: Path) -> None:
    f = tmp_path / "v1beta1.yaml"
    f.write_text("apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: cq}\n"
                 "spec: {cohort: research, namespaceSelector: {}}\n")
    proc = run("validate", str(f))
    assert (proc.returncode, proc.stderr) == (0, "")
