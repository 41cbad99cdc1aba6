"""The schemas' $refs, inlined by resources/schemas.py without `referencing` (so that a command
whose documents are all valid does not import it): each ref resolves to what referencing's own
resolution gives, every kind is inlined whole, and what cannot be resolved leaves the kind to
jsonschema."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from kafkaops.resources import schemas
from kafkaops.resources.kinds import KINDS


def ref_nodes(node: Any) -> list[str]:
    """Every $ref of a schema document, in order."""
    if isinstance(node, Mapping):
        return ([node["$ref"]] if "$ref" in node else []) + [r for v in node.values() for r in ref_nodes(v)]
    if isinstance(node, list):
        return [r for v in node for r in ref_nodes(v)]
    return []


def refs(node: Any) -> int:
    if isinstance(node, Mapping):
        return ("$ref" in node) + sum(refs(v) for v in node.values())
    if isinstance(node, list):
        return sum(refs(v) for v in node)
    return 0


def test_every_ref_resolves_as_referencing_resolves_it() -> None:
    """The oracle: a `referencing` registry of the package's schemas, as jsonschema resolves them."""
    documents = list(schemas._documents().values())
    registry = Registry().with_resources((doc["$id"], Resource(contents=doc, specification=DRAFT202012))
                                         for doc in documents)
    checked = 0
    for doc in documents:
        resolver = registry.resolver(base_uri=doc["$id"])
        for ref in ref_nodes(doc):
            contents, uri = schemas._lookup(ref, doc["$id"])
            resolved = resolver.lookup(ref)
            assert contents == resolved.contents, ref
            assert uri == resolved.resolver.lookup("").contents["$id"], ref  # the document it lands in
            checked += 1
    assert checked >= 40, checked


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_is_inlined_whole(kind: str) -> None:
    assert refs(schemas.schema_for(kind)) > 0, "each kind's schema refers to common.json"
    inlined = schemas.inlined_schema(kind)
    assert inlined is not None and refs(inlined) == 0


def test_a_pointer_into_a_list_and_escaped_names_resolve() -> None:
    common = schemas.common_schema()
    name = next(iter(common["$defs"]))
    assert schemas._lookup(f"common.json#/$defs/{name}", common["$id"]) == (common["$defs"][name], common["$id"])
    assert schemas._lookup("#", common["$id"])[0] is common
    docs = {"$id": "https://example.test/a.json", "x": [{"a/b": {"c~d": 1}}]}
    schemas._by_id()[docs["$id"]] = docs
    try:
        assert schemas._lookup("a.json#/x/0/a~1b/c~0d", docs["$id"]) == (1, docs["$id"])
    finally:
        del schemas._by_id()[docs["$id"]]


@pytest.mark.parametrize("ref", ["other.json#/$defs/time", "common.json#anchor", "common.json#/$defs/nope"])
def test_what_cannot_be_resolved_is_a_lookup_error(ref: str) -> None:
    with pytest.raises(LookupError):
        schemas._lookup(ref, schemas.common_schema()["$id"])


@pytest.mark.parametrize("ref", ["common.json#anchor", "common.json#/$id/0", "common.json#/$defs/time/x/y/z"])
def test_a_kind_whose_ref_cannot_be_inlined_is_left_to_jsonschema(ref: str, monkeypatch) -> None:
    kind = "KafkaTopic"
    broken = {**schemas.schema_for(kind), "properties": {"spec": {"$ref": ref}}}
    original = schemas.schema_for
    monkeypatch.setattr(schemas, "schema_for", lambda k: broken if k == kind else original(k))
    schemas.inlined_schema.cache_clear()
    try:
        assert schemas.inlined_schema(kind) is None
    finally:
        schemas.inlined_schema.cache_clear()
