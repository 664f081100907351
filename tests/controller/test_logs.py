"""The structured log line: its timestamp as datetime would write it, values quoted only when they
must be, and the same fields in logfmt and JSON."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from pykueue.controller.runtime.logs import Formatter, _timestamp, logfmt


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


FORGERIES = ["job\nlevel=info msg=admitted", "job\rtime=0 level=error", "a\x1b[2Jb", "x\x85y", "p\u2028q", "del\x7f",
             "nul\x00", "tab\there"]


@given(st.text())
def test_no_value_can_break_or_forge_a_line(text: str) -> None:
    """Object names and messages come from users: whatever they hold, a record stays one line with no
    control character in it, and a quoted value reads back as it was."""
    line = logfmt({"workload": text, "msg": "decision"})
    assert not any(ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f or c in "\u2028\u2029" for c in line)
    value = line[len("workload="):-len(" msg=decision")]
    assert (json.loads(value) if value.startswith('"') else value) == text


def test_control_characters_are_escaped_not_written() -> None:
    for text in FORGERIES:
        value = logfmt({"name": text})[len("name="):]
        assert value.startswith('"') and json.loads(value) == text, text
    assert logfmt({"name": "job\rtime=0"}) == 'name="job\\rtime=0"'
    assert logfmt({"name": "del\x7f"}) == 'name="del\\u007f"'
