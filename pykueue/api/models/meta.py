"""``metav1.ObjectMeta``: every standard field is accepted, the ones the simulator reads are typed."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from pykueue.api.models.base import ApiModel


class ObjectMeta(ApiModel):
    name: str | None = None
    generate_name: str | None = None
    namespace: str | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    creation_timestamp: Any = None  # a datetime from YAML, or an RFC 3339 string
    uid: Any = None
    resource_version: Any = None
    generation: Any = None
    self_link: Any = None
    deletion_timestamp: Any = None
    deletion_grace_period_seconds: Any = None
    owner_references: Any = None
    finalizers: Any = None
    managed_fields: Any = None


class TemplateMeta(ApiModel):
    """Metadata of an embedded pod template (CRDs keep only these fields)."""

    name: str | None = None
    namespace: str | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    finalizers: Any = None
    generate_name: str | None = None
    creation_timestamp: Any = Field(default=None)
