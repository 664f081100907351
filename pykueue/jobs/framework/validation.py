"""What the API server and Go accept, in their words: the checks every integration's webhook and Workload
builder share (``JobConversionError``, what refuses an object; apimachinery's DNS-1123 and label-value
rules; ``strconv``'s Atoi and ParseBool; ``field.Invalid``'s quoting), so that what upstream accepts is
exactly what is accepted here. Upstream's counterpart: ``pkg/controller/jobframework/validation.go`` and
the ``k8s.io/apimachinery`` validation it calls."""

from __future__ import annotations

import re
from typing import Any

_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
DNS1123_SUBDOMAIN_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_GO_INT = re.compile(r"[+-]?[0-9]+")
_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_GO_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


class JobConversionError(ValueError):
    """A Job that upstream's API server or webhook would reject, so no Workload exists for it."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


def go_atoi(value: str) -> int:
    """strconv.Atoi: optional sign and ASCII digits only; the error text is Go's."""
    if not isinstance(value, str) or not _GO_INT.fullmatch(value):
        raise ValueError(f'strconv.Atoi: parsing "{value}": invalid syntax')
    number = int(value)
    if not -(2**63) <= number < 2**63:
        raise ValueError(f'strconv.Atoi: parsing "{value}": value out of range')
    return number


def atoi_field(path: str, value: str, errors: list[JobConversionError]) -> int | None:
    """``go_atoi`` of a label's or annotation's value at ``path``; None, with the refusal added to
    ``errors`` in ``field.Invalid``'s words, when Atoi refuses it."""
    try:
        return go_atoi(value)
    except ValueError as err:
        errors.append(JobConversionError(path, f"Invalid value: {quote(value)}: {err}"))
        return None


def to_int32(value: int) -> int:
    """Go's int32(v) conversion wraps around; upstream applies it to the parsed annotation."""
    return (value + 2**31) % 2**32 - 2**31


def go_parse_bool(value: str) -> bool:
    """strconv.ParseBool."""
    if value in _GO_TRUE:
        return True
    if value in _GO_FALSE:
        return False
    raise ValueError(f'strconv.ParseBool: parsing "{value}": invalid syntax')


def quote(value: Any) -> str:
    """How field.Invalid prints a value: strings quoted, numbers bare."""
    return f'"{value}"' if isinstance(value, str) else str(value)


def dns1123_subdomain_errors(value: str) -> list[str]:
    errors = []
    if len(value) > 253:
        errors.append("must be no more than 253 characters")
    if not _DNS1123_SUBDOMAIN.fullmatch(value):
        errors.append(DNS1123_SUBDOMAIN_MESSAGE)
    return errors


def is_valid_label_value(value: str) -> bool:
    return len(value) <= 63 and _LABEL_VALUE.fullmatch(value) is not None


_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


def is_dns1123_label(value: str) -> bool:
    return len(value) <= 63 and _DNS1123_LABEL.fullmatch(value) is not None
