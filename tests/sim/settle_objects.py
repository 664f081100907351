"""One queue (optionally behind an admission check) and one-cpu Workloads with the annotations that
script their timeline, as manifests for the simulator's settling tests."""

from __future__ import annotations

from tests.objects import workload_yaml

QUEUE = """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata: {name: prov}
spec: {controllerName: example.com/prov}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  CHECKS
  resourceGroups:
  - coveredResources: ["cpu"]
    flavors:
    - {name: default, resources: [{name: cpu, nominalQuota: 4}]}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: q, namespace: default}
spec: {clusterQueue: cq}
"""


def workload(name: str, annotations: str) -> str:
    return workload_yaml(name, notes=annotations)


def queue(checks: bool = False) -> str:
    return QUEUE.replace("CHECKS", "admissionChecksStrategy: {admissionChecks: [{name: prov}]}" if checks else "")
