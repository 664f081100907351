"""MultiKueue on the manager, wired: the MultiKueueCluster and MultiKueueConfig informers, the worker
connections (``multikueue_clusters``) and the workload reconciler (``multikueue_workloads``), each
loop supervised. A controller with no MultiKueue objects only keeps the two informers."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from pykueue.controller import supervise
from pykueue.controller.events import Recorder
from pykueue.controller.multikueue_clusters import Workers
from pykueue.controller.multikueue_workloads import MultiKueueWorkloads
from pykueue.controller.webhooks.names import NAMESPACE
from pykueue.engine import model
from pykueue.kube import resources as r
from pykueue.kube.client import Kube
from pykueue.kube.informer import Informer


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

    async def start(self, informer: Callable[..., Informer]) -> list[asyncio.Task]:
        """Its informers (through the controller's ``informer``, so they are its caches too), synced,
        then its loops; every Workload already cached is looked at once."""
        tasks = []
        for res in (r.MULTIKUEUE_CLUSTER, r.MULTIKUEUE_CONFIG):
            inf = informer(res, lambda t, o, n: self.workloads.on_worker(""))
            tasks.append(supervise.start(f"informer-{res.plural}", inf.run))
        await asyncio.gather(*(self.informers[res.plural].synced.wait()
                               for res in (r.MULTIKUEUE_CLUSTER, r.MULTIKUEUE_CONFIG)))
        for obj in list(self.informers["workloads"].store.values()):
            self.workloads.on_workload(obj)
        work = self.workloads
        tasks += [
            supervise.start("multikueue-clusters", self.workers.run),
            supervise.start("multikueue-workloads", lambda: work.work.run(work.reconcile, work.failed)),
            supervise.start("multikueue-resync", work.resync),
            supervise.start("multikueue-gc", work.gc),
        ]
        return tasks
