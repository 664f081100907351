"""Reading input paths into numbered YAML documents.

A path is a file or a directory (its ``*.yaml`` / ``*.yml`` files, sorted, not recursive). Documents are
numbered from 1 in each file the way a YAML stream counts them, so an empty document between two ``---``
still takes a number. A syntax error spoils only its own document: the stream is split on document
markers and each piece is parsed on its own, so later documents are still read and reported. Pieces go
through ``fastyaml`` first and through PyYAML only when it gives up.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass

import yaml

try:  # the C parser is several times faster; fall back when PyYAML was built without libyaml
    from yaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover - depends on the PyYAML build
    from yaml import SafeLoader as _Loader  # type: ignore[assignment]

from pykueue.api.fastyaml import FAILED, DocumentReader
from pykueue.api.inputs import Source


class _StrictLoader(_Loader):  # type: ignore[misc,valid-type]
    """PyYAML's safe loader, except that a key repeated in one mapping is an error: YAML would keep
    the last value and silently drop the others (two documents run together lose the first)."""


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    loader.flatten_mapping(node)
    seen: set = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        try:
            duplicate = key in seen
            seen.add(key)
        except TypeError:  # an unhashable key: PyYAML reports it below
            continue
        if duplicate:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping", node.start_mark, f"found duplicate key {key!r}", key_node.start_mark
            )
    return yaml.SafeLoader.construct_mapping(loader, node, deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)

_MARKER = re.compile(r"^---(?:[ \t]|$)", re.MULTILINE)
_END = re.compile(r"^\.\.\.[ \t]*$", re.MULTILINE)


@dataclass(slots=True)
class RawDocument:
    """One document: its parsed content, or the reason it could not be parsed."""

    source: Source
    content: object = None
    error: str | None = None


@dataclass(slots=True)
class ReadError:
    """A path that could not be read at all (missing, unreadable, not UTF-8)."""

    path: str
    message: str


def expand_paths(paths: list[str]) -> Iterator[str | ReadError]:
    """Files in the order given; a directory contributes its YAML files sorted by path."""
    for path in paths:
        if os.path.isdir(path):
            names = sorted(
                os.path.join(path, name)
                for name in os.listdir(path)
                if name.endswith((".yaml", ".yml")) and os.path.isfile(os.path.join(path, name))
            )
            yield from names
        elif os.path.exists(path):
            yield path
        else:
            yield ReadError(path, "no such file or directory")


def read_text(path: str) -> str | ReadError:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except UnicodeDecodeError as exc:
        return ReadError(path, f"not UTF-8 text: {exc.reason} at byte {exc.start}")
    except OSError as exc:
        return ReadError(path, exc.strerror or str(exc))


def _has_content(text: str) -> bool:
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#") and not stripped.startswith("%"):
            return True
    return False


def split_documents(text: str) -> list[tuple[str, int]]:
    """The stream's documents as ``(text, line of the file where it starts)``, numbered as YAML does."""
    text = _END.sub("", text)
    starts = [m.start() for m in _MARKER.finditer(text)]
    if not starts:
        return [(text, 1)] if _has_content(text) else []
    pieces = []
    head = text[: starts[0]]
    if _has_content(head):
        pieces.append((head, 1))
    line, counted = 1, 0
    for i, start in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else len(text)
        line += text.count("\n", counted, start)
        counted = start
        # keep anything written on the marker line itself ("--- {a: 1}")
        pieces.append((text[start + 3 : end], line))
    return pieces


def _describe(exc: yaml.YAMLError, first_line: int) -> str:
    """PyYAML's complaint with line numbers of the file (the piece began at ``first_line``)."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None)
    context_mark = getattr(exc, "context_mark", None)
    where = f" at line {mark.line + first_line}, column {mark.column + 1}" if mark is not None else ""
    if context and context_mark is not None:
        context = f"{context} started at line {context_mark.line + first_line}"
    return f"YAML syntax error{where}: {context + ', ' if context else ''}{problem}"


def parse_file(path: str, text: str, reader: DocumentReader | None = None) -> list[RawDocument]:
    """All documents of one file: each through the fast reader, or PyYAML when the fast one gives up."""
    reader = reader or DocumentReader()
    docs = []
    for i, (piece, first_line) in enumerate(split_documents(text), start=1):
        source = Source(path, i)
        content = reader.read(piece)
        if content is not FAILED:
            docs.append(RawDocument(source, content))
            continue
        try:
            docs.append(RawDocument(source, yaml.load(piece, Loader=_StrictLoader)))  # noqa: S506 - a safe loader
        except yaml.YAMLError as exc:
            docs.append(RawDocument(source, error=_describe(exc, first_line)))
    return docs
