"""A restarted manager's MultiKueue reconciler tracks a Workload with a MultiKueue check even when its
Workload cache lists before its AdmissionCheck cache: the cached Workloads are looked at only once both
have synced. Before, a Workload seen first was taken for one without a MultiKueue check and never
tracked, so its finished copy stayed on the worker (seen in CI after a manager restart under load)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from pykueue.controller.multikueue.workloads import MultiKueueWorkloads
from pykueue.engine import model
from pykueue.engine import multikueue as mk


class Cache(SimpleNamespace):
    def get(self, key: str) -> dict[str, Any] | None:
        return self.store.get(key)


def test_cached_workloads_are_tracked_once_the_checks_are_cached_too() -> None:
    workload = {"metadata": {"name": "wl", "namespace": "ns"}, "spec": {},
                "status": {"admissionChecks": [{"name": "mk", "state": "Ready"}]}}
    informers = {"workloads": Cache(store={"ns/wl": workload}, synced=asyncio.Event()),
                 "admissionchecks": Cache(store={}, synced=asyncio.Event())}
    rec = MultiKueueWorkloads(None, informers, SimpleNamespace(workers={}, origin="o"),  # type: ignore[arg-type]
                              model.MultiKueue(), SimpleNamespace(emit=lambda *a: None))  # type: ignore[arg-type]

    async def scenario() -> set[str]:
        tracking = asyncio.create_task(rec.track_cached())
        informers["workloads"].synced.set()
        await asyncio.sleep(0)
        assert not tracking.done()  # the checks have not listed: nothing is decided about the Workload yet
        informers["admissionchecks"].store["mk"] = {"spec": {"controllerName": mk.CONTROLLER_NAME}}
        informers["admissionchecks"].synced.set()
        await tracking
        return rec.tracked

    assert asyncio.run(scenario()) == {"ns/wl"}
