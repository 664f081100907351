"""The training-operator's XGBoostJob (upstream's ``pkg/controller/jobs/kubeflow/jobs/xgboostjob``):
``kubeflow.org/v1``, replica specs in ``spec.xgbReplicaSpecs``, pod sets ``master`` then ``worker``.
Everything else is the Kubeflow kinds' shared part (``pykueue.jobs.kubeflow``). Its operator's webhook
takes Master and Worker, wants a container named ``xgboost`` in each and exactly one Master."""


from pykueue.jobs import kubeflow
from pykueue.kube import resources as r

KIND = kubeflow.TrainingKind(
    r.XGBOOST_JOB, "kubeflow.org/xgboostjob", "xgbReplicaSpecs", ("Master", "Worker"),
    operator_rules=kubeflow.OperatorRules("xgbReplicaSpecs", "xgboost", supported=("Master", "Worker"),
                                          exactly_one=("Master",), required=("Master",)))
INTEGRATION = kubeflow.integration(KIND)
