"""The LeaderWorkerSet's MultiKueue adapter (upstream's ``leaderworkerset_multikueue_adapter.go``): one
Workload per group, all dispatched to one worker (the lowest index nominates, the others follow it: see
``controller/multikueue/workloads.py``); the worker gets the LWS with the manager's UID and no prebuilt
label, and names its groups' Workloads from that UID (the copies it holds). No managedBy: nothing is
mirrored back."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pykueue.jobs.framework.workload import ORIGIN_UID_ANNOTATION
from pykueue.jobs.leaderworkerset import workload as lws
from pykueue.jobs.multikueue import Adapter, always_managed, never_mirrored, whole_spec
from pykueue.kube import resources as r


def workloads_of(remote: Mapping[str, Any]) -> list[str]:
    """Each group's Workload, named from the manager's UID the worker's copy carries."""
    if not (remote.get("metadata", {}).get("annotations") or {}).get(ORIGIN_UID_ANNOTATION):
        return []
    return [lws.name_of(remote, i) for i in range(lws.replicas(remote))]


ADAPTER = Adapter(r.LEADERWORKERSET, unmanaged=always_managed, spec=whole_spec, mirrored=never_mirrored,
                  origin_uid=True, prebuilt=False, expected_workloads=lws.replicas, workloads_of=workloads_of)
