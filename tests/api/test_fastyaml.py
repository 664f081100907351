"""The fast reader must read exactly what PyYAML reads, or give up."""

import textwrap

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from pykueue.api.fastyaml import FAILED, DocumentReader

SAME_AS_PYYAML = [
    """
    apiVersion: kueue.x-k8s.io/v1beta2
    kind: ClusterQueue
    metadata:
      name: "cluster-queue"
      labels: {team: a, "quoted": 'it''s'}
    spec:
      namespaceSelector: {} # match all.
      resourceGroups:
      - coveredResources: ["cpu", "memory", "pods"]
        flavors:
        - name: "default-flavor"
          resources:
          - name: "cpu"
            nominalQuota: 9
          - name: memory
            nominalQuota: 36Gi
          - name: pods
            nominalQuota: 1.5
    """,
    """
    metadata:
      name: x
      creationTimestamp: 2024-01-01T00:00:10Z
      annotations:
        pykueue.dev/arrival: 10s
        on: off
        count: 0x1F
        time: 1:30
        neg: -3
        empty:
        tilde: ~
        date: 2024-02-03
    spec:
      podSets:
        - name: main
          count: 3
          template:
            spec:
              containers:
                - name: c
                  resources:
                    requests: {cpu: 500m, memory: 200Mi}
              tolerations: []
      list:
      - - a
        - b
      - [1, 2, {k: v}]
      -
        nested: true
    """,
    """
    # only a comment
    """,
]

GIVES_UP = [
    "a: &x 1\nb: *x\n",
    "a: !!str 1\n",
    "a: |\n  text\n",
    "a: >\n  folded\n",
    'a: "esc\\n"\n',
    "a: multi\n  line\n",
    "- top level list\n",
    "a:\n\tb: 1\n",
    "a: {b: 1,\n  c: 2}\n",
    "? complex\n: key\n",
    "a: b: c\n",
]


@pytest.mark.parametrize("text", SAME_AS_PYYAML)
def test_reads_like_pyyaml(text: str) -> None:
    text = textwrap.dedent(text).lstrip("\n")
    assert DocumentReader().read(text) == yaml.safe_load(text)


@pytest.mark.parametrize("text", GIVES_UP)
def test_gives_up_on_what_it_does_not_handle(text: str) -> None:
    assert DocumentReader().read(text) is FAILED


def test_identical_blocks_are_shared_between_documents() -> None:
    reader = DocumentReader()
    first = reader.read("metadata:\n  name: a\nspec:\n  x: [1]\n")
    second = reader.read("metadata:\n  name: b\nspec:\n  x: [1]\n")
    assert first["spec"] is second["spec"]
    assert first["metadata"] == {"name": "a"} and second["metadata"] == {"name": "b"}


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**12), max_value=10**12),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(alphabet="abcxyz019-_./: #'\"!&*yesnoONtrue~", max_size=12),
    st.sampled_from(
        ["500m", "36Gi", "1.5", "on", "off", "null", "2024-01-01", "1:30", "0x1F", "-3", "1e3", ""]
    ),
)
_keys = st.one_of(
    st.text(alphabet="abcdefgh-_./", min_size=1, max_size=8), st.sampled_from(["on", "1", "null"])
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_keys, inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_keys, _values, min_size=1, max_size=4), st.booleans())
def test_agrees_with_pyyaml_on_generated_documents(document: dict, flow: bool) -> None:
    text = yaml.safe_dump(document, default_flow_style=None if flow else False, sort_keys=False)
    result = DocumentReader().read(text)
    if result is not FAILED:
        assert result == yaml.safe_load(text)


# Where Python's idea of white space or of a line is not YAML's: the fast reader used to strip a
# no-break space (which YAML keeps in a scalar), to read on across a Unicode line separator, and to
# accept control characters that PyYAML refuses.
UNUSUAL = [
    "a: b\u00a0\n",
    "a: \u00a0b\n",
    "a: [x\u00a0, y]\n",
    "k\u00a0: v\n",
    "a: b\u2028c\n",
    "a: 'b'\u00a0\n",
    "a: b\rc: d\n",
    "a: b\x01\n",
    "a: b\x7f\n",
]


def test_gives_up_on_characters_outside_printable_ascii_but_not_on_crlf() -> None:
    assert [text for text in UNUSUAL if DocumentReader().read(text) is not FAILED] == []
    assert DocumentReader().read("a: b\r\nc: [1, 2]\r\n") == {"a": "b", "c": [1, 2]}


def test_nesting_beyond_pythons_stack_gives_up_instead_of_raising() -> None:
    text = "x: " + "[" * 5000 + "]" * 5000 + "\n"
    assert DocumentReader().read(text) is FAILED
