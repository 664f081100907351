"""The loader: files and directories, document numbering, kinds, duplicates, Jobs, time."""

import math
import re
from pathlib import Path

import pytest

from pykueue.api import load_paths
from pykueue.api.inputs import Change, Source
from pykueue.engine import model

from .helpers import Loader, only_problem, write

FLAVOR = "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata:\n  name: {name}\n"
CONTAINERS = "{spec: {containers: [{name: a, resources: {requests: {cpu: 1}}}]}}"


def _wl(name: str, annotations: str = "", extra_meta: str = "", namespace: str = "ns") -> str:
    ann = f"  annotations:\n{annotations}" if annotations else ""
    return (
        f"apiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\nmetadata:\n  name: {name}\n  namespace: {namespace}\n"
        f"{extra_meta}{ann}spec:\n  queueName: lq\n  podSets:\n  - name: main\n    template: {CONTAINERS}\n"
    )


def test_documents_are_numbered_per_file_and_empty_ones_count(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "---\n"
        + FLAVOR.format(name="a")
        + "---\n---\n# nothing\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: p}\n",
    )
    inputs, problems = load_paths([str(path)])
    assert [f.name for f in inputs.resource_flavors] == ["a"]
    problem = only_problem(problems)
    assert problem.source == Source(str(path), 4)
    assert (
        str(problem)
        == f'{path}:4: ConfigMap p: kind: unknown kind "ConfigMap" for apiVersion "v1" (known kinds: Namespace, Pod)'
    )


def test_unknown_api_version(load: Loader) -> None:
    _, problems = load("apiVersion: kueue.x-k8s.io/v1alpha9\nkind: ClusterQueue\nmetadata: {name: cq}\n")
    problem = only_problem(problems)
    assert (problem.kind, problem.name, problem.path) == ("ClusterQueue", "cq", "apiVersion")
    assert 'unknown apiVersion "kueue.x-k8s.io/v1alpha9"' in problem.message


def test_yaml_errors_are_reported_and_later_documents_still_read(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        FLAVOR.format(name="a") + "---\nkind: [unclosed\n---\n- a list\n---\n" + FLAVOR.format(name="b"),
    )
    inputs, problems = load_paths([str(path)])
    assert [f.name for f in inputs.resource_flavors] == ["a", "b"]
    assert [(p.source.doc, p.path) for p in problems] == [(2, "<document>"), (3, "<document>")]
    assert problems[0].message == (
        "YAML syntax error at line 7, column 1: while parsing a flow sequence started at line 6, "
        "did not find expected ',' or ']'"
    )
    assert problems[1].message == "a document must be a mapping (a Kubernetes object)"


def test_missing_file_and_all_problems_reported(tmp_path: Path) -> None:
    good = write(tmp_path, "apiVersion: v1\nkind: Namespace\nmetadata: {name: Bad}\n")
    _, problems = load_paths([str(tmp_path / "missing.yaml"), str(good)])
    assert [(p.source.file, p.path) for p in problems] == [
        (str(tmp_path / "missing.yaml"), "<file>"),
        (str(good), "metadata.name"),
    ]
    assert problems[0].message == "no such file or directory"


def test_directory_reads_yaml_files_sorted_not_recursively(tmp_path: Path) -> None:
    write(tmp_path, FLAVOR.format(name="second"), "b.yml")
    write(tmp_path, FLAVOR.format(name="first"), "a.yaml")
    write(tmp_path, FLAVOR.format(name="ignored"), "c.txt")
    (tmp_path / "sub").mkdir()
    write(tmp_path / "sub", FLAVOR.format(name="nested"), "d.yaml")
    inputs, problems = load_paths([str(tmp_path)])
    assert problems == []
    assert [f.name for f in inputs.resource_flavors] == ["first", "second"]


def test_duplicates_are_errors_across_versions_and_files(tmp_path: Path) -> None:
    first = write(tmp_path, FLAVOR.format(name="a"), "1.yaml")
    second = write(tmp_path, FLAVOR.format(name="a").replace("v1beta2", "v1beta1"), "2.yaml")
    inputs, problems = load_paths([str(first), str(second)])
    assert len(inputs.resource_flavors) == 1
    problem = only_problem(problems)
    assert (problem.source, problem.path) == (Source(str(second), 1), "metadata.name")
    assert problem.message == f"duplicate object: ResourceFlavor a is already defined at {first}:1"


def test_same_name_in_two_namespaces_is_not_a_duplicate(load: Loader) -> None:
    inputs, problems = load(_wl("w", namespace="a") + "---\n" + _wl("w", namespace="b"))
    assert problems == []
    assert [sw.workload.key for sw in inputs.workloads] == ["a/w", "b/w"]


