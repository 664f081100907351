"""The ``apiVersion``/``kind`` pairs the simulator understands, and what each one is."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel

from pykueue.api.models import config, core
from pykueue.api.models import kueue_v1beta1 as v1
from pykueue.api.models import kueue_v1beta2 as v2
from pykueue.jobs import registry

KUEUE_V1BETA1 = "kueue.x-k8s.io/v1beta1"
KUEUE_V1BETA2 = "kueue.x-k8s.io/v1beta2"
CONFIG_V1BETA1 = "config.kueue.x-k8s.io/v1beta1"
CONFIG_V1BETA2 = "config.kueue.x-k8s.io/v1beta2"


@dataclass(frozen=True, slots=True)
class KindSpec:
    kind: str
    api_version: str
    model: type[BaseModel]
    namespaced: bool


def _spec(api_version: str, kind: str, model: type[BaseModel], namespaced: bool = False) -> KindSpec:
    return KindSpec(kind, api_version, model, namespaced)


_SPECS = [
    _spec(KUEUE_V1BETA2, "ResourceFlavor", v2.ResourceFlavor),
    _spec(KUEUE_V1BETA2, "ClusterQueue", v2.ClusterQueue),
    _spec(KUEUE_V1BETA2, "Cohort", v2.Cohort),
    _spec(KUEUE_V1BETA2, "LocalQueue", v2.LocalQueue, namespaced=True),
    _spec(KUEUE_V1BETA2, "Workload", v2.Workload, namespaced=True),
    _spec(KUEUE_V1BETA2, "WorkloadPriorityClass", v2.WorkloadPriorityClass),
    _spec(KUEUE_V1BETA2, "AdmissionCheck", v2.AdmissionCheck),
    _spec(KUEUE_V1BETA2, "MultiKueueConfig", v2.MultiKueueConfig),
    _spec(KUEUE_V1BETA2, "MultiKueueCluster", v2.MultiKueueCluster),
    _spec(KUEUE_V1BETA1, "ResourceFlavor", v2.ResourceFlavor),
    _spec(KUEUE_V1BETA1, "ClusterQueue", v1.ClusterQueue),
    _spec(KUEUE_V1BETA1, "Cohort", v2.Cohort),
    _spec(KUEUE_V1BETA1, "LocalQueue", v2.LocalQueue, namespaced=True),
    _spec(KUEUE_V1BETA1, "Workload", v1.Workload, namespaced=True),
    _spec(KUEUE_V1BETA1, "WorkloadPriorityClass", v2.WorkloadPriorityClass),
    _spec(KUEUE_V1BETA1, "AdmissionCheck", v1.AdmissionCheck),
    _spec(KUEUE_V1BETA1, "MultiKueueConfig", v2.MultiKueueConfig),
    _spec(KUEUE_V1BETA1, "MultiKueueCluster", v1.MultiKueueCluster),
    _spec("v1", "Namespace", core.Namespace),
    _spec("scheduling.k8s.io/v1", "PriorityClass", core.PriorityClass),
    # every job kind's objects, from the registry (by kind within an apiVersion: the order "known kinds" lists)
    *(_spec(i.resource.api_version, i.kind, core.Integrated, namespaced=True)
      for i in sorted(registry.INTEGRATIONS, key=lambda i: i.kind)),
    _spec(CONFIG_V1BETA1, "Configuration", config.ConfigurationV1beta1),
    _spec(CONFIG_V1BETA2, "Configuration", config.ConfigurationV1beta2),
]

REGISTRY: dict[tuple[str, str], KindSpec] = {(s.api_version, s.kind): s for s in _SPECS}
API_VERSIONS: dict[str, list[str]] = {}
for _s in _SPECS:
    API_VERSIONS.setdefault(_s.api_version, []).append(_s.kind)
