"""Line numbers for ``pykueue validate``: where in its file a problem's object and field are written.

``simulate`` reports a problem as ``FILE:DOC:`` (the document number, fixed by the simulate spec), which
reads like a line number and is not one. ``validate`` is for people fixing files in an editor, so it
prints ``FILE:LINE:`` instead: the line of the field the problem names (its key), or of the nearest
enclosing field that is written (a missing required field points at its parent), or of the object's
first line when the path names no field (``<document>``). Only the documents with a finding are read
again, with PyYAML's composer, which keeps every node's position; the loader's fast path keeps none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import yaml

from pykueue.api.documents import nesting_error, read_text, split_documents
from pykueue.api.inputs import Problem

try:  # the C composer where PyYAML has it
    from yaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover - depends on the PyYAML build
    from yaml import SafeLoader as _Loader  # type: ignore[assignment]

_AT_LINE = re.compile(r"^YAML (?:syntax )?error at line (\d+),")
_TOKEN = re.compile(r"\[([^\]]*)\]|([^.\[\]]+)")


def path_tokens(path: str) -> list[str | int]:
    """``spec.resourceGroups[0].flavors`` -> ``['spec', 'resourceGroups', 0, 'flavors']``; a bracketed
    key that is not a number stays a string (``metadata.labels[kueue.x-k8s.io/queue-name]``)."""
    tokens: list[str | int] = []
    for match in _TOKEN.finditer(path):
        bracket, name = match.groups()
        if bracket is not None:
            tokens.append(int(bracket) if bracket.isdigit() else bracket)
        else:
            tokens.append(name)
    return tokens


@dataclass(slots=True)
class _Piece:
    text: str
    first_line: int  # the line of the file where the piece starts (its ``---`` marker)
    root: yaml.Node | None = None
    composed: bool = False


def _start_line(piece: _Piece) -> int:
    """The file line of the document's first line with content (not blank, not a comment)."""
    for offset, line in enumerate(piece.text.split("\n")):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            return piece.first_line + offset
    return piece.first_line


def _compose(piece: _Piece) -> yaml.Node | None:
    if not piece.composed:
        piece.composed = True
        if nesting_error(piece.text) is None:
            try:
                piece.root = yaml.compose(piece.text, Loader=_Loader)  # noqa: S506 - composes, builds nothing
            except (yaml.YAMLError, RecursionError):
                piece.root = None
    return piece.root


def _scalar(node: yaml.Node) -> str | None:
    return node.value if isinstance(node, yaml.ScalarNode) else None


def _field_line(root: yaml.Node, tokens: list[str | int]) -> int | None:
    """0-based line in the piece of the deepest written field along ``tokens`` (``None``: not even
    the first one)."""
    node, found = root, None
    for token in tokens:
        if isinstance(node, yaml.MappingNode):
            match = next(((k, v) for k, v in node.value if _scalar(k) == str(token)), None)
            if match is None:
                return found
            found, node = match[0].start_mark.line, match[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(token, int) and token < len(node.value):
            node = node.value[token]
            found = node.start_mark.line
        else:
            return found
    return found


class Lines:
    """Finds lines for problems, reading each file at most once."""

    def __init__(self) -> None:
        self._files: dict[str, list[_Piece] | None] = {}

    def _pieces(self, file: str) -> list[_Piece] | None:
        if file not in self._files:
            text = read_text(file)
            self._files[file] = (
                None if not isinstance(text, str) else [_Piece(t, line) for t, line in split_documents(text)]
            )
        return self._files[file]

    def line(self, problem: Problem) -> int | None:
        """The file line the problem is about, or ``None`` when it is about no document (a file that
        cannot be read) or the file changed under us."""
        source = problem.source
        pieces = self._pieces(source.file) if source.doc > 0 else None
        if not pieces or source.doc > len(pieces):
            return None
        piece = pieces[source.doc - 1]
        start = _start_line(piece)
        if problem.path.startswith("<"):  # a YAML error says where it is
            at = _AT_LINE.search(problem.message)
            return int(at.group(1)) if at else start
        root = _compose(piece)
        found = _field_line(root, path_tokens(problem.path)) if root is not None else None
        return start if found is None else piece.first_line + found

    def format(self, problem: Problem) -> str:
        """The problem as ``FILE:LINE: KIND NAMESPACE/NAME: FIELD.PATH: message`` (``FILE:`` alone for a
        problem with the file itself)."""
        line = self.line(problem)
        where = f"{problem.source.file}:{line}" if line is not None else problem.source.file
        return f"{where}: {problem.body}"
