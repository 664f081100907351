"""What one Kubeflow job kind tells the shared part about itself (upstream's ``kubeflowjob.KFJobControl``,
which each of ``pkg/controller/jobs/kubeflow/jobs/<kind>/`` implements): its resource and framework name,
the ``spec`` field holding its replica specs, its replica types in pod-set order (``OrderedReplicaTypes``),
the value of ``spec.runPolicy.managedBy`` its own operator answers to, and what its operator refuses.

The MPI operator's ``kubeflow.org/v2beta1`` MPIJob has the same shape (a map of replica specs,
``spec.runPolicy`` with ``suspend`` and ``managedBy``, the same status conditions), so it is described
the same way; ``pod_index_offset`` is its ``runLauncherAsWorker`` twist."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pykueue.jobs.framework.validation import JobConversionError
from pykueue.kube.resources import Resource

Errors = list[JobConversionError]
REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"  # the operators' ReplicaIndexLabel: a pod's index in its type
TRAINING_OPERATOR = "kubeflow.org/training-operator"  # kftraining.KubeflowJobsController


def no_offset(_obj: Mapping[str, Any], _replica_type: str) -> int | None:
    return None


def no_rules(_obj: Mapping[str, Any]) -> Errors:
    return []


@dataclass(frozen=True, slots=True)
class TrainingKind:
    """One kind's facts. ``operator_rules(obj)``: what its operator's own admission (or, for the MPI
    operator, its controller) refuses, which the simulator reports as the API server would;
    ``pod_index_offset(obj, replica_type)``: where a replica type's pod indexes start in its topology
    request (None: at 0)."""

    resource: Resource
    framework: str
    replica_specs: str  # the spec field: "pytorchReplicaSpecs"
    ordered: tuple[str, ...]  # OrderedReplicaTypes: the pod sets' order
    own_controller: str = TRAINING_OPERATOR
    operator_rules: Callable[[Mapping[str, Any]], Errors] = no_rules
    pod_index_offset: Callable[[Mapping[str, Any], str], int | None] = no_offset

    @property
    def kind(self) -> str:
        return self.resource.kind

    @property
    def specs_path(self) -> str:
        return f"spec.{self.replica_specs}"
