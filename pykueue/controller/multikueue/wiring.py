"""MultiKueue on the manager, wired: the MultiKueueCluster and MultiKueueConfig informers, the worker
connections (``multikueue.clusters``) and the workload reconciler (``multikueue.workloads``), each
loop supervised. A controller with no MultiKueue objects only keeps the two informers."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from pykueue.controller.core.events import Recorder
from pykueue.controller.multikueue.clusters import Workers
from pykueue.controller.multikueue.workloads import MultiKueueWorkloads
from pykueue.controller.runtime import supervise
from pykueue.controller.webhooks.names import NAMESPACE
from pykueue.engine import model
from pykueue.kube import resources as r
from pykueue.kube.client import Kube
from pykueue.kube.informer import Informer

# Workloads reconciled at once (the work queue never hands one key to two): upstream's reconciler is
# For(Workload), so it runs controller.groupKindConcurrency's Workload figure, 5 in upstream's chart.
# One at a time, each dispatch waits behind every other's remote requests.
RECONCILERS = 5


class MultiKueue:
    """``namespace``: where the workers' kubeconfig Secrets are (the controller's; pykueue-system for one
    run locally)."""

    def __init__(self, kube: Kube, informers: dict[str, Informer], config: model.MultiKueue, recorder: Recorder,
                 clock: Callable[[], float] = time.time, namespace: str | None = None) -> None:
        self.informers = informers
        self.workers = Workers(kube, informers, namespace or NAMESPACE, config.origin,
                               changed=lambda name: self.workloads.on_worker(name),
                               remote_event=lambda w, plural, obj: self.workloads.on_remote(w, plural, obj),
                               clock=clock)
        self.workloads = MultiKueueWorkloads(kube, informers, self.workers, config, recorder, clock)

    def on_workload(self, obj: dict[str, Any]) -> None:
        self.workloads.on_workload(obj)

    def start(self, informer: Callable[..., Informer]) -> list[asyncio.Task]:
        """Its informers (through the controller's ``informer``, so they are its caches too) and its loops.
        Nothing here holds the controller's readiness: the workload loops begin once both informers have
        synced (a cluster without the MultiKueue CRDs only sees their informers retry), and every
        Workload already cached is looked at then."""
        tasks = []
        for res in (r.MULTIKUEUE_CLUSTER, r.MULTIKUEUE_CONFIG):
            inf = informer(res, lambda t, o, n: self.workloads.on_worker(""))
            tasks.append(supervise.start(f"informer-{res.plural}", inf.run))
        tasks.append(supervise.start("multikueue", self.run))
        return tasks

    async def run(self) -> None:
        await asyncio.gather(*(self.informers[res.plural].synced.wait()
                               for res in (r.MULTIKUEUE_CLUSTER, r.MULTIKUEUE_CONFIG)))
        work = self.workloads
        await work.track_cached()
        await asyncio.gather(
            supervise.supervised("multikueue-clusters", self.workers.run),
            *(supervise.supervised(f"multikueue-workloads-{i}", lambda: work.work.run(work.reconcile, work.failed))
              for i in range(RECONCILERS)),
            supervise.supervised("multikueue-resync", work.resync),
            supervise.supervised("multikueue-gc", work.gc),
        )
