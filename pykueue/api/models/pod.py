"""Core v1 shapes Kueue objects embed: label selectors, taints, tolerations and the pod template.

Only the fields Kueue reads are typed; every other ``PodSpec`` / ``Container`` field is accepted as-is
(it must still be a known field name, so typos are caught).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from pykueue.api.models.base import ApiModel, Quantity
from pykueue.api.models.meta import TemplateMeta


class LabelSelectorRequirement(ApiModel):
    key: str
    operator: str
    values: list[str] | None = None


class LabelSelector(ApiModel):
    match_labels: dict[str, str] | None = None
    match_expressions: list[LabelSelectorRequirement] | None = None


class Taint(ApiModel):
    key: str
    value: str | None = None
    effect: str
    time_added: Any = None


class Toleration(ApiModel):
    key: str | None = None
    operator: str | None = None
    value: str | None = None
    effect: str | None = None
    toleration_seconds: int | None = None


class NodeSelectorRequirement(ApiModel):
    key: str
    operator: str
    values: list[str] | None = None


class NodeSelectorTerm(ApiModel):
    match_expressions: list[NodeSelectorRequirement] | None = None
    match_fields: list[NodeSelectorRequirement] | None = None


class NodeSelector(ApiModel):
    node_selector_terms: list[NodeSelectorTerm]


class NodeAffinity(ApiModel):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: Any = None


class Affinity(ApiModel):
    node_affinity: NodeAffinity | None = None
    pod_affinity: Any = None
    pod_anti_affinity: Any = None


class ResourceRequirements(ApiModel):
    limits: dict[str, Quantity] | None = None
    requests: dict[str, Quantity] | None = None
    claims: Any = None


class Container(ApiModel):
    name: str
    resources: ResourceRequirements | None = None
    restart_policy: str | None = None
    image: Any = None
    command: Any = None
    args: Any = None
    working_dir: Any = None
    ports: Any = None
    env_from: Any = None
    env: Any = None
    resize_policy: Any = None
    restart_policy_rules: Any = None
    volume_mounts: Any = None
    volume_devices: Any = None
    liveness_probe: Any = None
    readiness_probe: Any = None
    startup_probe: Any = None
    lifecycle: Any = None
    termination_message_path: Any = None
    termination_message_policy: Any = None
    image_pull_policy: Any = None
    security_context: Any = None
    stdin: Any = None
    stdin_once: Any = None
    tty: Any = None


class PodSpec(ApiModel):
    containers: list[Container]
    init_containers: list[Container] | None = None
    node_selector: dict[str, str] | None = None
    affinity: Affinity | None = None
    tolerations: list[Toleration] | None = None
    overhead: dict[str, Quantity] | None = None
    resources: ResourceRequirements | None = None  # pod-level resources (KEP-2837)
    priority_class_name: str | None = None
    priority: int | None = None
    volumes: Any = None
    ephemeral_containers: Any = None
    restart_policy: Any = None
    termination_grace_period_seconds: Any = None
    active_deadline_seconds: Any = None
    dns_policy: Any = None
    service_account_name: Any = None
    service_account: Any = None
    automount_service_account_token: Any = None
    node_name: Any = None
    host_network: Any = None
    host_pid: Any = Field(default=None, alias="hostPID")
    host_ipc: Any = Field(default=None, alias="hostIPC")
    share_process_namespace: Any = None
    security_context: Any = None
    image_pull_secrets: Any = None
    hostname: Any = None
    subdomain: Any = None
    scheduler_name: Any = None
    host_aliases: Any = None
    dns_config: Any = None
    readiness_gates: Any = None
    runtime_class_name: Any = None
    enable_service_links: Any = None
    preemption_policy: Any = None
    topology_spread_constraints: Any = None
    set_hostname_as_fqdn: Any = Field(default=None, alias="setHostnameAsFQDN")
    os: Any = None
    host_users: Any = None
    scheduling_gates: Any = None
    resource_claims: Any = None
    hostname_override: Any = None
    workload_ref: Any = None


class PodTemplateSpec(ApiModel):
    metadata: TemplateMeta | None = None
    spec: PodSpec
