"""The training-operator's TFJob (upstream's ``pkg/controller/jobs/kubeflow/jobs/tfjob``): ``kubeflow.org/v1``,
replica specs in ``spec.tfReplicaSpecs``, pod sets in the order ``chief``, ``master``, ``ps``, ``worker``,
``evaluator``. Everything else is the Kubeflow kinds' shared part (``pykueue.jobs.kubeflow``). Its
operator's webhook takes any replica type, wants a container named ``tensorflow`` in each, and at most
one Chief or Master type."""


from pykueue.jobs import kubeflow
from pykueue.kube import resources as r

KIND = kubeflow.TrainingKind(
    r.TF_JOB, "kubeflow.org/tfjob", "tfReplicaSpecs", ("Chief", "Master", "PS", "Worker", "Evaluator"),
    operator_rules=kubeflow.OperatorRules("tfReplicaSpecs", "tensorflow", one_chief_or_master=True))
INTEGRATION = kubeflow.integration(KIND)
