"""Text from elsewhere (the dashboard's what-if box) is read through the checks files get, held to a
paste's limits: its size, and what aliases may expand it to, in values and in characters."""

from __future__ import annotations

import time

from pykueue.api.documents import MAX_PASTE, PASTED, parse_file, parse_text
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
