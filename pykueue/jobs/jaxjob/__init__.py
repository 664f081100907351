"""The training-operator's JAXJob (upstream's ``pkg/controller/jobs/kubeflow/jobs/jaxjob``):
``kubeflow.org/v1``, replica specs in ``spec.jaxReplicaSpecs``, one pod set ``worker``. Everything else
is the Kubeflow kinds' shared part (``pykueue.jobs.kubeflow``). Its operator's webhook takes only Worker
and wants a container named ``jax``."""

from pykueue.jobs import kubeflow
from pykueue.kube import resources as r

KIND = kubeflow.TrainingKind(
    r.JAX_JOB, "kubeflow.org/jaxjob", "jaxReplicaSpecs", ("Worker",),
    operator_rules=kubeflow.OperatorRules("jaxReplicaSpecs", "jax", supported=("Worker",)))
INTEGRATION = kubeflow.integration(KIND)
