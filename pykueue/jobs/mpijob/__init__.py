"""The MPI operator's MPIJob (upstream's ``pkg/controller/jobs/mpijob``): ``kubeflow.org/v2beta1``, replica
specs in ``spec.mpiReplicaSpecs``, pod sets ``launcher`` then ``worker``, suspended through
``spec.runPolicy.suspend`` and handed to MultiKueue through ``spec.runPolicy.managedBy`` (its own operator
``kubeflow.org/mpi-operator``). Its shape is the training-operator kinds', so it is read by their shared
part (``pykueue.jobs.kubeflow``) with two facts of its own:

- ``runLauncherAsWorker``: the launcher also runs a worker process and takes rank 0, so the workers'
  topology request counts their pod indexes from 1 (``podIndexOffset``);
- what the MPI operator refuses (its ``validation.ValidateMPIJob``, which fails the job): replica specs
  with a Launcher, a Launcher's ``replicas`` 1, a Worker's at least 1, a container in each."""

from collections.abc import Mapping
from typing import Any

from pykueue.jobs import kubeflow
from pykueue.jobs.framework.validation import JobConversionError
from pykueue.kube import resources as r

OWN_CONTROLLER = "kubeflow.org/mpi-operator"  # kfmpi.KubeflowJobController
PATH = "spec.mpiReplicaSpecs"


def worker_offset(obj: Mapping[str, Any], replica_type: str) -> int | None:
    """The workers' pod indexes start at 1 when the launcher is rank 0 of the same ring."""
    spec = obj.get("spec") or {}
    return 1 if replica_type == "Worker" and spec.get("runLauncherAsWorker") is True else None


def operator_rules(obj: Mapping[str, Any]) -> list[JobConversionError]:
    specs = (obj.get("spec") or {}).get("mpiReplicaSpecs")
    if not isinstance(specs, Mapping) or not specs:
        return [JobConversionError(PATH, "Required value: must have replica specs")]
    errors: list[JobConversionError] = []
    if "Launcher" not in specs:
        errors.append(JobConversionError(f"{PATH}[Launcher]", "Required value: must have Launcher replica spec"))
    for replica_type in ("Launcher", "Worker"):
        spec = specs.get(replica_type)
        if not isinstance(spec, Mapping):
            continue
        path = f"{PATH}[{replica_type}]"
        if not ((spec.get("template") or {}).get("spec") or {}).get("containers"):
            errors.append(JobConversionError(f"{path}.template.spec.containers",
                                             "Required value: must define at least one container"))
        replicas = spec.get("replicas")
        if replica_type == "Launcher" and isinstance(replicas, int) and replicas != 1:
            errors.append(JobConversionError(f"{path}.replicas", f"Invalid value: {replicas}: must be 1"))
        elif replica_type == "Worker" and isinstance(replicas, int) and replicas <= 0:
            errors.append(JobConversionError(f"{path}.replicas",
                                             f"Invalid value: {replicas}: must be greater than or equal to 1"))
    return errors


KIND = kubeflow.TrainingKind(r.MPI_JOB, "kubeflow.org/mpijob", "mpiReplicaSpecs", ("Launcher", "Worker"),
                             own_controller=OWN_CONTROLLER, operator_rules=operator_rules,
                             pod_index_offset=worker_offset)
INTEGRATION = kubeflow.integration(KIND)
