"""Reading input paths into numbered YAML documents.

A path is a file or a directory (its ``*.yaml`` / ``*.yml`` files, sorted, not recursive). Documents are
numbered from 1 in each file the way a YAML stream counts them, so an empty document between two ``---``
still takes a number. A syntax error spoils only its own document: the stream is split on document
markers and each piece is parsed on its own, so later documents are still read and reported. Pieces go
through ``fastyaml`` first and through PyYAML only when it gives up.

Nothing a file holds may crash the reader: a UTF-8 byte-order mark is skipped (as kubectl does), a value
PyYAML cannot build (``2024-02-30``, an integer of thousands of digits) is a problem at its position,
and a document nested more than ``MAX_DEPTH`` collections deep is refused before any parser builds it
(libyaml's composer recurses in C and dies with a signal some tens of thousands of levels down; Python's
readers hit the recursion limit far sooner). Upstream's YAML reader stops at 10000 levels; no object the
simulator reads needs more than about 15, so pykueue's limit is 100.

Everything downstream (validation, problem messages that quote a value, the loader's caches, the
output) walks the expanded document, so both kinds of input are bounded before that, in bytes and in
what aliases expand to. A file (``FILES``: every PATH, ``--config``, ``--what-if``, the generator and
rangespec files) is read only up to ``MAX_FILE`` bytes, and aliases may make one of its documents hold
at most ``MAX_EXPANDED`` values and ``MAX_DOCUMENT_CHARACTERS`` characters of text: no object the API
server accepts is bigger written out (its request bodies stop at 3 MiB), while a few hundred KB of
aliases of one long string would otherwise expand to gigabytes. Text that someone else sends (the
dashboard's what-if box) goes through ``parse_text`` with ``PASTED``'s limits: the same checks with
tighter bounds, the expansion no more values or characters than its size could hold written out.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
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

    def construct_object(self, node: yaml.Node, deep: bool = False) -> object:
        """A value Python cannot build (an impossible date, an integer too long to convert) is a
        YAML error at the value's position, not an exception that escapes the reader."""
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, OverflowError) as exc:
            if isinstance(exc, yaml.YAMLError):
                raise
            problem = f"cannot read the value {_excerpt(node)}: {_first_clause(exc)}"
            raise _BadValue(None, None, problem, node.start_mark) from None


class _BadValue(yaml.constructor.ConstructorError):
    """Well-formed YAML holding a value that cannot be built."""


def _excerpt(node: yaml.Node) -> str:
    value = node.value if isinstance(node, yaml.ScalarNode) else ""
    return repr(value if len(value) <= 40 else value[:37] + "...")


def _first_clause(exc: BaseException) -> str:
    """Python's message up to its first ``;`` (the rest is advice for programmers)."""
    return str(exc).split(";")[0].strip() or type(exc).__name__


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