def test_simulation_annotations(load: Loader) -> None:
    inputs, problems = load(
        _wl(
            "w",
            "    pykueue.dev/arrival: 1m30s\n    pykueue.dev/runtime: '250ms'\n    pykueue.dev/ready-after: never\n",
        )
        + "---\n"
        + _wl("v", "    pykueue.dev/ready-after: '5'\n")
    )
    assert problems == []
    w, v = inputs.workloads
    assert (w.arrival, w.runtime, w.ready_after) == (90.0, 0.25, math.inf)
    assert (v.arrival, v.runtime, v.ready_after) == (0.0, None, 5.0)
    assert w.workload.creation_time == 90.0  # no timestamp: created when it arrives
    # the simulation's own annotations are read into the fields above, not kept twice
    assert "pykueue.dev/arrival" not in w.annotations


@pytest.mark.parametrize(
    ("manifest", "path", "message"),
    [
        (
            _wl("w", "    pykueue.dev/arrival: soon\n"),
            "metadata.annotations[pykueue.dev/arrival]",
            "invalid duration",
        ),
        (
            _wl("w", "    pykueue.dev/runtime: -5s\n"),
            "metadata.annotations[pykueue.dev/runtime]",
            "non-negative",
        ),
        (
            _wl("w", "    pykueue.dev/admission-checks: prov=Done@5s\n"),
            "metadata.annotations[pykueue.dev/admission-checks]",
            "state 'Done' is not one of Ready, Retry, Rejected, Pending",
        ),
        (
            _wl("w", "    pykueue.dev/runtim: 5s\n"),
            "metadata.annotations[pykueue.dev/runtim]",
            "unknown simulation annotation",
        ),
        (
            FLAVOR.format(name="f") + "  annotations: {pykueue.dev/arrival: 5s}\n",
            "metadata.annotations[pykueue.dev/arrival]",
            "only a Workload or a Job",
        ),
        (
            _wl("w", "    pykueue.dev/at: 10s\n    pykueue.dev/delete-at: 5s\n"),
            "metadata.annotations[pykueue.dev/delete-at]",
            "must not be earlier than",
        ),
    ],
)
def test_invalid_simulation_annotations(load: Loader, manifest: str, path: str, message: str) -> None:
    _, problems = load(manifest)
    problem = only_problem(problems)
    assert problem.path == path
    assert message in problem.message


def test_admission_check_script_is_accepted(load: Loader) -> None:
    inputs, problems = load(
        _wl("w", "    pykueue.dev/admission-checks: prov=Retry@10s,Ready@5s;budget=Ready@0s\n")
    )
    assert problems == []
    assert inputs.workloads[0].checks == {
        "prov": (("Retry", 10.0), ("Ready", 5.0)),
        "budget": (("Ready", 0.0),),
    }


def test_creation_timestamps_map_onto_the_virtual_clock(load: Loader) -> None:
    inputs, problems = load(
        _wl("early", extra_meta="  creationTimestamp: 2024-01-01T00:00:00Z\n")
        + "---\n"
        + _wl(
            "late",
            extra_meta="  creationTimestamp: '2024-01-01T00:01:30+00:00'\n",
            annotations="    pykueue.dev/arrival: 10s\n",
        )
        + "---\n"
        + _wl("unstamped", annotations="    pykueue.dev/arrival: 20s\n")
    )
    assert problems == []
    times = {sw.workload.name: (sw.workload.creation_time, sw.arrival) for sw in inputs.workloads}
    assert times == {"early": (-90.0, 0.0), "late": (0.0, 10.0), "unstamped": (20.0, 20.0)}


def test_annotation_values_must_be_strings(load: Loader) -> None:
    _, problems = load(_wl("w", "    pykueue.dev/runtime: 5\n"))
    problem = only_problem(problems)
    assert (problem.path, problem.message) == (
        "metadata.annotations[pykueue.dev/runtime]",
        "must be a string, got integer",
    )


def test_invalid_creation_timestamp(load: Loader) -> None:
    _, problems = load(_wl("w", extra_meta="  creationTimestamp: yesterday\n"))
    assert only_problem(problems).path == "metadata.creationTimestamp"


