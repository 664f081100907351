"""Which priority a workload runs with, and from which class.

An explicit ``spec.priority`` wins. Otherwise the referenced class gives it: a ``WorkloadPriorityClass``
(``kueue.x-k8s.io``) or a ``PriorityClass`` (``scheduling.k8s.io``); a class that does not exist is an
error, as it is for the Job integration, which cannot build the Workload then. With no class at all, a
Job gets the ``PriorityClass`` marked ``globalDefault`` (as ``jobframework`` does), and a Workload written
by hand gets 0 (``priority.Priority`` reads a missing priority as 0).
"""

from __future__ import annotations

from dataclasses import dataclass

from pykueue.api.models.kueue_v1beta2 import PriorityClassRef

WORKLOAD_PRIORITY_CLASS_SOURCE = "kueue.x-k8s.io/workloadpriorityclass"
POD_PRIORITY_CLASS_SOURCE = "scheduling.k8s.io/priorityclass"


@dataclass(slots=True)
class PriorityClasses:
    """The classes among the inputs, by name."""

    pod: dict[str, int]
    workload: dict[str, int]
    default_pod_class: str | None = None


@dataclass(slots=True, init=False)
class Resolved:
    """Not frozen, its ``__init__`` written out (one per workload: a frozen dataclass sets each field
    through ``object.__setattr__``, and a generated ``__init__`` stays interpreted when compiled)."""

    priority: int
    class_name: str | None
    source: str | None

    def __init__(self, priority: int, class_name: str | None, source: str | None) -> None:
        self.priority, self.class_name, self.source = priority, class_name, source


def resolve(
    priority: int | None, ref: PriorityClassRef | None, classes: PriorityClasses, *, from_job: bool
) -> Resolved | str:
    """The resolved priority, or the error message when the referenced class is missing."""
    if ref is not None:
        if ref.group == "kueue.x-k8s.io":
            table, source, what = classes.workload, WORKLOAD_PRIORITY_CLASS_SOURCE, "WorkloadPriorityClass"
        else:
            table, source, what = classes.pod, POD_PRIORITY_CLASS_SOURCE, "PriorityClass"
        if priority is not None:
            return Resolved(priority, ref.name, source)
        if ref.name not in table:
            return f'{what} "{ref.name}" not found'
        return Resolved(table[ref.name], ref.name, source)
    if priority is not None:
        return Resolved(priority, None, None)
    if from_job and classes.default_pod_class is not None:
        name = classes.default_pod_class
        return Resolved(classes.pod[name], name, POD_PRIORITY_CLASS_SOURCE)
    return Resolved(0, None, None)
