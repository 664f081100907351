"""Text from elsewhere (the dashboard's what-if box) is read through the checks files get, held to a
paste's limits: its size, and what aliases may expand it to, in values and in characters. Files are
bounded the same way, with a file's limits: bytes read, and characters a document expands to."""

from __future__ import annotations

import time
from pathlib import Path

from pykueue.api.documents import (
    FILES,
    MAX_DOCUMENT_CHARACTERS,
    MAX_FILE,
    MAX_PASTE,
    PASTED,
    ReadError,
    parse_file,
    parse_text,
    read_text,
)
from tests.api.helpers import laughs


def test_a_plain_document_reads_as_it_would_from_a_file() -> None:
    (doc,) = parse_text("kind: Job\nmetadata: {name: a}\n", "what-if")
    assert (doc.content, doc.error, str(doc.source)) == ({"kind": "Job", "metadata": {"name": "a"}}, None, "what-if:1")


def test_more_than_the_size_is_refused_unread() -> None:
    text = "a: " + "x" * MAX_PASTE + "\n"
    (doc,) = parse_text(text, "what-if")
    assert doc.content is None and doc.error == f"{MAX_PASTE + 4} bytes, more than the {MAX_PASTE} accepted"


def test_aliases_may_not_expand_a_paste_past_what_its_bytes_could_hold() -> None:
    # 12**5 = 248832 leaves from about 400 bytes: a file may hold that many values, a paste may not
    text = laughs(5, width=12)
    assert len(text) < 500
    started = time.perf_counter()
    (doc,) = parse_text(text, "what-if")
    assert doc.error == f"YAML error: aliases expand the document to more than {PASTED.values} values"
    assert time.perf_counter() - started < 5
    (as_file,) = parse_file("f.yaml", text)
    assert as_file.error is None


def test_a_long_string_repeated_through_aliases_is_counted_in_characters() -> None:
    # 3 levels of a 1000-character string: 1000 values, 1,000,000 characters from about 1.2 KB
    text = "s: &s " + "y" * 1000 + "\n" + laughs(3, "*s")
    assert len(text) < 1500
    (doc,) = parse_text(text, "what-if")
    assert doc.error == f"YAML error: aliases expand the document to more than {PASTED.characters} characters"


def test_syntax_errors_and_deep_nesting_are_reported_as_for_files() -> None:
    (bad,) = parse_text("a: [\n", "what-if")
    assert bad.error is not None and bad.error.startswith("YAML syntax error at line 2")
    (deep,) = parse_text("a: " + "[" * 200 + "]" * 200 + "\n", "what-if")
    assert deep.error is not None and "nested more than 100 levels deep" in deep.error


def test_a_files_documents_expand_no_further_than_an_api_object_could_be() -> None:
    """A file's document may expand through aliases to 3 MiB of text (the API server's largest request
    body): a 100,000-character string and 30 aliases of it are 3,100,002 characters with the keys ``s``
    and ``l`` (under 3,145,728), one alias more is 3,200,002 (over)."""
    assert FILES.characters == MAX_DOCUMENT_CHARACTERS == 3 * 1024 * 1024
    head = "s: &s " + "y" * 100_000 + "\nl: ["
    (fits,) = parse_file("f.yaml", head + ", ".join(["*s"] * 30) + "]\n")
    assert fits.error is None and len(fits.content["l"]) == 30  # type: ignore[index]
    started = time.perf_counter()
    (over,) = parse_file("f.yaml", head + ", ".join(["*s"] * 31) + "]\n")
    assert over.error == "YAML error: aliases expand the document to more than 3145728 characters"
    assert time.perf_counter() - started < 5


def test_a_file_is_read_up_to_its_byte_limit(tmp_path: Path) -> None:
    assert FILES.size == MAX_FILE == 256 * 1024 * 1024
    path = tmp_path / "f.yaml"
    path.write_bytes(b"\xef\xbb\xbfa: 12345\n")  # 3 + 9 = 12 bytes, the byte-order mark dropped
    assert read_text(str(path), limit=12) == "a: 12345\n"
    refused = read_text(str(path), limit=11)
    assert isinstance(refused, ReadError)
    assert refused.message == "12 bytes, more than the 11 bytes pykueue reads of one file"
    stream = read_text("/dev/zero", limit=1000)  # no size to look at: read one byte past the limit
    assert isinstance(stream, ReadError) and stream.message == "more than the 1000 bytes pykueue reads of one file"


def test_a_file_reads_with_its_line_ends_as_text_mode_reads_them(tmp_path: Path) -> None:
    path = tmp_path / "crlf.yaml"
    path.write_bytes(b"a: 1\r\n---\r\nb: 2\rc: 3\n")
    text = read_text(str(path))
    assert text == "a: 1\n---\nb: 2\nc: 3\n"
    assert [doc.content for doc in parse_file(str(path), text)] == [{"a": 1}, {"b": 2, "c": 3}]  # type: ignore[arg-type]