MAX_DEPTH = 100  # collections nested in one document; see the module's docstring
MAX_EXPANDED = 1_000_000  # values in one document once its aliases are expanded
_NESTING = "[{-:?"  # every level of nesting needs one of these characters
_LEADING = re.compile(r"^[ \t?:-]*", re.MULTILINE)  # indentation and block indicators opening a line
_UNBOUNDED = re.compile(r"[&!\x85\u2028\u2029]|\r(?!\n)")  # where _LEADING's bound does not hold
_MARKER = re.compile(r"^---(?:[ \t]|$)", re.MULTILINE)
_END = re.compile(r"^\.\.\.[ \t]*$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Limits:
    """What one text may hold: its size in bytes (None: any), and what its documents may expand to
    through aliases, in values and in characters of text (None: any)."""

    size: int | None = None
    values: int = MAX_EXPANDED
    characters: int | None = None


MAX_FILE = 256 * 1024 * 1024  # bytes of one input file: far more than any cluster's objects written out
MAX_DOCUMENT_CHARACTERS = 3 * 1024 * 1024  # the API server's largest request body (MaxRequestBodyBytes)
FILES = Limits(size=MAX_FILE, characters=MAX_DOCUMENT_CHARACTERS)  # every file a command reads
MAX_PASTE = 256 * 1024  # bytes; the largest object the API server stores is about 1.5 MB of JSON
PASTED = Limits(size=MAX_PASTE, values=MAX_PASTE // 2, characters=MAX_PASTE)  # "a: [1,1,1...]": 2 bytes a value


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
    """Files in the order given; a directory contributes its YAML files sorted by path.

    As ``kubectl apply -f DIR``: a directory that cannot be listed, and a YAML name in it that cannot
    be read (a symbolic link to nothing), are errors rather than silently fewer objects."""
    for path in paths:
        if os.path.isdir(path):
            try:
                entries = os.listdir(path)
            except OSError as exc:
                yield ReadError(path, f"cannot list the directory: {exc.strerror or exc}")
                continue
            for name in sorted(os.path.join(path, entry) for entry in entries if entry.endswith((".yaml", ".yml"))):
                if os.path.isfile(name):
                    yield name
                elif os.path.islink(name) and not os.path.exists(name):
                    yield ReadError(name, f"a symbolic link to {os.readlink(name)}, which does not exist")
        elif os.path.exists(path):
            yield path
        elif os.path.islink(path):
            yield ReadError(path, f"a symbolic link to {os.readlink(path)}, which does not exist")
        else:
            yield ReadError(path, "no such file or directory")


def read_text(path: str, limit: int | None = FILES.size) -> str | ReadError:
    """The file's text, its line ends ``\n`` (as Python's text mode reads them); a leading UTF-8
    byte-order mark is dropped, as kubectl drops it. A file over ``limit`` bytes is an error, found
    from its size before it is read (a device or a pipe is read no further than one byte past the limit)."""
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if limit is not None and size > limit:
                return ReadError(path, _too_big(size, limit))
            data = handle.read(-1 if limit is None else limit + 1)
    except OSError as exc:
        return ReadError(path, exc.strerror or str(exc))
    if limit is not None and len(data) > limit:
        return ReadError(path, _too_big(None, limit))
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return ReadError(path, f"not UTF-8 text: {exc.reason} at byte {exc.start}")
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def _too_big(size: int | None, limit: int) -> str:
    """The file's size (None: a stream, known only to go on past the limit) against the limit."""
    return f"{'' if size is None else f'{size} bytes, '}more than the {limit} bytes pykueue reads of one file"


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
    label = "YAML error" if isinstance(exc, _BadValue) else "YAML syntax error"
    return f"{label}{where}: {context + ', ' if context else ''}{problem}"


def _may_nest_too_deep(text: str) -> bool:
    """Cheap upper bounds on the depth, so that ordinary documents skip the event parser. Every level
    needs one of ``_NESTING``; and a flow collection needs a bracket while a block one nests at most two
    levels (a mapping and its indentless sequence) per column of indentation, indicators included."""
    if sum(text.count(c) for c in _NESTING) <= MAX_DEPTH:
        return False
    if _UNBOUNDED.search(text):  # anchors, tags, other line breaks: measure
        return True
    leading = max(len(run) for run in _LEADING.findall(text))
    return text.count("[") + text.count("{") + 2 * (leading + 1) > MAX_DEPTH


def nesting_error(text: str, first_line: int = 1) -> str | None:
    """Why ``text`` nests too deeply to be read safely, or ``None``. The event parser keeps its own
    stack, so it measures any depth without recursing; it only runs when the cheap bounds allow more
    than ``MAX_DEPTH`` levels."""
    if not _may_nest_too_deep(text):
        return None
    depth = 0
    try:
        for event in yaml.parse(text, Loader=_Loader):
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    return _too_deep(event.start_mark, first_line)
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except yaml.YAMLError as exc:
        # PyYAML 6.0.4 and later refuse very deep flow collections in the scanner, ahead of the events.
        mark = getattr(exc, "problem_mark", None)
        if "nesting depth" in str(exc) and mark is not None:
            return _too_deep(mark, first_line)
        return None  # a syntax error: the ordinary reading reports it
    return None


def _too_deep(mark: yaml.Mark, first_line: int) -> str:
    return (f"YAML error at line {mark.line + first_line}, column {mark.column + 1}: "
            f"collections nested more than {MAX_DEPTH} levels deep (pykueue's limit)")


def parse_text(text: str, source: str, limits: Limits = PASTED) -> list[RawDocument]:
    """The documents of a text from elsewhere (``source`` names it in messages), checked as files are
    and held to ``limits``: a text over the size is one document with the error."""
    size = len(text.encode())
    if limits.size is not None and size > limits.size:
        return [RawDocument(Source(source, 1), error=f"{size} bytes, more than the {limits.size} accepted")]
    return parse_file(source, text, limits=limits)


def parse_file(path: str, text: str, reader: DocumentReader | None = None,
               limits: Limits = FILES) -> list[RawDocument]:
    """All documents of one file: each through the fast reader, or PyYAML when the fast one gives up."""
    reader = reader or DocumentReader()
    docs = []
    for i, (piece, first_line) in enumerate(split_documents(text), start=1):
        source = Source(path, i)
        too_deep = nesting_error(piece, first_line)
        if too_deep is not None:
            docs.append(RawDocument(source, error=too_deep))
            continue
        content = reader.read(piece)
        if content is not FAILED:
            docs.append(RawDocument(source, content))
            continue
        try:
            content = yaml.load(piece, Loader=_StrictLoader)  # noqa: S506 - a safe loader
        except yaml.YAMLError as exc:
            docs.append(RawDocument(source, error=_describe(exc, first_line)))
            continue
        except RecursionError:  # mappings nested through aliases, deeper than Python's stack
            content = _TOO_DEEP
        aliased = _alias_problem(content, limits) if "&" in piece else None
        if aliased is not None:
            docs.append(RawDocument(source, error=f"YAML error: {aliased}"))
        else:
            docs.append(RawDocument(source, content))
    return docs


_TOO_DEEP = object()


def _alias_problem(content: object, limits: Limits) -> str | None:
    """Aliases can nest a document deeper than its text (each line adding a level), or expand it
    exponentially (a "billion laughs"; with a long string, in characters), or make it contain itself:
    all of that is refused, as upstream's YAML reader refuses excessive aliasing. Walks the expanded
    value without recursion and stops at the first limit."""
    if content is _TOO_DEEP:
        return f"aliases nest collections more than {MAX_DEPTH} levels deep (pykueue's limit)"
    seen = characters = 0
    stack: list[tuple[object, int]] = [(content, 1)]
    while stack:
        value, depth = stack.pop()
        seen += 1
        if seen > limits.values:
            return f"aliases expand the document to more than {limits.values} values"
        if isinstance(value, str) and limits.characters is not None:
            characters += len(value)
            if characters > limits.characters:
                return f"aliases expand the document to more than {limits.characters} characters"
        if isinstance(value, dict):
            children: Iterable[object] = [*value.keys(), *value.values()]
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > MAX_DEPTH:
            return f"aliases nest collections more than {MAX_DEPTH} levels deep (pykueue's limit)"
        stack.extend((child, depth + 1) for child in children)
    return None
