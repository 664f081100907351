import pytest

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
