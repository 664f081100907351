"""Kueue objects and Jobs the end-to-end tests apply, and what they read back: YAML builders whose
quotas and requests the tests' expected outcomes are worked out from, plus small readers of state."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import yaml

from tests.e2e.conftest import Kueue, condition, eventually

GPU_FLAVOR = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: gpu-h100}
spec:
  nodeLabels: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
"""
PLAIN_FLAVOR = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: plain}
"""


def cluster_queue(name: str, cpu: str, *, flavor: str = "plain", cohort: str | None = None,
                  strategy: str = "BestEffortFIFO", preemption: str = "{}", extra: str = "",
                  memory: str | None = None) -> str:
    """A ClusterQueue of ``cpu`` (and ``memory``, when given) on one flavor."""
    memory_quota = f'\n      - {{name: memory, nominalQuota: "{memory}"}}' if memory else ""
    return f"""
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {{name: {name}}}
spec:
  {f"cohortName: {cohort}" if cohort else ""}
  namespaceSelector: {{}}
  queueingStrategy: {strategy}
  preemption: {preemption}
  resourceGroups:
  - coveredResources: [cpu{", memory" if memory else ""}]
    flavors:
    - name: {flavor}
      resources:
      - {{name: cpu, nominalQuota: "{cpu}"}}{memory_quota}
  {extra}
"""


def checked_queue(kueue: Kueue, ns: str, cpu: str) -> None:
    """The plain flavor, a ClusterQueue ``ns`` of ``cpu`` with one admission check (``NS-check``, whose
    controller is the test), and LocalQueue ``lq``."""
    kueue.apply(PLAIN_FLAVOR)
    kueue.apply(f"""
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata: {{name: {ns}-check}}
spec: {{controllerName: test.pykueue.dev/check}}
""")
    kueue.apply(cluster_queue(ns, cpu, extra=f"admissionChecksStrategy: {{admissionChecks: [{{name: {ns}-check}}]}}"))
    kueue.apply(local_queue(ns, ns))


def local_queue(namespace: str, cq: str, name: str = "lq") -> str:
    return f"""
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {{name: {name}, namespace: {namespace}}}
spec: {{clusterQueue: {cq}}}
"""


def priority_classes(ns: str) -> str:
    """PriorityClasses `NS-low` (10) and `NS-high` (1000)."""
    return f"""
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {{name: {ns}-low}}
value: 10
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {{name: {ns}-high}}
value: 1000
"""


def low_priority_job_running(kueue: Kueue, ns: str) -> None:
    """A 4 cpu queue that preempts by priority, classes `NS-low` (10) and `NS-high` (1000), and a
    3 cpu `low` Job running in it."""
    kueue.apply(PLAIN_FLAVOR)
    kueue.apply(priority_classes(ns))
    kueue.apply(cluster_queue(ns, "4", preemption="{withinClusterQueue: LowerPriority}"))
    kueue.apply(local_queue(ns, ns))
    kueue.apply(job("low", ns, "3", priority_class=f"{ns}-low"))
    eventually(lambda: running(kueue, "low", ns), what="low running")


def job(name: str, namespace: str, cpu: str, *, queue: str = "lq", pods: int = 1, runs_for: str = "1h",
        priority_class: str | None = None) -> str:
    return f"""
apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
  namespace: {namespace}
  labels: {{kueue.x-k8s.io/queue-name: {queue}}}
spec:
  parallelism: {pods}
  completions: {pods}
  suspend: true
  template:
    metadata: {{annotations: {{pod-complete.stage.kwok.x-k8s.io/delay: "{runs_for}"}}}}
    spec:
      {f"priorityClassName: {priority_class}" if priority_class else ""}
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        resources: {{requests: {{cpu: "{cpu}"}}}}
"""


def suspended(kueue: Kueue, name: str, namespace: str) -> bool:
    obj = kueue.get("job", name, namespace)
    return bool(obj and obj["spec"].get("suspend"))


def stopped(kueue: Kueue, name: str, namespace: str) -> bool:
    """Suspended, and nothing of it active or terminating any more: the stop has taken effect."""
    obj = kueue.get("job", name, namespace)
    status = (obj or {}).get("status") or {}
    return bool(obj and obj["spec"].get("suspend") and not status.get("active") and not status.get("terminating"))


def running(kueue: Kueue, name: str, namespace: str) -> bool:
    obj = kueue.get("job", name, namespace)
    return bool(obj and obj["spec"].get("suspend") is False)


def events(kueue: Kueue, namespace: str, name: str) -> list[str]:
    out = kueue.cluster.kubectl("get", "events", "-n", namespace, "--field-selector",
                                f"involvedObject.name={name}", "-o", "json").stdout
    return [e["reason"] for e in sorted(json.loads(out)["items"], key=lambda e: e.get("lastTimestamp") or "")]


def bare_workload(name: str, namespace: str, queue: str, cpu: str = "1") -> str:
    return f"""
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {{name: {name}, namespace: {namespace}}}
spec:
  queueName: {queue}
  podSets:
  - name: main
    count: 1
    template:
      spec:
        restartPolicy: Never
        containers:
        - {{name: c, image: busybox, resources: {{requests: {{cpu: "{cpu}"}}}}}}
"""


def active(obj: dict | None) -> tuple[str, str, str] | None:
    cond = condition(obj, "Active")
    return (cond["status"], cond["reason"], cond["message"]) if cond else None


def gpu_queue(kueue: Kueue, ns: str, cpu: str, preemption: str = "{}") -> None:
    kueue.apply(GPU_FLAVOR)
    kueue.apply(cluster_queue(ns, cpu, flavor="gpu-h100", preemption=preemption))
    kueue.apply(local_queue(ns, ns))


def as_created(kueue: Kueue, obj: dict[str, Any]) -> dict[str, Any]:
    """The object as the API server would store it, webhooks applied (a server-side dry run: the real
    one may be admitted and started before a read could see it suspended)."""
    out = kueue.cluster.kubectl("create", "--dry-run=server", "-o", "json", "-f", "-", input=json.dumps(obj)).stdout
    return json.loads(out)


def workload_for(kueue: Kueue, ns: str, kind: str, owner: str) -> dict[str, Any] | None:
    for wl in kueue.items("workloads.kueue.x-k8s.io", ns):
        if any(o.get("kind") == kind and o.get("name") == owner for o in wl["metadata"].get("ownerReferences") or []):
            return wl
    return None


def refused(result: subprocess.CompletedProcess[str], hook: str, message: str) -> None:
    """kubectl was refused by the admission webhook ``hook`` with ``message`` in its answer."""
    assert result.returncode != 0, result.stdout
    assert f'admission webhook "{hook}" denied the request' in result.stderr, result.stderr
    assert message in result.stderr, result.stderr


def scenario_in_namespace(text: str, ns: str) -> list[dict[str, Any]]:
    """A scenario's objects (its Configuration left out) moved into the test's namespace, its
    ClusterQueue named after it, so that a live run of the scenario stays the test's own."""
    docs = [d for d in yaml.safe_load_all(text) if d and d.get("kind") != "Configuration"]
    for d in docs:
        if d["kind"] == "ClusterQueue":
            d["metadata"]["name"] = ns
        elif d["kind"] == "LocalQueue":
            d["spec"]["clusterQueue"] = ns
        if d["kind"] not in ("ResourceFlavor", "ClusterQueue"):
            d["metadata"]["namespace"] = ns
    return docs
