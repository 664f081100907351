"""What the Kubeflow job kinds share (upstream's ``pkg/controller/jobs/kubeflow/kubeflowjob``, under the
training-operator's PyTorchJob, TFJob, XGBoostJob, PaddleJob and JAXJob; the MPI operator's MPIJob,
upstream's ``pkg/controller/jobs/mpijob``, has the same shape and is read the same way): a kind's package
describes itself as a ``TrainingKind`` and gets its whole ``Integration`` record from ``integration``.

``kind.py`` (the description), ``workload.py`` (pod sets per replica type in the kind's order, priority,
what cannot become a Workload), ``generic.py`` (its GenericJob: ``spec.runPolicy.suspend``, templates
injected at start and restored at stop), ``webhook.py``, ``multikueue.py`` (``spec.runPolicy.managedBy``),
``operator_rules.py`` (what the training-operator's own webhooks refuse).

Beneath the kinds that use it, as the job framework is: it names none of them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

from pykueue.jobs.integration import Integration, Live, Reading, Webhooks, custom_kind_grants
from pykueue.jobs.kubeflow import generic, multikueue, webhook, workload
from pykueue.jobs.kubeflow.kind import TRAINING_OPERATOR, TrainingKind
from pykueue.jobs.kubeflow.operator_rules import OperatorRules

__all__ = ["TRAINING_OPERATOR", "OperatorRules", "TrainingKind", "integration"]


def integration(kind: TrainingKind) -> Integration:
    """The kind's record: a custom kind queued through its own ``spec.runPolicy``, read by the simulator,
    with webhooks, a MultiKueue adapter, a live GenericJob and the ClusterRole rules of a custom kind."""

    def wrap(obj: dict[str, Any], _children: Sequence[Mapping[str, Any]]) -> generic.TrainingJob:
        return generic.TrainingJob(kind, obj)

    return Integration(
        kind.framework, kind.resource, own_controller=kind.own_controller, managed_by_at=("runPolicy", "managedBy"),
        reading=Reading(partial(workload.validate, kind), partial(workload.workloads, kind),
                        partial(workload.template_paths, kind), partial(workload.priority_class_path, kind)),
        webhooks=Webhooks(webhook.default(kind), webhook.validate_create(kind), webhook.validate_update(kind)),
        multikueue=multikueue.adapter(kind.resource), grants=custom_kind_grants(kind.resource),
        live=Live(generic.is_managed, wrap))
