"""The narrow interface the metrics and the visibility API read a running controller through: its
engine (read only through ``views``), whether it has synced, its clock, the informers' cached
objects, and the Workloads' records. Nothing else of the Controller is theirs to touch."""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

from pykueue.controller.core.workload_records import WorkloadRecords
from pykueue.engine.engine import Engine


class ReadSource(Protocol):
    engine: Engine
    ready: asyncio.Event
    records: WorkloadRecords  # each Workload's memory (the metrics keep theirs there)

    def clock(self) -> float: ...

    def cached(self, plural: str, key: str) -> dict[str, Any] | None:
        """The informer's copy of an object (``workloads``, ``clusterqueues``...), or None."""
        ...
