"""The training-operator's PaddleJob (upstream's ``pkg/controller/jobs/kubeflow/jobs/paddlejob``):
``kubeflow.org/v1``, replica specs in ``spec.paddleReplicaSpecs``, pod sets ``master`` then ``worker``.
Everything else is the Kubeflow kinds' shared part (``pykueue.jobs.kubeflow``). Its operator's webhook
takes Master and Worker and wants a container named ``paddle`` in each (the name quoted in its message)."""

from pykueue.jobs import kubeflow
from pykueue.kube import resources as r

KIND = kubeflow.TrainingKind(
    r.PADDLE_JOB, "kubeflow.org/paddlejob", "paddleReplicaSpecs", ("Master", "Worker"),
    operator_rules=kubeflow.OperatorRules("paddleReplicaSpecs", "paddle", supported=("Master", "Worker"),
                                          quote_container=True))
INTEGRATION = kubeflow.integration(KIND)
