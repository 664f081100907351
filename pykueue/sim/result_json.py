"""The result document as JSON, through orjson, with exactly the bytes of
``json.dumps(result, indent=2, ensure_ascii=False) + "\\n"``.

The standard library's encoder is pure Python as soon as it indents: it was the largest single cost of
a ``simulate --output json`` run. orjson indents by two spaces too, and writes the same separators,
escapes and integers; its floats differ only below 1e-4 (``0.00001`` and ``2.5e-7`` where Python
writes ``1e-05`` and ``2.5e-07``) and for NaN and infinities (``null``). So the long lists of the
document (workloads, events) are encoded by orjson in slices, re-indented to their depth; a slice
whose text may hold such a float, that has a non-finite float, or that orjson refuses (an integer
beyond 64 bits, a lone surrogate, a key that is not a string) is encoded by the standard library
instead. Everything else (the short top-level values) goes through the standard library.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from itertools import islice
from typing import IO, Any

import orjson

from pykueue.sim.entries import Entries

_STDLIB = json.JSONEncoder(indent=2, ensure_ascii=False)
_SLICE = 64  # list entries encoded by one orjson call (tens of KB of text)
# Where orjson's text of a float may differ from Python's: a small float written in decimal (0.0000...)
# or with a negative exponent (a digit, then e-). Strings may match too; then the slice is only encoded
# twice.
_DIGITS_AS_0 = bytes.maketrans(b"123456789", b"000000000")
_FEW_E_MINUS = 64  # "e-" found this often in a slice (names such as "large-2"): every digit is looked at


def _exponent(text: bytes) -> bool:
    """Whether ``text`` holds a digit followed by ``e-``. Each ``e-`` is looked at (names put a few in
    most slices); past a few dozen, the whole text is translated so that every digit reads 0 and
    searched for ``0e-`` once, which costs a pass over the text but no loop in Python."""
    at = text.find(b"e-", 1)
    for _ in range(_FEW_E_MINUS):
        if at == -1:
            return False
        if 48 <= text[at - 1] <= 57:  # an ASCII digit
            return True
        at = text.find(b"e-", at + 2)
    return at != -1 and b"0e-" in text.translate(_DIGITS_AS_0)


def _finite(value: Any) -> bool:
    """True when no float inside ``value`` is NaN or infinite (orjson writes those as ``null``)."""
    stack = [value]
    pop, push = stack.pop, stack.extend
    while stack:
        v = pop()
        t = type(v)
        if t is str or t is int or v is None:
            continue
        if t is dict:
            push(v.values())
        elif t is list or t is tuple:
            push(v)
        elif t is float:
            if not math.isfinite(v):
                return False
        elif isinstance(v, float) and not math.isfinite(v):
            return False
        elif isinstance(v, dict):
            push(v.values())
        elif isinstance(v, (list, tuple)):
            push(v)
    return True


def _stdlib(value: Any, indent: str) -> bytes:
    """``value`` as the standard library writes it, its lines after the first indented by ``indent``."""
    return _STDLIB.encode(value).replace("\n", "\n" + indent).encode("utf-8", "surrogatepass")


def _items(items: list[Any], finite: bool = False) -> bytes:
    """Entries of a top-level list, each at depth 2 (four spaces), joined by ``,\\n``. ``finite``: the
    producer knows that no float in them is NaN or infinite."""
    try:
        # Nested one list deeper, orjson already writes the entries at depth 2 (four spaces).
        text = orjson.dumps([items], option=orjson.OPT_INDENT_2)
        if b"0.0000" in text or _exponent(text):
            raise ValueError
        if not finite and b"null" in text and not _finite(items):  # without a null, orjson met no NaN or infinity
            raise ValueError
    except (ValueError, TypeError):  # orjson.JSONEncodeError is a TypeError
        return b",\n".join([b"    " + _stdlib(item, "    ") for item in items])
    # b'[\n  [\n    {...},\n    {...}\n  ]\n]' -> the entries, as they are.
    return text[6:-6]


def write_json(result: dict[str, Any] | Iterable[tuple[str, Any]], out: IO[str]) -> None:
    """``json.dumps(result, indent=2, ensure_ascii=False) + "\\n"`` written to ``out`` in pieces.

    ``result`` may also be its items, made as they are written (``result.streamed_result``), with an
    ``Entries`` for a list."""
    if isinstance(result, dict):
        if not result or any(type(key) is not str for key in result):
            for piece in _STDLIB.iterencode(result):  # rare: written as the standard library would
                out.write(piece)
            out.write("\n")
            return
        items: Iterable[tuple[str, Any]] = result.items()
    else:
        items = result
    write = _byte_writer(out)
    first = True
    for key, value in items:
        head = (b"{\n  " if first else b",\n  ") + _stdlib(key, "") + b": "
        first = False
        t = type(value)
        if t is list and value:
            write(head + b"[\n")
            for start in range(0, len(value), _SLICE):
                if start:
                    write(b",\n")
                write(_items(value[start:start + _SLICE]))
            write(b"\n  ]")
        elif t is Entries and not value:
            write(head + b"[]")
        elif t is Entries:
            write(head + b"[\n")
            entries = iter(value)
            chunk = list(islice(entries, _SLICE))
            while chunk:
                write(_items(chunk, value.finite))
                chunk = list(islice(entries, _SLICE))
                if chunk:
                    write(b",\n")
            write(b"\n  ]")
        else:
            write(head + _stdlib(value, "  "))
    write(b"{}\n" if first else b"\n}\n")  # no items: the empty document


def _byte_writer(out: IO[str]) -> Any:
    """Write UTF-8 bytes to ``out``'s binary buffer when it has one that takes UTF-8 (flushing its
    text layer first), else decoded."""
    buffer = getattr(out, "buffer", None)
    encoding = (getattr(out, "encoding", None) or "").lower().replace("-", "").replace("_", "")
    if buffer is not None and encoding == "utf8":
        out.flush()
        return buffer.write

    def write(data: bytes) -> None:
        out.write(data.decode("utf-8", "surrogatepass"))

    return write
