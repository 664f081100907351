"""The result document as YAML, with exactly the bytes of
``yaml.safe_dump(result, sort_keys=False, allow_unicode=True, width=120)``, several times faster.

PyYAML builds a node for every value and runs its emitter's state machine over an event for each:
about 2 microseconds per character of output, 25 s for the baseline's 15,000 workloads. The result,
though, is block mappings and sequences of names, numbers and short messages, which PyYAML writes
in a fixed way: ``key: value`` lines, a nested mapping two spaces deeper, a sequence under a key at
the key's own column (``- ``), an empty collection as ``{}`` or ``[]``, ``null``/``true``/``false``,
an int as ``str``, a float as ``repr``. This module writes that directly, and only for values whose
text cannot differ: a string is written here only when it is printable ASCII from a conservative set
that PyYAML writes plain (no ``: ``, `` #``, leading indicator, doubled or edge spaces), that its
resolver reads back as a string (not ``null``, ``1.5``, ``on``...) and whose line cannot be folded
at the width; a float only when ``repr`` has no exponent and is finite. Any other value makes the
whole list entry (or top-level value) go through PyYAML itself, alone, which writes what it would
have written inside the document (a sequence entry at column 0 and a top-level key are emitted with
the same indents in a document of their own).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import IO, Any

import yaml
from yaml.nodes import ScalarNode
from yaml.resolver import Resolver

from pykueue.sim.entries import Entries

_WIDTH = 120
_CHUNK = 1 << 16  # characters gathered before one write
_STR_TAG = "tag:yaml.org,2002:str"
_RESOLVER = Resolver()
_RESOLVED_FIRST = frozenset(k for k in Resolver.yaml_implicit_resolvers if k)
# Words of characters PyYAML writes plain anywhere in a word, joined by single spaces; the first
# character is none of its indicators (nor '-' or '.', which start ``---``, ``...``, numbers).
_PLAIN = re.compile(r"[A-Za-z0-9_/(][A-Za-z0-9_./()',-]*(?: [A-Za-z0-9_./()',-]+)*")
_FLOAT = re.compile(r"-?[0-9]+\.[0-9]+")
_plain_cache: dict[str, bool] = {}


class _Slow(Exception):
    """A value this module does not write itself."""


def _is_plain(s: str) -> bool:
    try:
        return _plain_cache[s]
    except KeyError:
        pass
    ok = _PLAIN.fullmatch(s) is not None and (
        s[0] not in _RESOLVED_FIRST or _RESOLVER.resolve(ScalarNode, s, (True, False)) == _STR_TAG)
    if len(_plain_cache) >= 1 << 12:  # names are mostly unique: keep the cache small
        _plain_cache.clear()
    _plain_cache[s] = ok
    return ok


def _scalar(v: Any, column: int) -> str:
    """The text of a scalar starting at ``column``, or ``_Slow``."""
    t = type(v)
    if t is str:
        if _is_plain(v) and (column + len(v) <= _WIDTH or " " not in v):
            return v
    elif v is None:
        return "null"
    elif t is int:
        return str(v)
    elif t is bool:
        return "true" if v else "false"
    elif t is float:
        r = repr(v)
        if _FLOAT.fullmatch(r):
            return r
    raise _Slow


def _mapping(d: dict[Any, Any], indent: int, parts: list[str], first_prefix: str) -> None:
    """A non-empty block mapping whose keys are at column ``indent``; its first key follows
    ``first_prefix`` (the rest of a ``- `` line, or a full indent)."""
    pad = " " * indent
    prefix = first_prefix
    for k, v in d.items():
        if type(k) is not str or len(k) >= 128 or not _is_plain(k):
            raise _Slow
        t = type(v)
        if t is dict:
            if v:
                parts.append(f"{prefix}{k}:\n")
                _mapping(v, indent + 2, parts, " " * (indent + 2))
            else:
                parts.append(f"{prefix}{k}: {{}}\n")
        elif t is list:
            if v:
                parts.append(f"{prefix}{k}:\n")
                _sequence(v, indent, parts, pad)
            else:
                parts.append(f"{prefix}{k}: []\n")
        else:
            parts.append(f"{prefix}{k}: {_scalar(v, indent + len(k) + 2)}\n")
        prefix = pad


def _sequence(items: list[Any], indent: int, parts: list[str], first_prefix: str) -> None:
    """A non-empty block sequence whose ``-`` are at column ``indent``."""
    pad = " " * indent
    prefix = first_prefix
    for v in items:
        t = type(v)
        if t is dict and v:
            _mapping(v, indent + 2, parts, prefix + "- ")
        elif t is list and v:
            _sequence(v, indent + 2, parts, prefix + "- ")
        elif t is dict:
            parts.append(f"{prefix}- {{}}\n")
        elif t is list:
            parts.append(f"{prefix}- []\n")
        else:
            parts.append(f"{prefix}- {_scalar(v, indent + 2)}\n")
        prefix = pad


def _dump(value: Any) -> str:
    return yaml.safe_dump(value, sort_keys=False, allow_unicode=True, width=_WIDTH)


def _entry(item: Any) -> str:
    """One entry of a top-level list, from column 0."""
    parts: list[str] = []
    try:
        _sequence([item], 0, parts, "")
    except _Slow:
        return _dump([item])
    return "".join(parts)


def _top(key: str, value: Any) -> str:
    """One top-level ``key: value`` whose value is not a non-empty list."""
    parts: list[str] = []
    try:
        _mapping({key: value}, 0, parts, "")
    except _Slow:
        return _dump({key: value})
    return "".join(parts)


def write_yaml(result: dict[str, Any] | Iterable[tuple[str, Any]], out: IO[str]) -> None:
    """``yaml.safe_dump(result, sort_keys=False, allow_unicode=True, width=120)`` written to ``out``
    in pieces of about 64K characters. ``result`` may also be its items, as ``write_json`` takes them
    (a key is then written here only when it is plain)."""
    if isinstance(result, dict):
        if not result or any(type(k) is not str or len(k) >= 128 or not _is_plain(k) for k in result):
            out.write(_dump(result))  # not a result document: PyYAML whole
            return
        items: Iterable[tuple[str, Any]] = result.items()
    else:
        items = result
    batch: list[str] = []
    size = 0
    for key, value in items:
        t = type(value)
        if (t is list or t is Entries) and value:
            if type(key) is not str or len(key) >= 128 or not _is_plain(key):
                raise ValueError(f"result key {key!r} is not written plain")
            batch.append(f"{key}:\n")
            for item in value:
                text = _entry(item)
                batch.append(text)
                size += len(text)
                if size >= _CHUNK:
                    out.write("".join(batch))
                    batch.clear()
                    size = 0
        else:
            batch.append(_top(key, [] if t is Entries else value))
    out.write("".join(batch))
