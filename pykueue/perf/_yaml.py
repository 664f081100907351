"""YAML reading shared by the generator and rangespec loaders.

Upstream reads these files with ``sigs.k8s.io/yaml``; a key given twice there is an error in strict mode
and a silent overwrite otherwise. pykueue never drops input silently, so a duplicate key is an error.
The file is read as ``pykueue simulate`` reads its PATHs (``pykueue.api.documents``): the same byte
cap, nesting depth and alias bounds, the same duplicate-key rule, so a generator or rangespec file that
is too big, too deep or an alias bomb is one line naming the file, never an overflow or ``MemoryError``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pykueue.api.documents import ReadError, parse_file, read_text


def read_yaml(path: str | Path) -> Any:
    """Read exactly one YAML document; raise ``OSError`` or ``ValueError`` with a one-line reason."""
    text = read_text(str(path))
    if isinstance(text, ReadError):
        raise OSError(text.message)
    docs = parse_file(str(path), text)
    for doc in docs:
        if doc.error is not None:
            raise ValueError(doc.error)
    contents = [doc.content for doc in docs if doc.content is not None]
    if len(contents) > 1:
        raise ValueError(f"expected one YAML document, found {len(contents)}")
    return contents[0] if contents else None


def read_config(path: str | Path, error: type[Exception]) -> Any:
    """Read a generator or rangespec file; an unreadable file or bad YAML becomes ``error(source,
    [("", message)])`` so both loaders report it the same way."""
    source = str(path)
    try:
        return read_yaml(path)
    except OSError as exc:
        raise error(source, [("", f"cannot read: {exc.strerror or exc}")]) from None
    except ValueError as exc:
        raise error(source, [("", f"invalid YAML: {exc}")]) from None
