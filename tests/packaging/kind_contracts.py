"""import-linter contract types whose kinds come from the integration registry, so that a new kind joins
the contracts by its registry line alone (``pyproject.toml`` names these types; ``lint-imports`` runs
from the clone's root, which is on its path).

A kind's package is one under ``pykueue/jobs/`` whose ``INTEGRATION`` (or ``INTEGRATIONS``) records are
in ``registry.INTEGRATIONS``; the shared parts beside them (``framework``, ``kubeflow``, ``hooks``...)
register nothing. Every registered record must come from such a package, or the contract fails."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from importlinter.contracts.forbidden import ForbiddenContract
from importlinter.contracts.independence import IndependenceContract


def kind_packages() -> list[str]:
    """``pykueue.jobs.<kind>`` for every package whose records the registry lists, in name order."""
    import pykueue.jobs as jobs
    from pykueue.jobs import registry

    registered = {id(i) for i in registry.INTEGRATIONS}
    found: list[str] = []
    claimed: set[int] = set()
    for info in pkgutil.iter_modules(jobs.__path__):
        if not info.ispkg:
            continue
        module = importlib.import_module(f"pykueue.jobs.{info.name}")
        records = [*getattr(module, "INTEGRATIONS", ()), *([module.INTEGRATION] if hasattr(module, "INTEGRATION") else [])]
        mine = {id(r) for r in records} & registered
        if mine:
            found.append(module.__name__)
            claimed |= mine
    unclaimed = [i.framework for i in registry.INTEGRATIONS if id(i) not in claimed]
    if unclaimed:
        raise ValueError(f"registered integrations outside any kind package under pykueue/jobs/: {unclaimed}")
    return sorted(found)


class RegisteredKindsIndependent(IndependenceContract):
    """The built-in independence contract over every registered kind's package."""

    type_name = "registered kinds independent"

    def __init__(self, name: str, session_options: dict[str, Any], contract_options: dict[str, Any]) -> None:
        super().__init__(name, session_options, {**contract_options, "modules": kind_packages()})


class BeneathEveryKind(ForbiddenContract):
    """The built-in forbidden contract: its sources import no registered kind (but themselves) and none
    of the ``forbidden_modules`` it names besides."""

    type_name = "beneath every kind"

    def __init__(self, name: str, session_options: dict[str, Any], contract_options: dict[str, Any]) -> None:
        sources = contract_options.get("source_modules") or []
        extra = list(contract_options.get("forbidden_modules") or [])
        kinds = [k for k in kind_packages() if k not in sources]
        super().__init__(name, session_options, {**contract_options, "forbidden_modules": extra + kinds})
