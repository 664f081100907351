"""A fast reader for the plain subset of YAML that manifests are written in, with PyYAML as the authority.

PyYAML builds Python objects in Python and reads about 3 MB/s, far too slow for 50,000 generated
Workloads. Manifests, though, use a small subset of YAML: block mappings and sequences, plain and
quoted one-line scalars, comments, small flow collections. This module reads that subset directly and
gives up (returns ``FAILED``) on anything else (anchors, tags, block scalars, multi-line scalars, tabs,
escapes, any character outside printable ASCII, nesting deeper than Python's stack...), so the caller
falls back to PyYAML and the result is always what PyYAML would produce. Only printable ASCII is read
here because YAML's idea of white space is narrower than Python's (``str.strip`` removes a no-break
space, which YAML keeps in a scalar) and YAML breaks lines on a lone carriage return.
Plain scalars are typed with PyYAML's own resolver and constructors (YAML 1.1: ``on`` is ``True``,
``1:30`` is 90, ``2024-01-01`` a date), so typing never differs either.

A document is split into its top-level keys; each key's block of text is read once per load and
shared by every document that has the same text (generated Workloads differ only in their metadata).
Callers must therefore treat the returned objects as read-only.
"""

from __future__ import annotations

import re
from typing import Any

from yaml.constructor import SafeConstructor
from yaml.nodes import ScalarNode
from yaml.resolver import Resolver

_FAIL = object()
_CONSTRUCTOR = SafeConstructor()
_RESOLVERS = Resolver.yaml_implicit_resolvers
_STR_TAG = "tag:yaml.org,2002:str"
_CONSTRUCT = {
    "tag:yaml.org,2002:bool": _CONSTRUCTOR.construct_yaml_bool,
    "tag:yaml.org,2002:int": _CONSTRUCTOR.construct_yaml_int,
    "tag:yaml.org,2002:float": _CONSTRUCTOR.construct_yaml_float,
    "tag:yaml.org,2002:null": _CONSTRUCTOR.construct_yaml_null,
    "tag:yaml.org,2002:timestamp": _CONSTRUCTOR.construct_yaml_timestamp,
}
# Characters that make a plain scalar start mean something else in YAML; such lines go to PyYAML.
_SPECIAL_START = set("-?:,[]{}#&*!|>'\"%@`")
_PLAIN_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
_TOP_KEY = re.compile(r"^(?=[^\s#\-.%])", re.MULTILINE)
_PYYAML_ONLY = ("&", "*", "!", "\\", "\t")
_PLAIN_KEY = re.compile(r"[^\s\-?:,\[\]{}#&*!|>'\"%@`][^:#]*")
_PRINTABLE = bytes(range(0x20, 0x7F)) + b"\n\r"
_LONE_CR = re.compile(r"\r(?!\n)")


class _GiveUp(Exception):
    pass


_PLAIN_CACHE: dict[str, Any] = {}


def _plain(text: str) -> Any:
    """A plain scalar, typed exactly as PyYAML's SafeLoader types it (results are immutable: cached)."""
    try:
        return _PLAIN_CACHE[text]
    except KeyError:
        pass
    value = _resolve_plain(text)
    if len(_PLAIN_CACHE) >= 50_000:
        _PLAIN_CACHE.clear()
    _PLAIN_CACHE[text] = value
    return value


def _resolve_plain(text: str) -> Any:
    if not text or ": " in text or " #" in text or text.endswith(":"):
        raise _GiveUp
    if text[0] in _SPECIAL_START and not (text[0] == "-" and text[1:2].isdigit()):
        raise _GiveUp
    for tag, regexp in _RESOLVERS.get(text[0], ()):
        if regexp.match(text):
            if tag == _STR_TAG:
                break
            if tag == "tag:yaml.org,2002:int" and _PLAIN_INT.fullmatch(text):
                return int(text)
            constructor = _CONSTRUCT.get(tag)
            if constructor is None:  # merge keys, "=": leave them to PyYAML
                raise _GiveUp
            return constructor(ScalarNode(tag, text))
    return text


def _quoted(text: str) -> tuple[str, str]:
    """A quoted scalar at the start of ``text``: its value and what follows the closing quote."""
    quote = text[0]
    if quote == "'":
        pos = 1
        while True:
            end = text.find("'", pos)
            if end < 0:
                raise _GiveUp
            if text.startswith("''", end):
                pos = end + 2
                continue
            return text[1:end].replace("''", "'"), text[end + 1 :]
    end = text.find('"', 1)
    if end < 0 or "\\" in text[:end]:
        raise _GiveUp
    return text[1:end], text[end + 1 :]


