"""The training-operator's PyTorchJob (upstream's ``pkg/controller/jobs/kubeflow/jobs/pytorchjob``):
``kubeflow.org/v1``, replica specs in ``spec.pytorchReplicaSpecs``, pod sets ``master`` then ``worker``.
Everything else is the Kubeflow kinds' shared part (``pykueue.jobs.kubeflow``). Its operator's webhook
wants a container named ``pytorch`` in each type, exactly one Master, and a Worker's ``replicas``, when
set, at least 1."""

from pykueue.jobs import kubeflow
from pykueue.kube import resources as r

KIND = kubeflow.TrainingKind(
    r.PYTORCH_JOB, "kubeflow.org/pytorchjob", "pytorchReplicaSpecs", ("Master", "Worker"),
    operator_rules=kubeflow.OperatorRules("pytorchReplicaSpecs", "pytorch", supported=("Master", "Worker"),
                                          exactly_one=("Master",), others_at_least_one=True))
INTEGRATION = kubeflow.integration(KIND)