def test_timed_changes_replace_and_delete(load: Loader) -> None:
    cq = "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata:\n  name: cq\n{ann}spec:\n  stopPolicy: {stop}\n"
    inputs, problems = load(
        cq.format(ann="", stop="None")
        + "---\n"
        + cq.format(ann="  annotations: {pykueue.dev/at: 30s}\n", stop="Hold")
        + "---\n"
        + cq.format(ann="  annotations: {pykueue.dev/at: 1m}\n", stop="HoldAndDrain")
        + "---\n"
        + _wl("w", "    pykueue.dev/delete-at: 2m\n")
        + "---\n"
        + _wl("w", "    pykueue.dev/at: 45s\n").replace("queueName: lq\n", "queueName: lq\n  active: false\n")
    )
    assert problems == []
    assert [cq.stop_policy for cq in inputs.cluster_queues] == ["None"]
    assert [sw.workload.active for sw in inputs.workloads] == [True]
    summary = [(c.at, c.kind, c.key, c.delete, c.source.doc) for c in inputs.changes]
    assert summary == [
        (30.0, "ClusterQueue", "cq", False, 2),
        (60.0, "ClusterQueue", "cq", False, 3),
        (120.0, "Workload", "ns/w", True, 4),
        (45.0, "Workload", "ns/w", False, 5),
    ]
    first, second, deletion, deactivation = inputs.changes
    assert first.obj == model.ClusterQueue(name="cq", stop_policy="Hold")
    assert second.obj == model.ClusterQueue(name="cq", stop_policy="HoldAndDrain")
    assert deletion == Change(120.0, "Workload", "ns/w", None, deletion.source, delete=True)
    assert deactivation.obj.workload.active is False
    assert deactivation.obj.workload.creation_time == 0.0  # the replaced workload keeps its creation time


def test_two_changes_at_the_same_time_are_duplicates(load: Loader) -> None:
    changed = FLAVOR.format(name="a") + "  annotations: {pykueue.dev/at: 5s}\n"
    _, problems = load(FLAVOR.format(name="a") + "---\n" + changed + "---\n" + changed)
    problem = only_problem(problems)
    assert (problem.source.doc, problem.message.split(":")[0]) == (3, "a second change at the same time")


def test_job_without_queue_label_is_ignored(load: Loader, fake_job_integration: None) -> None:
    inputs, problems = load(
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: plain}\nspec:\n  anything: [goes, here]\n"
    )
    assert (inputs.workloads, problems) == ([], [])


JOB = """
apiVersion: batch/v1
kind: Job
metadata:
  name: sample-job
  namespace: team-a
  labels:
    kueue.x-k8s.io/queue-name: user-queue
{labels}  annotations:
    pykueue.dev/runtime: 60s
spec:
  parallelism: 3
  template:
    spec:
{pod}      containers:
      - name: main
        resources:
          requests: {{cpu: 500m}}
          limits: {{memory: 1Gi}}
      restartPolicy: Never
"""


def test_job_becomes_a_workload(load: Loader, fake_job_integration: None) -> None:
    inputs, problems = load(JOB.format(labels="", pod=""))
    assert problems == []
    (submitted,) = inputs.workloads
    assert submitted.runtime == 60.0
    assert submitted.workload == model.Workload(
        namespace="team-a",
        name="sample-job",
        queue_name="user-queue",
        pod_sets=(model.PodSet(name="main", count=3, requests={"cpu": 500, "memory": 2**30}),),
        kind="Job",
    )
    assert inputs.namespaces == [model.Namespace("team-a", {"kubernetes.io/metadata.name": "team-a"})]


def test_job_priority(load: Loader, fake_job_integration: None) -> None:
    classes = (
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: default-pc}\nvalue: 9\nglobalDefault: true\n---\n"
        "apiVersion: kueue.x-k8s.io/v1beta1\nkind: WorkloadPriorityClass\nmetadata: {name: wpc}\nvalue: 77\n---\n"
    )
    inputs, problems = load(
        classes
        + JOB.format(labels="", pod="")
        + "---\n"
        + JOB.format(labels="    kueue.x-k8s.io/priority-class: wpc\n", pod="").replace(
            "sample-job", "with-wpc"
        )
        + "---\n"
        + JOB.format(labels="", pod="      priorityClassName: system-node-critical\n").replace(
            "sample-job", "critical"
        )
        + "---\n"
        + JOB.format(labels="", pod="      priorityClassName: missing\n").replace("sample-job", "broken")
    )
    got = {
        sw.workload.name: (sw.workload.priority, sw.workload.priority_class_name) for sw in inputs.workloads
    }
    assert got == {
        "sample-job": (9, "default-pc"),
        "with-wpc": (77, "wpc"),
        "critical": (2000001000, "system-node-critical"),
    }
    problem = only_problem(problems)
    assert (problem.kind, problem.name, problem.path) == (
        "Job",
        "broken",
        "spec.template.spec.priorityClassName",
    )
    assert problem.message == 'PriorityClass "missing" not found'


def test_job_and_workload_of_the_same_name_collide(load: Loader, fake_job_integration: None) -> None:
    inputs, problems = load(JOB.format(labels="", pod="") + "---\n" + _wl("sample-job", namespace="team-a"))
    problem = only_problem(problems)
    assert (problem.kind, problem.source.doc) == ("Workload", 2)
    assert "would be the same workload as Job team-a/sample-job" in problem.message
    assert [sw.workload.kind for sw in inputs.workloads] == ["Job"]