def _scalar(text: str) -> Any:
    if text[0] in "'\"":
        value, rest = _quoted(text)
        if rest.strip() and not rest.lstrip().startswith("#"):
            raise _GiveUp
        return value
    if text[0] in "[{":
        value, rest = _flow(text)
        if rest.strip() and not rest.lstrip().startswith("#"):
            raise _GiveUp
        return value
    return _plain(_strip_comment(text))


def _strip_comment(text: str) -> str:
    cut = text.find(" #")
    return (text[:cut] if cut >= 0 else text).rstrip()


def _flow_item(text: str) -> tuple[Any, str]:
    text = text.lstrip()
    if not text:
        raise _GiveUp
    if text[0] in "'\"":
        return _quoted(text)
    if text[0] in "[{":
        return _flow(text)
    end = len(text)
    for stop in (",", "]", "}"):
        pos = text.find(stop)
        if 0 <= pos < end:
            end = pos
    item = text[:end].strip()
    if ": " in item or item.endswith(":") or "#" in item:
        raise _GiveUp
    return _plain(item), text[end:]


def _flow(text: str) -> tuple[Any, str]:
    """A one-line flow collection (``[a, b]``, ``{a: 1}``) of scalars or nested flow collections."""
    opening = text[0]
    closing = "]" if opening == "[" else "}"
    rest = text[1:].lstrip()
    result: Any = [] if opening == "[" else {}
    if rest.startswith(closing):
        return result, rest[1:]
    while True:
        if opening == "[":
            item, rest = _flow_item(rest)
            result.append(item)
        else:
            rest = rest.lstrip()
            if rest[:1] in ("'", '"'):
                key, rest = _quoted(rest)
            else:
                colon = rest.find(":")
                if colon <= 0:
                    raise _GiveUp
                key = _plain(rest[:colon].strip())
                rest = rest[colon:]
            if not rest.startswith(": "):
                raise _GiveUp
            value, rest = _flow_item(rest[2:])
            if key in result:
                raise _GiveUp  # let PyYAML report the duplicate key with its position
            result[key] = value
        rest = rest.lstrip()
        if rest.startswith(","):
            rest = rest[1:].lstrip()
            if rest.startswith(closing):  # trailing comma
                return result, rest[1:]
            continue
        if rest.startswith(closing):
            return result, rest[1:]
        raise _GiveUp


class _Lines:
    """Significant lines as ``(indent, text)``; comments and blank lines dropped."""

    __slots__ = ("items",)

    def __init__(self, text: str) -> None:
        items = []
        for line in text.split("\n"):
            stripped = line.lstrip(" ")
            if not stripped or stripped[0] == "#":
                continue
            if stripped[0] == "\t" or "\t" in line[: len(line) - len(stripped)]:
                raise _GiveUp
            items.append((len(line) - len(stripped), stripped.rstrip("\r ")))
        self.items = items


def _key(text: str) -> tuple[Any, str] | None:
    """``key: rest`` -> (key, rest); ``None`` when the line is not a mapping entry."""
    if text[0] in "'\"":
        key, rest = _quoted(text)
        if rest == ":" or rest.startswith(": "):
            return key, rest[1:].lstrip()
        return None
    colon = text.find(": ")
    if colon < 0:
        if text.endswith(":") and _PLAIN_KEY.fullmatch(text[:-1]):
            return _plain(text[:-1].rstrip()), ""
        return None
    raw = text[:colon]
    if not _PLAIN_KEY.fullmatch(raw):
        return None
    return _plain(raw.rstrip()), text[colon + 2 :].lstrip()


def _node(lines: list[tuple[int, str]], i: int, indent: int) -> tuple[Any, int]:
    text = lines[i][1]
    if text == "-" or text.startswith("- "):
        return _sequence(lines, i, indent)
    return _mapping(lines, i, indent)


