"""Structured logs: one line per record, as logfmt (`key=value`, the default) or JSON.

A record's fields come from `extra={"fields": {...}}`, so a decision is greppable by its keys
(`decision=Admitted workload=ns/name clusterQueue=cq reason=...`) instead of parsed from prose.
"""

from __future__ import annotations

import json
import logging
import re
import time
from typing import Any

FORMATS = ("logfmt", "json")
# what a bare value may not hold: logfmt's own syntax, and every control or line-breaking character (C0,
# DEL, C1, U+2028/9), so an object's name or a message cannot start a forged line or rewrite a terminal
_QUOTED = re.compile('[ "=\\\\\x00-\x1f\x7f-\x9f\u2028\u2029]')


def _value(value: Any) -> str:
    """The value bare when that is safe, else a JSON string: every control character escaped (DEL too,
    which json.dumps leaves), non-ASCII as \\u escapes, so a record is always one line."""
    text = "" if value is None else str(value)
    if text and not _QUOTED.search(text):
        return text
    return json.dumps(text).replace("\x7f", "\\u007f")


_second: list[Any] = [None, ""]  # the last whole second formatted, and its text


def _timestamp(created: float) -> str:
    """RFC 3339 in UTC with milliseconds; the date and time part is formatted once per second (a
    decision line per admission made it a tenth of the controller's logging cost)."""
    whole = int(created)
    micros = round((created - whole) * 1e6)  # rounded as datetime.fromtimestamp rounds
    if micros >= 1_000_000:
        whole, micros = whole + 1, micros - 1_000_000
    if _second[0] != whole:
        _second[0], _second[1] = whole, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole))
    return f"{_second[1]}.{micros // 1000:03d}Z"


def logfmt(fields: dict[str, Any]) -> str:
    return " ".join(f"{key}={_value(value)}" for key, value in fields.items())


class Formatter(logging.Formatter):
    """`time level logger msg` first, then the record's own fields, in logfmt or JSON."""

    def __init__(self, style: str = "logfmt") -> None:
        super().__init__()
        if style not in FORMATS:
            raise ValueError(f"log format must be one of {', '.join(FORMATS)}")
        self.style = style

    def format(self, record: logging.LogRecord) -> str:
        fields: dict[str, Any] = {
            "time": _timestamp(record.created),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        fields.update(getattr(record, "fields", None) or {})
        if record.exc_info:
            fields["error"] = self.formatException(record.exc_info)
        if self.style == "json":
            return json.dumps(fields, default=str)
        return logfmt(fields)


def setup(level: str = "info", style: str = "logfmt") -> None:
    """The root logger writes structured lines to stderr."""
    import sys

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(Formatter(style))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
