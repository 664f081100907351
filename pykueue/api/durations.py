"""Go-style durations (``90s``, ``1h30m``, ``250ms``, ``1.5h``) or a plain number of seconds.

The simulator's annotations and ``--until`` use the same spelling as Kubernetes durations so that
manifests read like the ones people already write; a bare number is a convenience meaning seconds.
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


def parse_duration(value: str | int | float) -> float:
    """Seconds in a duration. Raises ``ValueError`` with the offending text when it is not one."""
    if isinstance(value, bool):
        raise ValueError(f"invalid duration {value!r}")
    if isinstance(value, int | float):
        if not math.isfinite(value):
            raise ValueError(f"invalid duration {value!r}: must be finite")
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


@lru_cache(maxsize=4096)
def _parse_text(value: str) -> float:
    simple = _SIMPLE.fullmatch(value)
    if simple is not None:  # the common case, "90s": exact integer arithmetic, no Fraction
        mul, div = _SIMPLE_SCALE[simple.group(2)]
        return int(simple.group(1)) * mul / div
    text = value.strip()
    if _NUMBER.fullmatch(text):
        return float(Fraction(text))
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
        total += Fraction(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    return float(sign * total)
