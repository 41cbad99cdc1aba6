"""yaml_nodes.construct (data + field positions in one walk) answers what PyYAML's SafeConstructor
and the loader's own walk answer, on every manifest of the corpus and examples and on YAML that
exercises scalar resolution; documents it does not handle fall back and still load the same."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml

from kafkaops.resources.loader import _line_map, _Loader, find_yaml_files, load_text
from kafkaops.resources.yaml_nodes import construct

ROOT = Path(__file__).resolve().parents[2]
FILES = [*find_yaml_files(ROOT / "tests" / "resources" / "corpus"), *find_yaml_files(ROOT / "examples")]

SCALARS = """\
apiVersion: kafkaops.io/v1alpha1
kind: KafkaTopic
metadata: {name: "t", labels: {a: 'b'}}
spec:
  partitions: 0x1F
  replicationFactor: 1_000
  octal: 0o17
  sexagesimal: 1:30
  float: 1.5e3
  infinite: -.inf
  yes_no: [yes, No, on, OFF, true, False]
  nulls: [~, null, ]
  strings: [!!str 12, "012", '1.0', x y, "", !!str, ! 12]
  ints: [!!int "7", -0, +12, 0, 012, 0012, 10, 1000000000000000000000]
  1: integer key
  false: bool key
  ~: null key
  "spec.dotted": value
  block: |
    two
    lines
  nested: [[1, [2]], {a: [{b: c}]}]
  dup: 1
  dup: 2
"""
NOT_PLAIN = [
    "base: &b {x: 1}\nother:\n  <<: *b\n  y: 2\n",       # merge key
    "a: &a [1, 2]\nb: *a\n",                          # alias of a collection
    "when: 2024-01-02T03:04:05Z\n",                   # timestamp
    "blob: !!binary aGVsbG8=\n",                      # binary
    "s: !!set {a, b}\n",                              # set
    "o: !!omap [a: 1, b: 2]\n",                        # ordered map
]


def reference(text: str) -> list:
    """SafeConstructor's data and the loader's walk, per document."""
    loader = _Loader(text)
    out = []
    try:
        while loader.check_node():
            node = loader.get_node()
            out.append((loader.construct_document(node), _line_map(node)))
    finally:
        loader.dispose()
    return out


def fast(text: str) -> list:
    loader = _Loader(text)
    out = []
    try:
        while loader.check_node():
            out.append(construct(loader.get_node(), loader))
    finally:
        loader.dispose()
    return out


def same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("text", [SCALARS, *(p.read_text() for p in FILES)],
                         ids=["scalars", *(p.name for p in FILES)])
def test_plain_documents_construct_like_safe_constructor(text: str) -> None:
    expected = reference(text)
    got = fast(text)
    assert got and all(g is not None for g in got)
    assert [(d, (lines, columns, dups)) for d, (lines, columns, dups) in got] == expected
    for (data, _), (ref, _) in zip(got, expected):  # types too: 1 vs 1.0 vs True vs "1"
        pairs = [(data, ref)]
        while pairs:
            a, b = pairs.pop()
            assert type(a) is type(b), (a, b)
            if isinstance(a, dict):
                assert list(a) == list(b) and all(type(x) is type(y) for x, y in zip(a, b))
                pairs += [(a[k], b[k]) for k in a]
            elif isinstance(a, list):
                pairs += list(zip(a, b))


def test_scalars_document_covers_what_it_says() -> None:
    (data, (lines, columns, duplicates)), = fast(SCALARS)
    spec = data["spec"]
    assert spec["partitions"] == 31 and spec["replicationFactor"] == 1000 and spec["sexagesimal"] == 90
    assert spec["yes_no"] == [True, False, True, False, True, False]
    assert spec["strings"][:2] == ["12", "012"] and spec[1] == "integer key" and spec[False] == "bool key"
    assert spec["ints"] == [7, 0, 12, 0, 10, 10, 10, 10**21]  # a leading 0 is octal (YAML 1.1)
    assert spec["dup"] == 2 and duplicates == [("spec.dup", 24, 23)]
    assert (lines["spec.nested[1].a[0].b"], columns["spec.nested[1].a[0].b"]) == (22, 28)


@pytest.mark.parametrize("text", NOT_PLAIN)
def test_other_documents_fall_back_and_load_as_before(text: str) -> None:
    assert fast(text) == [None]
    loaded = load_text("apiVersion: kafkaops.io/v1alpha1\nkind: KafkaTopic\n" + text, "x.yaml")
    (data, positions), = reference("apiVersion: kafkaops.io/v1alpha1\nkind: KafkaTopic\n" + text)
    assert dict(loaded.documents[0].body) == data and dict(loaded.documents[0].lines) == positions[0]


def test_a_complex_key_still_reports_pyyamls_error() -> None:
    assert fast("? [complex, key]\n: value\n") == [None]
    loaded = load_text("kind: KafkaTopic\n? [complex, key]\n: value\n", "x.yaml")
    assert not loaded.documents
    assert [e.rule for e in loaded.errors] == ["YamlSyntaxError"] and "unhashable" in loaded.errors[0].reason


def _tags(node) -> list:
    """Every node's tag, depth first."""
    out, stack = [], [node]
    while stack:
        current = stack.pop()
        out.append((type(current).__name__, current.tag, current.value if isinstance(current, yaml.ScalarNode) else None))
        if isinstance(current, yaml.MappingNode):
            stack += [x for pair in current.value for x in pair]
        elif isinstance(current, yaml.SequenceNode):
            stack += current.value
    return out


@pytest.mark.parametrize("text", [SCALARS, *NOT_PLAIN, "a: [1, 1, '1', 1.0, yes, 'yes', ~, '', 0x1F, 0x1F]\n"])
def test_the_loaders_remembered_tags_are_pyyamls(text: str) -> None:
    """The loader remembers a plain scalar's tag by its text (_plain_scalar_tag): every node gets
    the tag PyYAML's safe loader gives it, twice in a row (the second from memory)."""
    for _ in range(2):
        ours, theirs = _Loader(text), yaml.CSafeLoader(text)
        try:
            assert _tags(ours.get_single_node()) == _tags(theirs.get_single_node())
        finally:
            ours.dispose()
            theirs.dispose()
