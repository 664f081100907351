"""Kueue's canonical resource integers printed as ``Quantity.String()`` prints the quantity Kueue builds
from them (``resources.ResourceQuantity``): milli-units for ``cpu`` in DecimalSI, memory-like resources in
BinarySI, the rest in DecimalSI. The engine words its condition messages with it ("2 more needed");
the API layer prints status and results with it.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache

CPU = "cpu"
_DECIMAL_SUFFIX = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
_BINARY_SUFFIX = {0: "", 1: "Ki", 2: "Mi", 3: "Gi", 4: "Ti", 5: "Pi", 6: "Ei"}


def is_binary_si(resource_name: str) -> bool:
    """Resources Kueue prints in powers of two (memory-like): memory, ephemeral-storage, hugepages-*."""
    return resource_name in ("memory", "ephemeral-storage") or resource_name.startswith("hugepages-")


def format_decimal(value: Fraction | int) -> str:
    """``Quantity.String()`` for a DecimalSI quantity: the largest power-of-1000 suffix that keeps an integer."""
    value = Fraction(value)
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    value = abs(value)
    # Below a nano the quantity is rounded up to whole nanos, as Kubernetes does.
    nanos = value * 10**9
    if nanos.denominator != 1:
        nanos = Fraction(math.ceil(nanos))
    mantissa = nanos.numerator
    exponent = -9
    while exponent < 18 and mantissa % 1000 == 0:
        mantissa //= 1000
        exponent += 3
    return f"{sign}{mantissa}{_DECIMAL_SUFFIX[exponent]}"


def format_binary(value: int) -> str:
    """``Quantity.String()`` for a BinarySI integer: Ki..Ei when exact, plain below 1024 (as DecimalSI)."""
    if -1024 < value < 1024:
        return format_decimal(value)
    sign = "-" if value < 0 else ""
    mantissa = abs(value)
    power = 0
    while power < 6 and mantissa % 1024 == 0:
        mantissa //= 1024
        power += 1
    return f"{sign}{mantissa}{_BINARY_SUFFIX[power]}"


@lru_cache(maxsize=4096)
def format_quantity(resource_name: str, value: int) -> str:
    """Print a canonical integer as Kueue prints that resource: ``"1500m"``, ``"600Mi"``, ``"5k"``.
    Memoised: a trace asks for the same few amounts in thousands of "more needed" messages."""
    if resource_name == CPU:
        return format_decimal(Fraction(value, 1000))
    if is_binary_si(resource_name):
        return format_binary(value)
    return format_decimal(value)
