from fractions import Fraction

import pytest

from pykueue.quantity import format_quantity, parse_quantity, to_canonical


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("500m", Fraction(1, 2)),
        ("1.5", Fraction(3, 2)),
        ("36Gi", 36 * 2**30),
        ("1e3", 1000),
        ("1E3", 1000),
        ("2k", 2000),
        ("1.5Gi", 3 * 2**29),
        ("0.1", Fraction(1, 10)),
        (".5", Fraction(1, 2)),
        ("5.", 5),
        ("+3", 3),
        ("-2M", -2_000_000),
        ("100n", Fraction(1, 10**7)),
        ("3u", Fraction(3, 10**6)),
        ("2E", 2 * 10**18),
        ("1e-3", Fraction(1, 1000)),
        (" 4Ki ", 4096),
        (9, 9),
        (1.5, Fraction(3, 2)),
        (0.1, Fraction(1, 10)),
    ],
)
def test_parse_quantity(text: object, expected: Fraction) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize(
    "text", ["", "abc", "1x", "1K", "1.2.3", "e3", "1e", "1Gb", "--1", "1 Gi", True, None, [1]]
)
def test_invalid_quantities_raise_value_error(text: object) -> None:
    with pytest.raises(ValueError):
        parse_quantity(text)


@pytest.mark.parametrize(
    ("resource", "quantity", "expected"),
    [
        ("cpu", "500m", 500),
        ("cpu", "1.5", 1500),
        ("cpu", 9, 9000),
        ("cpu", "0.0001", 1),  # rounded up to a whole milli-cpu
        ("cpu", "1n", 1),
        ("memory", "36Gi", 38654705664),
        ("memory", "1.5", 2),  # whole bytes, rounded up
        ("memory", "200Mi", 209715200),
        ("pods", 5, 5),
        ("nvidia.com/gpu", "2", 2),
        ("example.com/foo", "2k", 2000),
        ("cpu", "-1.5", -1500),
        ("memory", "-0.5", -1),  # away from zero, as Quantity.ScaledValue rounds
        ("memory", "100E", 2**63 - 1),  # clamped to int64
    ],
)
def test_to_canonical(resource: str, quantity: object, expected: int) -> None:
    assert to_canonical(resource, quantity) == expected


@pytest.mark.parametrize(
    ("resource", "value", "expected"),
    [
        ("cpu", 3000, "3"),
        ("cpu", 1500, "1500m"),
        ("cpu", 500, "500m"),
        ("cpu", 0, "0"),
        ("cpu", 2_000_000, "2k"),
        ("memory", 600 * 2**20, "600Mi"),
        ("memory", 36 * 2**30, "36Gi"),
        ("memory", 1536, "1536"),  # not a multiple of 1Ki: plain bytes
        ("memory", 500, "500"),
        ("memory", 1000, "1k"),  # below 1024 Kubernetes prints BinarySI values as DecimalSI
        ("memory", 2**60, "1Ei"),
        ("ephemeral-storage", 2**30, "1Gi"),
        ("hugepages-2Mi", 4 * 2**20, "4Mi"),
        ("pods", 5, "5"),
        ("pods", 5000, "5k"),
        ("example.com/gpu", 1500, "1500"),
        ("example.com/gpu", 3 * 10**9, "3G"),
        ("cpu", -1500, "-1500m"),
        ("memory", -(2**20), "-1Mi"),
    ],
)
def test_format_quantity(resource: str, value: int, expected: str) -> None:
    assert format_quantity(resource, value) == expected


@pytest.mark.parametrize(
    ("resource", "text"),
    [
        ("cpu", "3"),
        ("cpu", "1500m"),
        ("memory", "600Mi"),
        ("memory", "36Gi"),
        ("pods", "5k"),
        ("memory", "1536"),
    ],
)
def test_canonical_round_trip(resource: str, text: str) -> None:
    assert format_quantity(resource, to_canonical(resource, text)) == text
