"""What one job kind tells generic code about itself (upstream's ``jobframework.IntegrationCallbacks``),
and the set of integrations that are on.

Each kind's package declares its ``Integration`` record in its ``__init__``; ``jobs/registry.py`` lists
them (upstream's ``RegisterIntegration`` calls) and builds ``Frameworks`` from ``integrations.frameworks``.
Code beneath the kinds (the job framework, the pod integration) never reads the registry: it is handed a
``Frameworks``, which carries what it needs to know of the other kinds (whose children an object is,
whose Pods their own integration manages) without naming one.

Plain data, importing nothing of pykueue."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Integration:
    """One kind: its ``integrations.frameworks`` name, its API group ("" for the core group) and kind;
    ``implies``: frameworks it turns on (upstream's ImplicitlyEnabledFrameworkNames); ``owns_pods``: its
    integration manages the Pods it controls itself (the Pod webhook leaves them alone); ``serving``:
    queued through the pod integration, its Pods gated as the Pod webhook gates them."""

    framework: str
    group: str
    kind: str
    implies: tuple[str, ...] = ()
    owns_pods: bool = False
    serving: bool = False


class Frameworks(frozenset[str]):
    """The frameworks that are on (those listed and those they imply), with the registry's answer to
    "which integration is this owner reference's kind?": an object whose controller owner is a kind
    that is on is that kind's child, never queued by itself (upstream's IsOwnerManagedByKueue)."""

    _owners: Mapping[tuple[str, str], Integration]

    def __new__(cls, on: Iterable[str], integrations: Iterable[Integration]) -> Frameworks:
        self = super().__new__(cls, on)
        self._owners = {(i.group, i.kind): i for i in integrations}
        return self

    def owner_integration(self, group: str, kind: str) -> Integration | None:
        """The integration of an owner reference's (group, kind), if pykueue has one that is on."""
        found = self._owners.get((group, kind))
        return found if found is not None and found.framework in self else None
