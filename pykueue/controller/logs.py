"""Structured logs: one line per record, as logfmt (`key=value`, the default) or JSON.

A record's fields come from `extra={"fields": {...}}`, so a decision is greppable by its keys
(`decision=Admitted workload=ns/name clusterQueue=cq reason=...`) instead of parsed from prose.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

FORMATS = ("logfmt", "json")


def _value(value: Any) -> str:
    text = "" if value is None else str(value)
    if text and not any(c in text for c in ' "=\\\n\t'):
        return text
    return json.dumps(text)


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
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds").replace(
                "+00:00", "Z"),
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
