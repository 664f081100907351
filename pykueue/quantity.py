"""Kubernetes resource quantities, exactly: parsing, Kueue's canonical integers, and canonical strings.

A quantity is read into a ``Fraction`` (never a float), so ``"0.1"`` stays one tenth and ``"1.5Gi"`` is an
exact byte count. ``to_canonical`` turns it into the integer Kueue keeps (``resources.ResourceValue``):
milli-units for ``cpu``, whole units for everything else, rounded up like ``Quantity.ScaledValue``.
``format_quantity`` (kept in the engine, which words its messages with it) prints such an integer back
the way ``Quantity.String()`` prints the quantity Kueue builds from it (``resources.ResourceQuantity``).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache

from pykueue.engine.quantity_text import format_binary, format_decimal, format_quantity, is_binary_si

__all__ = ["format_binary", "format_decimal", "format_quantity", "is_binary_si", "parse_quantity", "to_canonical"]

CPU = "cpu"

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)

_MAX_EXPONENT = 1000  # far beyond any real quantity; keeps "1e999999999" from eating memory

_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}

_QUANTITY = re.compile(
    r"(?P<sign>[+-]?)(?P<num>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?:(?P<bin>Ki|Mi|Gi|Ti|Pi|Ei)|[eE](?P<exp>[+-]?[0-9]+)|(?P<dec>[numkMGTPE]?))"
)


@lru_cache(maxsize=4096)
def _parse_text(text: str) -> Fraction:
    match = _QUANTITY.fullmatch(text.strip())
    if match is None:
        raise ValueError(
            f"invalid quantity {text!r}: expected a number with an optional suffix "
            "(n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei, or an exponent such as e3)"
        )
    value = Fraction(match["num"])
    if match["bin"]:
        value *= 2 ** _BINARY[match["bin"]]
    elif match["exp"] is not None:
        exponent = int(match["exp"])
        if abs(exponent) > _MAX_EXPONENT:
            raise ValueError(f"quantity exponent out of range in {text!r}")
        value *= Fraction(10) ** exponent
    else:
        value *= Fraction(10) ** _DECIMAL[match["dec"]]
    return -value if match["sign"] == "-" else value


def parse_quantity(value: object) -> Fraction:
    """Read a quantity from YAML: a string such as ``"500m"`` / ``"36Gi"`` / ``"1e3"``, an int, or a float.

    Floats come from YAML scalars such as ``1.5``; their shortest decimal spelling is the one the file
    had, so it is read from that spelling and no binary rounding leaks in.
    """
    if isinstance(value, bool):
        raise ValueError(f"a quantity must be a string or a number, got {value!r}")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, Fraction):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"a quantity must be finite, got {value!r}")
        return _parse_text(repr(value))
    if isinstance(value, str):
        if not value.strip():
            raise ValueError("a quantity cannot be empty")
        return _parse_text(value)
    raise ValueError(f"a quantity must be a string or a number, got {type(value).__name__}")


def _round_away_from_zero(value: Fraction) -> int:
    if value >= 0:
        return math.ceil(value)
    return -math.ceil(-value)


def to_canonical(resource_name: str, quantity: object) -> int:
    """Kueue's integer for a quantity: milli-units for cpu, whole units otherwise; rounded up, int64-clamped."""
    value = parse_quantity(quantity)
    if resource_name == CPU:
        value *= 1000
    result = value.numerator if value.denominator == 1 else _round_away_from_zero(value)
    return max(INT64_MIN, min(INT64_MAX, result))
