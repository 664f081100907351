import pytest
from hypothesis import given
from hypothesis import strategies as st

from pykueue.api.durations import parse_duration


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("90s", 90.0),
        ("1h30m", 5400.0),
        ("250ms", 0.25),
        ("1.5h", 5400.0),
        ("2m3.5s", 123.5),
        ("10us", 1e-5),
        ("10\u00b5s", 1e-5),
        ("100ns", 1e-7),
        ("0", 0.0),
        ("12", 12.0),
        ("12.5", 12.5),
        (" 5s ", 5.0),
        (30, 30.0),
        (0.5, 0.5),
        ("-1s", -1.0),
    ],
)
def test_parse_duration(value: object, seconds: float) -> None:
    assert parse_duration(value) == pytest.approx(seconds)


@pytest.mark.parametrize(
    "value", ["", "s", "1x", "1h 30m", "never", "1.2.3s", "h1", True, None, float("inf")]
)
def test_invalid_durations_raise_value_error(value: object) -> None:
    with pytest.raises(ValueError):
        parse_duration(value)


OUT_OF_RANGE = [
    "2562047h47m16.854775808s", "9223372037s", "9223372036854775808ns", "2562048h", "-2562048h",
    "9" * 400 + "h", "9" * 5000, "1" + "0" * 30 + "s", 10**400, 9.3e9,
]


def test_durations_beyond_gos_range_are_value_errors() -> None:
    """Go's time.Duration is int64 nanoseconds; beyond it Python used to raise OverflowError, complain
    about its own integer conversion limit, or return centuries."""
    assert parse_duration("2562047h47m16.854775807s") == pytest.approx(9223372036.854775807)
    assert parse_duration("9223372036854775807ns") == pytest.approx(9223372036.854775807)
    for value in OUT_OF_RANGE:
        with pytest.raises(ValueError, match="out of range"):
            parse_duration(value)


@given(
    whole=st.integers(min_value=0, max_value=10**18 - 1),
    fraction=st.text(alphabet="0123456789", min_size=1, max_size=9),
    unit=st.sampled_from(["ns", "us", "ms", "s", "m", "h"]),
)
def test_a_plain_decimal_is_read_as_the_general_path_reads_it(whole: int, fraction: str, unit: str) -> None:
    """"123.4s" takes a shortcut without Fraction (the generator writes a million arrivals so); a leading
    space sends the same text down the general path, which must agree to the last bit, or on refusing."""
    text = f"{whole}.{fraction}{unit}"
    try:
        general = parse_duration(" " + text)
    except ValueError:
        with pytest.raises(ValueError, match="out of range"):
            parse_duration(text)
        return
    assert parse_duration(text) == general


def test_plain_decimals_by_hand() -> None:
    assert parse_duration("0.1s") == 0.1
    assert parse_duration("2345.6s") == 2345.6
    assert parse_duration("1.5h") == 5400.0
    assert parse_duration("2.25ms") == 0.00225
    assert parse_duration("2562047.7h") == 9223371720.0  # 2562047.7 x 3600: just under Go's maximum
    with pytest.raises(ValueError, match="out of range"):
        parse_duration("2562048.1h")
