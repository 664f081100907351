"""What the training-operator's own webhooks refuse (its ``pkg/webhooks/<kind>/``, v1.9): the API server
answers them before Kueue's webhook sees the object, so the simulator reports them too, with the
operator's field paths and words. Shared by the five training-operator kinds, each naming its own."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pykueue.jobs.framework.validation import JobConversionError

Errors = list[JobConversionError]


def _quoted(values: tuple[str, ...]) -> str:
    return ", ".join(f'"{v}"' for v in values)


@dataclass(frozen=True, slots=True)
class OperatorRules:
    """``replica_specs``: the spec field; ``container``: the container name one of each type's must have;
    ``supported``: the replica types its webhook accepts (None: any, as TFJob's); ``exactly_one``: types
    whose ``replicas`` must be 1 (a PyTorchJob's Master); ``required``: types that must be present (an
    XGBoostJob's Master); ``others_at_least_one``: any other type's ``replicas``, when set, is at least 1
    (PyTorchJob); ``one_chief_or_master``: at most one Chief or Master type (TFJob); ``quote_container``:
    the container's name is quoted in the message (PaddleJob's)."""

    replica_specs: str
    container: str
    supported: tuple[str, ...] | None = None
    exactly_one: tuple[str, ...] = ()
    required: tuple[str, ...] = ()
    others_at_least_one: bool = False
    one_chief_or_master: bool = False
    quote_container: bool = False

    def __call__(self, obj: Mapping[str, Any]) -> Errors:
        path = f"spec.{self.replica_specs}"
        specs = (obj.get("spec") or {}).get(self.replica_specs) if isinstance(obj.get("spec"), Mapping) else None
        if not isinstance(specs, Mapping) or not specs:
            return [JobConversionError(path, "Required value: must be required")]
        errors: Errors = []
        for replica_type, spec in specs.items():
            errors += self._replica(f"{path}[{replica_type}]", str(replica_type), spec)
        if self.one_chief_or_master and sum(1 for t in specs if t in ("Chief", "Master")) > 1:
            errors.append(JobConversionError(path, "Forbidden: must not have more than 1 Chief or Master role"))
        for replica_type in self.required:
            if replica_type not in specs:
                errors.append(JobConversionError(f"{path}[{replica_type}]", "Required value: must be present"))
        return errors

    def _replica(self, path: str, replica_type: str, spec: object) -> Errors:
        errors: Errors = []
        if self.supported is not None and replica_type not in self.supported:
            errors.append(JobConversionError(
                path, f'Unsupported value: "{replica_type}": supported values: {_quoted(self.supported)}'))
        spec = spec if isinstance(spec, Mapping) else {}
        containers_path = f"{path}.template.spec.containers"
        containers = ((spec.get("template") or {}).get("spec") or {}).get("containers") or []
        if not isinstance(containers, list) or not containers:
            errors.append(JobConversionError(containers_path, "Required value: must be specified"))
            containers = []
        named = False
        for i, container in enumerate(containers):
            container = container if isinstance(container, Mapping) else {}
            if not container.get("image"):
                errors.append(JobConversionError(f"{containers_path}[{i}].image", "Required value: must be required"))
            named = named or container.get("name") == self.container
        if not named:
            name = f'"{self.container}"' if self.quote_container else self.container
            errors.append(JobConversionError(
                containers_path, f"Required value: must have at least one container with name {name}"))
        replicas = spec.get("replicas")
        if replica_type in self.exactly_one:
            if replicas != 1:
                errors.append(JobConversionError(f"{path}.replicas", "Forbidden: must be 1"))
        elif self.others_at_least_one and isinstance(replicas, int) and replicas < 1:
            errors.append(JobConversionError(f"{path}.replicas", "Forbidden: must be at least 1"))
        return errors
