"""``metadata.generateName``: Jobs and Workloads named as the API server names them, but reproducibly."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pykueue.api.names import GENERATED_ALPHABET, generated_name
from pykueue.jobs.job import workload as job_workload

from .helpers import Loader, only_problem, write

ROOT = Path(__file__).resolve().parents[2]
GENERATED = re.compile(rf"sample-job-[{GENERATED_ALPHABET}]{{5}}")

SETUP = """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: default-flavor
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: cluster-queue
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: ["cpu", "memory"]
    flavors:
    - name: "default-flavor"
      resources:
      - name: "cpu"
        nominalQuota: 9
      - name: "memory"
        nominalQuota: 36Gi
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  namespace: "default"
  name: "user-queue"
spec:
  clusterQueue: "cluster-queue"
"""

# Kueue's own "run a job" sample (site/static/examples/jobs/sample-job.yaml)
SAMPLE_JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  generateName: sample-job-
  namespace: default
  labels:
    kueue.x-k8s.io/queue-name: user-queue
spec:
  parallelism: 3
  completions: 3
  suspend: true
  template:
    spec:
      containers:
      - name: dummy-job
        image: registry.k8s.io/e2e-test-images/agnhost:2.53
        command: [ "/bin/sh" ]
        args: [ "-c", "sleep 60" ]
        resources:
          requests:
            cpu: "1"
            memory: "200Mi"
      restartPolicy: Never
"""

WORKLOAD = """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata:
  {meta}
  namespace: default
spec:
  queueName: user-queue
  podSets:
  - name: main
    count: 1
    template: {{spec: {{containers: [{{name: c, resources: {{requests: {{cpu: 1}}}}}}]}}}}
"""


def _simulate(path: Path, hash_seed: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    return subprocess.run([sys.executable, "-m", "pykueue.cli", "simulate", str(path), "--output", "json"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)


def test_the_upstream_sample_job_runs_under_a_generated_name_that_every_run_repeats(tmp_path: Path) -> None:
    path = write(tmp_path, SETUP + "---\n" + SAMPLE_JOB)
    first, second = _simulate(path, "1"), _simulate(path, "2")  # string hashing differs between them
    assert first.returncode == 0 and first.stderr == "", first.stderr
    assert first.stdout == second.stdout
    result = json.loads(first.stdout)
    (workload,) = result["workloads"]
    assert (workload["kind"], workload["namespace"], workload["state"]) == ("Job", "default", "Admitted")
    assert GENERATED.fullmatch(workload["name"]), workload["name"]
    assert {event["workload"] for event in result["events"]} == {f"default/{workload['name']}"}


def test_copies_of_one_document_get_different_names_and_the_same_ones_each_time(load: Loader) -> None:
    text = SETUP + "---\n" + SAMPLE_JOB + "---\n" + SAMPLE_JOB + "---\n" + SAMPLE_JOB
    inputs, problems = load(text)
    assert problems == []
    names = [sw.workload.name for sw in inputs.workloads]
    assert len(set(names)) == 3 and all(GENERATED.fullmatch(name) for name in names)
    assert [sw.workload.name for sw in load(text)[0].workloads] == names
    # an unrelated document added before them renames nothing
    flavor = "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: other}\n---\n"
    assert [sw.workload.name for sw in load(flavor + text)[0].workloads] == names


def test_a_different_document_gets_a_different_name(load: Loader) -> None:
    inputs, _ = load(SAMPLE_JOB + "---\n" + SAMPLE_JOB.replace("parallelism: 3", "parallelism: 2"))
    first, second = (sw.workload.name for sw in inputs.workloads)
    assert first != second


def test_a_generated_name_avoids_the_names_the_inputs_give(load: Loader) -> None:
    (taken,) = (sw.workload.name for sw in load(SAMPLE_JOB)[0].workloads)
    named_job = SAMPLE_JOB.replace("generateName: sample-job-", f"name: {taken}")
    named_workload = WORKLOAD.format(meta=f"name: {taken}")
    for other in (named_job, named_workload):  # a Job and a Workload of one name would be one workload
        inputs, problems = load(SAMPLE_JOB + "---\n" + other)
        assert problems == []
        generated, given = (sw.workload.name for sw in inputs.workloads)
        assert given == taken and generated != taken and GENERATED.fullmatch(generated)


def test_a_workload_may_have_a_generated_name_too(load: Loader) -> None:
    inputs, problems = load(SETUP + "---\n" + WORKLOAD.format(meta="generateName: sample-job-"))
    assert problems == []
    (submitted,) = inputs.workloads
    assert submitted.workload.kind == "Workload" and GENERATED.fullmatch(submitted.workload.name)


def test_the_prefix_is_cut_so_that_the_name_fits_63_characters(load: Loader) -> None:
    long = "a" * 70 + "-"
    inputs, problems = load(SAMPLE_JOB.replace("sample-job-", long))
    assert problems == []
    (submitted,) = inputs.workloads
    name = submitted.workload.name
    assert len(name) == 63 and name.startswith("a" * 58)
    assert re.fullmatch(f"[{GENERATED_ALPHABET}]{{5}}", name[58:])


def test_the_jobs_workload_is_named_after_the_generated_job_name(
    load: Loader, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[dict[str, Any]] = []
    real = job_workload.workload_from_job

    def recording(job: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        built.append(real(job, **kwargs))
        return built[-1]

    monkeypatch.setattr(job_workload, "workload_from_job", recording)
    inputs, problems = load(SAMPLE_JOB)
    assert problems == []
    (submitted,) = inputs.workloads
    (workload,) = built
    assert workload["metadata"]["name"] == job_workload.workload_name_for_job(submitted.workload.name)
    assert workload["metadata"]["ownerReferences"][0]["name"] == submitted.workload.name


def test_a_job_with_neither_name_nor_generate_name_is_still_an_error(load: Loader) -> None:
    _, problems = load(SAMPLE_JOB.replace("  generateName: sample-job-\n", ""))
    problem = only_problem(problems)
    assert (problem.kind, problem.path) == ("Job", "metadata.name")
    assert problem.message.startswith("Required value")


def test_an_invalid_prefix_is_reported_on_generate_name(load: Loader) -> None:
    _, problems = load(SAMPLE_JOB.replace("sample-job-", "Sample_Job-"))
    problem = only_problem(problems)
    assert problem.path == "metadata.generateName" and '"Sample_Job-"' in problem.message


def test_generated_name_uses_the_api_servers_alphabet_and_is_deterministic() -> None:
    names = {generated_name("p-", str(i).encode()) for i in range(200)}
    assert len(names) == 200  # 27**5 possible suffixes
    assert all(re.fullmatch(f"p-[{GENERATED_ALPHABET}]{{5}}", name) for name in names)
    assert generated_name("p-", b"seed") == generated_name("p-", b"seed")
    assert GENERATED_ALPHABET == "bcdfghjklmnpqrstvwxz2456789"
