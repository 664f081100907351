"""The fast result writers give exactly the standard library's / PyYAML's bytes, also on the values
where the fast path would differ and must hand the piece back (small and non-finite floats, huge
integers, lone surrogates, keys that are not strings; for YAML strings PyYAML quotes or folds)."""

from __future__ import annotations

import copy
import io
import json
from typing import Any

import pytest
import yaml

from pykueue.sim.result_json import write_json
from pykueue.sim.result_yaml import write_yaml


def _document(items: list[Any]) -> dict[str, Any]:
    return {"apiVersion": "v", "endTime": 1.5, "workloads": items, "events": [], "clusterQueues": [{"a": 1}],
            "summary": {"nested": {"x": [1.25, None, True]}}}


ODD_VALUES = [
    1e-05, 2.5e-07, -3e-06, 0.0001, 0.00012, 1e16, 1.5e300, 5e-324, -0.0, 0.0,
    float("nan"), float("inf"), float("-inf"),
    2**64, -(2**63) - 1, 2**63 - 1,
    "lone \ud800 surrogate", "é and \u2028 and \x7f and \x01 \n \t \" \\", "1e-5", "0.00001",
]


@pytest.mark.parametrize("value", ODD_VALUES, ids=[repr(v) for v in ODD_VALUES])
def test_json_matches_the_standard_library_on_odd_values(value: Any) -> None:
    items = [{"name": f"w{i}", "value": value if i == 70 else i / 10, "nested": {"v": [value]}} for i in range(130)]
    doc = _document(items)
    out = io.StringIO()
    write_json(doc, out)
    assert out.getvalue() == json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


@pytest.mark.parametrize("names", [0, 10, 200], ids=["no e-", "a few e-", "more e- than are looked at one by one"])
@pytest.mark.parametrize("value", [1e-05, 2.5e-07, 0.5], ids=repr)
def test_json_finds_a_negative_exponent_among_names_with_e_minus(names: int, value: float) -> None:
    """A slice's small floats are found however many names such as "large-2" come before them: each
    "e-" is looked at, or past a few dozen the whole slice is searched at once."""
    items = [{"name": f"large-{i}" if i < names else f"w{i}", "value": value if i == 63 else 1} for i in range(64)]
    items += [{"name": "e-" * 50, "value": 2}]
    doc = _document(items)
    out = io.StringIO()
    write_json(doc, out)
    assert out.getvalue() == json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def test_json_matches_on_non_string_keys_and_empty_documents() -> None:
    for doc in ({}, {"a": []}, {"a": {}}, {1: [1, 2]}, {"w": [{1: "one", "k": [[]]}]}, {"w": [[], {}, 1.0]}):
        out = io.StringIO()
        write_json(doc, out)  # type: ignore[arg-type]
        assert out.getvalue() == json.dumps(doc, indent=2, ensure_ascii=False) + "\n", doc


def test_json_to_a_binary_backed_stream_is_the_same_bytes() -> None:
    doc = _document([{"name": "é", "t": i / 3} for i in range(200)])
    raw = io.BytesIO()
    text = io.TextIOWrapper(raw, encoding="utf-8", newline="")
    text.write("before:")  # pending text is flushed ahead of the bytes
    write_json(doc, text)
    text.flush()
    assert raw.getvalue().decode() == "before:" + json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


YAML_ODD = [
    "word " * 30 + "end", "x " * 70, "wo: rd " * 3, "x#y", "x #y", "a:b", "a:", "- a", "-a", "---", "...x", ".5",
    "null", "Null", "~", "", " a", "a ", "a  b", "1.5", "1_000", "0x1F", "Yes", "on", "OFF", "2024-01-01",
    "=", "<<", "couldn't", "'quoted'", "é", "tab\there", "line\nbreak", "[x]", "{x}", "x,y", "a" * 130,
    1e-05, 1e17, -2.5, float("nan"), float("inf"), -0.0, 2**70, True, None, 0,
    [], {}, [[1, []], {}], {"k": {"k2": [{"a": None}]}}, {1: "int key"}, {"a" * 130: "long key"},
]


@pytest.mark.parametrize("value", YAML_ODD, ids=[repr(v)[:40] for v in YAML_ODD])
def test_yaml_matches_pyyaml_on_odd_values(value: Any) -> None:
    """Each use is a copy: a result shares no object (PyYAML would anchor a shared one)."""
    def v() -> Any:
        return copy.deepcopy(value)

    items = [{"name": f"w{i}", "value": v() if i == 3 else i / 10,
              "nested": {"deep": [{"m": v()}], "list": [v(), "plain"]}} for i in range(6)]
    doc = _document(items)
    doc["summary"] = {"odd": v(), "seq": [v()]}
    doc["endTime"] = v()
    out = io.StringIO()
    write_yaml(doc, out)
    assert out.getvalue() == yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=120)


def test_yaml_wraps_a_long_message_where_pyyaml_does() -> None:
    """A message that fits on its line is written here; one that PyYAML folds goes to PyYAML."""
    for length in range(95, 130):
        doc = _document([{"message": ("ab " * 60)[:length].strip()}, {"reason": "x", "message": "short one"}])
        out = io.StringIO()
        write_yaml(doc, out)
        assert out.getvalue() == yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=120), length


def test_yaml_matches_on_documents_that_are_not_results() -> None:
    for doc in ({}, {"a": []}, {1: [1]}, {"a": [[]]}, {"-a": 1}, {"k": "v"}):
        out = io.StringIO()
        write_yaml(doc, out)  # type: ignore[arg-type]
        assert out.getvalue() == yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=120), doc