def test_job_problems_point_at_the_job(load: Loader, fake_job_integration: None) -> None:
    bad = JOB.format(labels="", pod="").replace("requests: {cpu: 500m}", "requests: {cpu: 500m, pods: 1}")
    _, problems = load(bad)
    problem = only_problem(problems)
    assert (problem.kind, problem.name) == ("Job", "sample-job")
    assert problem.path == "spec.template.spec.containers[0].resources.requests[pods]"


def test_job_rejected_by_the_integration(
    load: Loader, monkeypatch: pytest.MonkeyPatch, fake_job_integration: None
) -> None:
    import sys

    def reject(job: dict) -> dict:
        raise ValueError("completions must be set")

    monkeypatch.setattr(sys.modules["pykueue.jobs.job.workload"], "workload_from_job", reject)
    _, problems = load(JOB.format(labels="", pod=""))
    assert [(p.kind, p.path, p.message) for p in problems] == [("Job", "spec", "completions must be set")]


def test_the_real_job_integration_if_present(load: Loader) -> None:
    pytest.importorskip("pykueue.jobs.job.workload")
    inputs, problems = load(JOB.format(labels="", pod=""))
    assert problems == []
    assert [(sw.workload.kind, sw.workload.name) for sw in inputs.workloads] == [("Job", "sample-job")]


def test_loader_never_raises(tmp_path: Path) -> None:
    garbage = write(tmp_path, "\x00\x01: [\n---\n{{{\n---\n42\n---\napiVersion: 5\n---\nkind: 7\n", "g.yaml")
    binary = tmp_path / "bin.yaml"
    binary.write_bytes(b"\xff\xfe\x00")
    inputs, problems = load_paths([str(garbage), str(binary), str(tmp_path / "nope")])
    assert len(problems) == 7
    assert inputs.workloads == []


def test_generate_name_gives_reproducible_names(load: Loader) -> None:
    generated = _wl("x").replace("  name: x\n", "  generateName: sample-job-\n")
    inputs, problems = load(
        generated + "---\n" + generated + "---\n" + generated.replace("sample-job-", "Bad_")
    )
    names = [sw.workload.name for sw in inputs.workloads]
    assert len(set(names)) == 2 and all(re.fullmatch(r"sample-job-[bcdfghjklmnpqrstvwxz2456789]{5}", n) for n in names)
    assert names == [sw.workload.name for sw in load(generated + "---\n" + generated)[0].workloads]
    problem = only_problem(problems)
    assert (problem.name[:4], problem.path) == ("Bad_", "metadata.generateName")


def test_load_documents_from_memory(tmp_path: Path) -> None:
    from pykueue.api import load_documents

    spec = {
        "queueName": "lq",
        "podSets": [{"name": "main", "template": {"spec": {"containers": [{"name": "a"}]}}}],
    }
    manifests = [
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "metadata": {"name": f"w{i}"},
            "spec": spec,
        }
        for i in range(3)
    ]
    manifests.append({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}})
    config = write(
        tmp_path,
        "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nmanageJobsWithoutQueueName: true\n",
    )
    inputs, problems = load_documents(manifests, source="gen.yaml", config_path=str(config))
    assert [sw.workload.name for sw in inputs.workloads] == ["w0", "w1", "w2"]
    assert inputs.config.manage_jobs_without_queue_name is True
    assert [str(p) for p in problems] == [
        'gen.yaml:4: Secret s: kind: unknown kind "Secret" for apiVersion "v1" (known kinds: Namespace, Pod)'
    ]


def _cohort(name: str, parent: str | None = None, at: str | None = None) -> str:
    meta = f"  annotations: {{pykueue.dev/at: {at}}}\n" if at else ""
    spec = f"spec: {{parentName: {parent}}}\n" if parent else ""
    return f"apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata:\n  name: {name}\n{meta}{spec}"


def test_cohort_depth_limit_follows_timed_changes_and_not_cycles(load: Loader) -> None:
    """A cycle is cut loose by the engine, however long; a timed change that deepens a tree counts."""
    cycle = [_cohort(f"r{i}", f"r{(i + 1) % 150}") for i in range(150)]
    chain = [_cohort("c0")] + [_cohort(f"c{i}", f"c{i - 1}") for i in range(1, 100)]
    _, problems = load("---\n".join(cycle + chain))
    assert problems == []
    _, problems = load("---\n".join(cycle + chain + [_cohort("c0", "top", at="5s")]))
    problem = only_problem(problems)
    assert (problem.source.doc, problem.name, problem.path) == (251, "c0", "spec.parentName")
    assert problem.message.startswith('Invalid value: "top": this puts cohort c99 101 levels deep')