def _value(lines: list[tuple[int, str]], rest: str, i: int, indent: int, in_mapping: bool) -> tuple[Any, int]:
    """The value after ``key:`` or ``-`` on line ``i - 1``: inline, a nested block, or null."""
    if rest and not rest.startswith("#"):
        return _scalar(rest), i
    if i < len(lines):
        next_indent, next_text = lines[i]
        if next_indent > indent:
            return _node(lines, i, next_indent)
        if in_mapping and next_indent == indent and (next_text == "-" or next_text.startswith("- ")):
            return _sequence(lines, i, indent)
    return None, i


def _mapping(lines: list[tuple[int, str]], i: int, indent: int) -> tuple[dict[Any, Any], int]:
    result: dict[Any, Any] = {}
    while i < len(lines):
        line_indent, text = lines[i]
        if line_indent < indent:
            break
        if line_indent > indent or text == "-" or text.startswith("- "):
            raise _GiveUp
        entry = _key(text)
        if entry is None:
            raise _GiveUp
        key, rest = entry
        if rest[:1] in ("&", "*", "!", "|", ">"):
            raise _GiveUp
        value, i = _value(lines, rest, i + 1, indent, in_mapping=True)
        if key in result:
            raise _GiveUp  # let PyYAML report the duplicate key with its position
        result[key] = value
    return result, i


def _sequence(lines: list[tuple[int, str]], i: int, indent: int) -> tuple[list[Any], int]:
    result: list[Any] = []
    while i < len(lines):
        line_indent, text = lines[i]
        if line_indent < indent or not (text == "-" or text.startswith("- ")):
            break
        if line_indent > indent:
            raise _GiveUp
        item = text[1:].lstrip(" ")
        if item[:1] in ("&", "*", "!", "|", ">", "?"):
            raise _GiveUp
        if item and not item.startswith("#") and (item.startswith("- ") or _key(item) is not None):
            # "- key: value": a mapping (or nested sequence) starting on this line, at its column
            inner = line_indent + len(text) - len(item)
            lines[i] = (inner, item)
            value, i = _node(lines, i, inner)
        else:
            value, i = _value(lines, item, i + 1, indent, in_mapping=False)
        result.append(value)
    return result, i


def parse_block(text: str) -> Any:
    """A block of YAML text as PyYAML would read it, or the module's ``_FAIL`` marker."""
    try:
        lines = _Lines(text).items
        if not lines:
            return None
        value, end = _node(lines, 0, lines[0][0])
        if end != len(lines):
            return _FAIL
        return value
    except (_GiveUp, ValueError, IndexError, RecursionError):
        return _FAIL


class DocumentReader:
    """Reads documents through the fast path, sharing identical top-level blocks within one load."""

    def __init__(self, max_cache: int = 100_000) -> None:
        self.cache: dict[str, Any] = {}
        self.max_cache = max_cache

    def read(self, text: str) -> Any:
        """The document's content, or ``FAILED`` when PyYAML must read it."""
        if any(c in text for c in _PYYAML_ONLY) or text.lstrip().startswith("%") or _unusual(text):
            # anchors, aliases, tags, escapes, tabs, directives, unusual characters: left to PyYAML
            return FAILED
        starts = [m.start() for m in _TOP_KEY.finditer(text)]
        if not starts:
            return FAILED if text.strip() and not _only_comments(text) else None
        if text[: starts[0]].strip() and not _only_comments(text[: starts[0]]):
            return FAILED
        result: dict[Any, Any] = {}
        cache = self.cache
        for n, start in enumerate(starts):
            end = starts[n + 1] if n + 1 < len(starts) else len(text)
            block = text[start:end]
            value = cache.get(block, _FAIL)
            if value is _FAIL:
                value = parse_block(block)
                if value is _FAIL or not isinstance(value, dict):
                    return FAILED
                if len(cache) >= self.max_cache:
                    cache.clear()
                cache[block] = value
            if not result.keys().isdisjoint(value):
                return FAILED  # a repeated top-level key: PyYAML reports it with its position
            result.update(value)
        return result


def _unusual(text: str) -> bool:
    """Anything but printable ASCII and line ends (a carriage return only in CRLF). Byte operations:
    a regular expression over every document would cost more than the check is worth."""
    if not text.isascii() or text.encode("ascii").translate(None, _PRINTABLE):
        return True
    return "\r" in text and _LONE_CR.search(text) is not None


def _only_comments(text: str) -> bool:
    return all(not line.strip() or line.lstrip().startswith("#") for line in text.split("\n"))


FAILED = _FAIL
