"""What the scheduler may use of the engine that runs it, declared below both.

The engine owns the scheduler and the scheduler acts on the engine (reserve, preempt, wait for
victims): declaring that surface here, as a base class the engine extends, keeps the imports pointing
one way. A base class rather than a Protocol, so a compiled build (mypyc) still reaches the engine's
attributes natively in the scheduler's loop.
"""

from __future__ import annotations

from pykueue.engine import model
from pykueue.engine.cluster import ClusterQueueState, ClusterState
from pykueue.engine.preemption import Preemptor
from pykueue.engine.queue_manager import QueueManager
from pykueue.engine.workload import Shared, WorkloadInfo


class SchedulingHost:
    """The engine as its scheduler sees it (``engine.Engine`` sets every attribute and overrides every
    method)."""

    config: model.Config
    jobs_stop_at_once: bool  # the simulator's jobs stop at the decision; a live cluster's take time
    awaiting: dict[str, set[str]]  # preemptors waiting for their victims' jobs to stop
    flavors: dict[str, model.ResourceFlavor]
    cqs: dict[str, ClusterQueueState]
    state: ClusterState
    preemptor: Preemptor
    shared: Shared
    queues: QueueManager

    def reserve(self, cq: ClusterQueueState, info: WorkloadInfo, admission: model.Admission,
                usage: dict, now: int) -> None:
        raise NotImplementedError

    def preempt(self, victim: WorkloadInfo, reason: str, by: WorkloadInfo, now: int) -> None:
        raise NotImplementedError

    def await_victims(self, preemptor: WorkloadInfo, victims: list[WorkloadInfo]) -> int:
        raise NotImplementedError

    def namespace_allowed(self, cq: ClusterQueueState, namespace: str) -> bool:
        raise NotImplementedError

    def finish_workload(self, key: str, now: int, *, reason: str | None = None, message: str | None = None,
                        by: str | None = None) -> None:
        raise NotImplementedError
