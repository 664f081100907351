"""The JobSet's MultiKueue adapter (upstream's ``jobset_multikueue_adapter.go``): the worker's JobSet
controller runs the copy (``spec.managedBy`` dropped); its status is mirrored whole."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from pykueue.jobs.multikueue import Adapter, Obj
from pykueue.kube import resources as r


def given_up(local: Mapping[str, Any]) -> Obj | None:
    """No replicated job active or ready (no JobSet controller here counts them down)."""
    status = copy.deepcopy(local.get("status") or {})
    rows = status.get("replicatedJobsStatus") or []
    if not any(row.get("active") or row.get("ready") for row in rows):
        return None
    for row in rows:
        row["active"], row["ready"] = 0, 0
    return status


ADAPTER = Adapter(r.JOBSET, given_up=given_up)
