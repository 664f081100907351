"""References that resolve to nothing among the inputs: warnings from ``pykueue validate``, never errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pykueue.api import Problem
from pykueue.api.references import all_warnings, misspelt_queue_label, reference_warnings

from .helpers import Loader, write

ROOT = Path(__file__).resolve().parents[2]

FLAVOR = "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {{name: {name}}}\n"
CHECK = "apiVersion: kueue.x-k8s.io/v1beta2\nkind: AdmissionCheck\nmetadata: {{name: {name}}}\nspec: {{controllerName: x}}\n"
NAMESPACE = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {name}\n  labels: {labels}\n"


def cluster_queue(name: str = "cq", flavor: str = "f", selector: str | None = "{}", extra: str = "") -> str:
    selector_line = f"  namespaceSelector: {selector}\n" if selector is not None else ""
    return (
        f"apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {{name: {name}}}\nspec:\n"
        f"{selector_line}{extra}  resourceGroups:\n  - coveredResources: [cpu]\n    flavors:\n"
        f"    - name: {flavor}\n      resources: [{{name: cpu, nominalQuota: 4}}]\n"
    )


def local_queue(name: str = "lq", namespace: str = "default", cq: str = "cq") -> str:
    return (
        f"apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {{name: {name}, namespace: {namespace}}}\n"
        f"spec: {{clusterQueue: {cq}}}\n"
    )


def workload(name: str = "w", queue: str = "lq", namespace: str = "default", status: str = "") -> str:
    return (
        f"apiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\nmetadata: {{name: {name}, namespace: {namespace}}}\n"
        f"spec:\n  queueName: {queue}\n  podSets:\n  - name: main\n    count: 1\n"
        "    template: {spec: {containers: [{name: c, resources: {requests: {cpu: 1}}}]}}\n" + status
    )


def job(name: str = "j", labels: str = "{kueue.x-k8s.io/queue-name: lq}", annotations: str = "{}") -> str:
    return (
        f"apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {name}\n  namespace: default\n"
        f"  labels: {labels}\n  annotations: {annotations}\n"
        "spec:\n  template:\n    spec:\n      restartPolicy: Never\n"
        "      containers: [{name: c, image: x, resources: {requests: {cpu: 1}}}]\n"
    )


SETUP = [FLAVOR.format(name="f"), cluster_queue(), local_queue()]


def warnings_for(load: Loader, *docs: str) -> list[Problem]:
    inputs, problems = load("---\n".join(docs))
    assert problems == [], "\n".join(map(str, problems))
    return reference_warnings(inputs)


def lines(found: list[Problem]) -> list[str]:
    """The lines without the file name: ``DOC: KIND NAMESPACE/NAME: PATH: message``."""
    return [str(p).split(":", 1)[1].lstrip() for p in found]


def test_a_consistent_set_of_inputs_has_nothing_to_warn_about(load: Loader) -> None:
    assert warnings_for(load, *SETUP, workload(), job(), NAMESPACE.format(name="default", labels="{}")) == []


def test_a_workload_or_job_naming_a_missing_local_queue(load: Loader) -> None:
    found = warnings_for(load, *SETUP, workload(queue="lq2"), job(labels="{kueue.x-k8s.io/queue-name: nope}"),
                         local_queue(namespace="other"), workload("x", namespace="team", queue="lq"))
    assert lines(found) == [
        '4: Workload default/w: spec.queueName: no LocalQueue "lq2" in namespace "default" among the inputs: '
        'the Workload stays pending (did you mean "lq"?)',
        '5: Job default/j: metadata.labels[kueue.x-k8s.io/queue-name]: no LocalQueue "nope" in namespace "default" '
        "among the inputs: the Job stays pending",
        '7: Workload team/x: spec.queueName: no LocalQueue "lq" in namespace "team" among the inputs: the Workload '
        'stays pending (there is one in namespace "default", but a LocalQueue serves its own namespace only)',
    ]


def test_a_local_queue_naming_a_missing_cluster_queue(load: Loader) -> None:
    found = warnings_for(load, *SETUP, local_queue("lq2", cq="cqs"))
    assert lines(found) == [
        '4: LocalQueue default/lq2: spec.clusterQueue: no ClusterQueue "cqs" among the inputs: '
        'workloads in this LocalQueue stay pending (did you mean "cq"?)'
    ]


def test_a_cluster_queue_naming_a_missing_flavor_or_admission_check(load: Loader) -> None:
    strategy = "  admissionChecksStrategy:\n    admissionChecks: [{name: prov}, {name: budget}]\n"
    found = warnings_for(load, FLAVOR.format(name="f"), CHECK.format(name="prov"),
                         cluster_queue(flavor="g", extra=strategy), local_queue())
    assert lines(found) == [
        '3: ClusterQueue cq: spec.resourceGroups[0].flavors[0].name: no ResourceFlavor "g" among the inputs: '
        "the ClusterQueue stays inactive and admits nothing (FlavorNotFound)",
        '3: ClusterQueue cq: spec.admissionChecksStrategy.admissionChecks[1].name: no AdmissionCheck "budget" '
        "among the inputs: the ClusterQueue stays inactive and admits nothing (AdmissionCheckNotFound)",
    ]


def test_v1beta1_admission_checks_and_cohort_quotas_are_checked_too(load: Loader) -> None:
    v1beta1 = (
        "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: old}\n"
        "spec:\n  namespaceSelector: {}\n  admissionChecks: [gone]\n"
    )
    cohort = (
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: team}\nspec:\n  resourceGroups:\n"
        "  - coveredResources: [cpu]\n    flavors:\n    - name: nope\n      resources: [{name: cpu, nominalQuota: 4}]\n"
    )
    found = warnings_for(load, *SETUP, v1beta1, cohort)
    assert [(p.kind, p.name, p.path) for p in found] == [
        ("ClusterQueue", "old", "spec.admissionChecksStrategy.admissionChecks[0].name"),
        ("Cohort", "team", "spec.resourceGroups[0].flavors[0].name"),
    ]
    assert found[1].message == 'no ResourceFlavor "nope" among the inputs: this quota can never be used'


def test_a_cohort_needs_no_object(load: Loader) -> None:
    assert warnings_for(load, *SETUP[:1], cluster_queue(extra="  cohortName: implicit\n"), SETUP[2]) == []


def test_a_namespace_selector_that_selects_no_namespace(load: Loader) -> None:
    found = warnings_for(
        load,
        FLAVOR.format(name="f"),
        NAMESPACE.format(name="team-a", labels="{team: a}"),
        cluster_queue("absent", selector=None),
        cluster_queue("nobody", selector="{matchLabels: {team: z}}"),
        cluster_queue("by-name", selector="{matchLabels: {kubernetes.io/metadata.name: default}}"),
        cluster_queue("everyone", selector="{}"),
        cluster_queue("by-label", selector="{matchExpressions: [{key: team, operator: In, values: [a]}]}"),
        local_queue(cq="everyone"),  # uses namespace default: it exists with only its name label
    )
    assert lines(found) == [
        "3: ClusterQueue absent: spec.namespaceSelector: not set: a ClusterQueue without a namespaceSelector "
        "admits workloads from no namespace (namespaceSelector: {} admits every namespace)",
        "4: ClusterQueue nobody: spec.namespaceSelector: selects none of the namespaces among the inputs "
        "(default, team-a): it admits no workload",
    ]


def test_a_local_queue_in_a_namespace_its_cluster_queue_does_not_select(load: Loader) -> None:
    found = warnings_for(
        load,
        FLAVOR.format(name="f"),
        cluster_queue(selector="{matchLabels: {kubernetes.io/metadata.name: a}}"),
        local_queue(namespace="a"),
        local_queue(namespace="b"),
    )
    assert lines(found) == [
        '4: LocalQueue b/lq: spec.clusterQueue: the namespaceSelector of ClusterQueue "cq" does not select '
        'namespace "b": workloads in this LocalQueue are never admitted'
    ]


def test_an_admitted_workload_naming_a_missing_cluster_queue(load: Loader) -> None:
    status = (
        "status:\n  admission:\n    clusterQueue: gone\n    podSetAssignments:\n"
        "    - {name: main, count: 1, flavors: {cpu: f}}\n"
    )
    found = warnings_for(load, *SETUP, workload(status=status))
    assert [(p.path, p.message) for p in found] == [
        ("status.admission.clusterQueue", 'no ClusterQueue "gone" among the inputs: its quota is counted nowhere')
    ]


def test_objects_that_a_timed_change_brings_count_as_defined(load: Loader) -> None:
    later = cluster_queue(flavor="late").replace("metadata: {name: cq}", "metadata: {name: cq, annotations: {pykueue.dev/at: 10s}}")
    found = warnings_for(load, *SETUP, later, FLAVOR.format(name="late"))
    assert found == []
    found = warnings_for(load, *SETUP, later)
    assert [(p.source.doc, p.path) for p in found] == [(4, "spec.resourceGroups[0].flavors[0].name")]


@pytest.mark.parametrize(
    "key",
    [
        "kueue.x-k8s.io/queue",
        "kueue.x-k8s.io/queuename",
        "kueue.x-k8s.io/queue_name",
        "kueue.x-k8s.io/queueName",
        "kueue.x-k8s.io/queue-nmae",
        "kueue.k8s.io/queue-name",
        "x-k8s.io/queue-name",
        "kueue/queue-name",
        "queue-name",
    ],
)
def test_misspellings_of_the_queue_label(key: str) -> None:
    assert misspelt_queue_label(key)


@pytest.mark.parametrize(
    "key",
    [
        "kueue.x-k8s.io/queue-name",
        "kueue.x-k8s.io/priority-class",
        "kueue.x-k8s.io/pod-group-name",
        "kueue.x-k8s.io/managed",
        "kueue.x-k8s.io/max-exec-time-seconds",
        "app.kubernetes.io/name",
        "volcano.sh/queue-name",
        "team",
    ],
)
def test_other_labels_are_not_misspellings(key: str) -> None:
    assert not misspelt_queue_label(key)


def test_a_job_left_unmanaged_by_a_misspelt_label_or_the_removed_annotation(load: Loader) -> None:
    found = warnings_for(
        load,
        *SETUP,
        job("typo", labels="{kueue.x-k8s.io/queue: lq, app: x}"),
        job("annotated", labels="{}", annotations="{kueue.x-k8s.io/queue-name: lq}"),
        job("empty", labels='{kueue.x-k8s.io/queue-name: ""}'),
        job("plain", labels="{app: x}"),  # simply not meant for Kueue
    )
    unmanaged = "without it Kueue does not manage this Job"
    assert lines(found) == [
        "4: Job default/typo: metadata.labels[kueue.x-k8s.io/queue]: looks like a misspelling of the label "
        f"kueue.x-k8s.io/queue-name; {unmanaged}",
        "5: Job default/annotated: metadata.annotations[kueue.x-k8s.io/queue-name]: Kueue no longer reads the queue "
        f"name from an annotation: make it the label kueue.x-k8s.io/queue-name; {unmanaged}",
        "6: Job default/empty: metadata.labels[kueue.x-k8s.io/queue-name]: empty: the label must name a LocalQueue; "
        f"{unmanaged}",
    ]


def test_warnings_come_in_input_order_with_the_loaders_own(tmp_path: Path) -> None:
    from pykueue.api import load_paths

    scripted = workload("s").replace(
        "namespace: default}", "namespace: default, annotations: {pykueue.dev/admission-checks: ghost=Ready@1s}}"
    )
    first = write(tmp_path, "---\n".join([workload(queue="nope"), *SETUP]), "b.yaml")
    second = write(tmp_path, scripted + "---\n" + workload("t", queue="nope"), "a.yaml")
    inputs, problems = load_paths([str(first), str(second)])
    assert problems == []
    assert [(Path(p.source.file).name, p.source.doc, p.path) for p in all_warnings(inputs)] == [
        ("b.yaml", 1, "spec.queueName"),
        ("a.yaml", 1, "metadata.annotations[pykueue.dev/admission-checks]"),
        ("a.yaml", 2, "spec.queueName"),
    ]


def test_validate_prints_them_as_warnings_and_exits_0(tmp_path: Path) -> None:
    f = write(tmp_path, "---\n".join([*SETUP, workload(queue="lq2")]))
    proc = subprocess.run([sys.executable, "-m", "pykueue.cli", "validate", str(f)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert (proc.returncode, proc.stdout) == (0, "1 path(s) valid\n")
    assert proc.stderr.splitlines() == [
        f'Warning: {f}:25: Workload default/w: spec.queueName: no LocalQueue "lq2" in namespace "default" among '
        'the inputs: the Workload stays pending (did you mean "lq"?)'
    ]


def test_simulate_keeps_stderr_clean(tmp_path: Path) -> None:
    """The simulator does not print them (scenarios reproduce such states on purpose)."""
    f = write(tmp_path, "---\n".join([*SETUP, workload(queue="lq2")]))
    proc = subprocess.run([sys.executable, "-m", "pykueue.cli", "simulate", str(f), "--output", "json"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert (proc.returncode, proc.stderr) == (0, "")
