"""Go-style durations (``90s``, ``1h30m``, ``250ms``, ``1.5h``) or a plain number of seconds.

The simulator's annotations and ``--until`` use the same spelling as Kubernetes durations so that
manifests read like the ones people already write; a bare number is a convenience meaning seconds.
As Go's ``time.Duration`` (int64 nanoseconds), a duration is at most about 292 years either way: a
longer one is an error, not an overflow deep inside Python.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache

_UNITS: dict[str, Fraction] = {
    "ns": Fraction(1, 10**9),
    "us": Fraction(1, 10**6),
    "\u00b5s": Fraction(1, 10**6),  # micro sign
    "\u03bcs": Fraction(1, 10**6),  # Greek mu
    "ms": Fraction(1, 10**3),
    "s": Fraction(1),
    "m": Fraction(60),
    "h": Fraction(3600),
}
_PART = re.compile(r"([0-9]*(?:\.[0-9]*)?)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")
MAX_SECONDS = Fraction(2**63 - 1, 10**9)  # Go's maximum time.Duration, 2562047h47m16.854775807s
_MAX_INT_DIGITS = 20  # more integer digits than this is out of range whatever the unit
_MAX_FRACTION_DIGITS = 30  # digits below a nanosecond's 10^-21 change nothing


def _out_of_range(value: object) -> ValueError:
    shown = repr(value)
    if len(shown) > 40:
        shown = shown[:36] + "..." + shown[-1]
    return ValueError(f"invalid duration {shown}: out of range (at most 2562047h47m16.854775807s, about 292 years)")


def _exact(value: str, number: str) -> Fraction:
    """A decimal number as a Fraction, refusing one too long to be a duration before Python's integer
    conversion limit (4300 digits) refuses it with a message about Python."""
    whole, _, fraction = number.partition(".")
    if len(whole.lstrip("+-").lstrip("0")) > _MAX_INT_DIGITS:
        raise _out_of_range(value)
    return Fraction(f"{whole or '0'}.{fraction[:_MAX_FRACTION_DIGITS] or '0'}")


def parse_duration(value: str | int | float) -> float:
    """Seconds in a duration. Raises ``ValueError`` with the offending text when it is not one."""
    if isinstance(value, bool):
        raise ValueError(f"invalid duration {value!r}")
    if isinstance(value, int | float):
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"invalid duration {value!r}: must be finite")
        if abs(value) > MAX_SECONDS:
            raise _out_of_range(value)
        return float(value)
    if not isinstance(value, str):
        raise ValueError(f"invalid duration {value!r}: must be a string or a number")
    return _parse_text(value)


_SIMPLE = re.compile(r"([0-9]+)(ns|us|ms|s|m|h)")
_SIMPLE_SCALE = {
    "ns": (1, 10**9),
    "us": (1, 10**6),
    "ms": (1, 1000),
    "s": (1, 1),
    "m": (60, 1),
    "h": (3600, 1),
}

# One decimal number and unit, short enough to need no Fraction (Python divides ints exactly rounded).
_DECIMAL = re.compile(r"([0-9]{1,18})\.([0-9]{1,9})(ns|us|ms|s|m|h)")

_SIMPLE_LIMIT = {unit: int(MAX_SECONDS * div / mul) for unit, (mul, div) in _SIMPLE_SCALE.items()}


@lru_cache(maxsize=4096)
def _parse_text(value: str) -> float:
    simple = _SIMPLE.fullmatch(value)
    if simple is not None:  # the common case, "90s": exact integer arithmetic, no Fraction
        digits = simple.group(1)
        mul, div = _SIMPLE_SCALE[simple.group(2)]
        if len(digits.lstrip("0")) > _MAX_INT_DIGITS or int(digits) > _SIMPLE_LIMIT[simple.group(2)]:
            raise _out_of_range(value)
        return int(digits) * mul / div
    decimal = _DECIMAL.fullmatch(value)
    if decimal is not None:  # "123.4s", as the generator writes arrivals: the same exact quotient
        whole, fraction, unit = decimal.groups()
        mul, div = _SIMPLE_SCALE[unit]
        numerator, denominator = int(whole + fraction) * mul, 10 ** len(fraction) * div
        if numerator * 10**9 <= (2**63 - 1) * denominator:  # else the general path says out of range
            return numerator / denominator  # int / int rounds once, as float(Fraction) does
    text = value.strip()
    if _NUMBER.fullmatch(text):
        number = _exact(value, text)
        if abs(number) > MAX_SECONDS:
            raise _out_of_range(value)
        return float(number)
    sign = 1
    rest = text
    if rest[:1] in ("+", "-"):
        sign = -1 if rest[0] == "-" else 1
        rest = rest[1:]
    if not rest:
        raise ValueError(f"invalid duration {value!r}")
    total = Fraction(0)
    pos = 0
    while pos < len(rest):
        match = _PART.match(rest, pos)
        if match is None or match.group(1) in ("", "."):
            raise ValueError(
                f"invalid duration {value!r}: expected a number of seconds or a Go duration such as 90s, 1h30m, 250ms"
            )
        total += _exact(value, match.group(1)) * _UNITS[match.group(2)]
        if total > MAX_SECONDS:
            raise _out_of_range(value)
        pos = match.end()
    return float(sign * total)
