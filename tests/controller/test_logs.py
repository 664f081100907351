"""The structured log line: its timestamp as datetime would write it, values quoted only when they
must be, and the same fields in logfmt and JSON."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from pykueue.controller.logs import Formatter, _timestamp, logfmt


@given(st.floats(min_value=0, max_value=4e9, allow_nan=False))
def test_timestamp_is_rfc3339_utc_with_milliseconds(created: float) -> None:
    expected = datetime.fromtimestamp(created, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    assert _timestamp(created) == expected


def test_values_are_quoted_only_when_they_must_be() -> None:
    assert logfmt({"a": "plain", "b": "two words", "c": 'say "x"', "d": "k=v", "e": None, "f": 3}) == (
        'a=plain b="two words" c="say \\"x\\"" d="k=v" e="" f=3')


def test_logfmt_and_json_carry_the_same_fields() -> None:
    record = logging.LogRecord("pykueue.controller", logging.INFO, __file__, 1, "decision", None, None)
    record.created = 1763900000.25
    record.fields = {"decision": "Admitted", "workload": "ns/w"}
    line = Formatter("logfmt").format(record)
    assert line == ("time=2025-11-23T12:13:20.250Z level=info logger=pykueue.controller msg=decision "
                    "decision=Admitted workload=ns/w")
    assert json.loads(Formatter("json").format(record)) == {
        "time": "2025-11-23T12:13:20.250Z", "level": "info", "logger": "pykueue.controller",
        "msg": "decision", "decision": "Admitted", "workload": "ns/w"}
