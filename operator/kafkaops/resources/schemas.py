"""The JSON Schemas in schemas/ — one per kind plus common.json — loaded once.

They are the single source of truth: validation runs them with jsonschema
(Draft 2020-12) and crds.py turns them into the CRDs' openAPIV3Schema. `schema_predicate`
answers "no schema error?" fast for the common case of a valid document (fastschema.py).

jsonschema and referencing are imported when first needed, not with this module: every
`kafkaops` command imports the validation, and a run whose documents are all valid needs neither
(~70 ms together of a 0.26 s start-up; docs/architecture.md, "Imported when needed").
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from functools import cache
from importlib import resources as importlib_resources
from urllib.parse import urljoin
from typing import TYPE_CHECKING, Any

from kafkaops.resources.fastschema import compile_schema
from kafkaops.resources.kinds import KINDS

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator
    from referencing import Registry

SCHEMA_FILES = ("common.json", *(info.schema_file for info in KINDS.values()))


@cache
def _documents() -> dict[str, dict[str, Any]]:
    folder = importlib_resources.files("kafkaops.resources").joinpath("schemas")
    return {name: json.loads(folder.joinpath(name).read_text("utf-8")) for name in SCHEMA_FILES}


@cache
def registry() -> Registry:
    """A referencing registry holding every schema under its $id."""
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012

    return Registry().with_resources(
        (doc["$id"], Resource(contents=doc, specification=DRAFT202012)) for doc in _documents().values()
    )


def schema_for(kind: str) -> dict[str, Any]:
    """The JSON Schema of a whole `kind` document (do not mutate it)."""
    return _documents()[KINDS[kind].schema_file]


def common_schema() -> dict[str, Any]:
    return _documents()["common.json"]


@cache
def validator_for(kind: str) -> Draft202012Validator:
    from jsonschema import Draft202012Validator

    schema = schema_for(kind)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema, registry=registry())


@cache
def _by_id() -> dict[str, dict[str, Any]]:
    return {doc["$id"]: doc for doc in _documents().values()}


def _lookup(ref: str, base: str) -> tuple[Any, str]:
    """What `ref` (a URI and a JSON pointer, as this package's schemas write them) points to, with
    the URI of its document. LookupError for anything else (an anchor, an unknown document)."""
    uri, _, pointer = urljoin(base, ref).partition("#")
    node: Any = _by_id()[uri]  # KeyError: a LookupError
    if pointer and not pointer.startswith("/"):
        raise LookupError(f"{ref}: not a JSON pointer")
    for part in pointer.split("/")[1:]:
        key = part.replace("~1", "/").replace("~0", "~")
        node = node[int(key)] if isinstance(node, list) else node[key]
    return node, uri


@cache
def inlined_schema(kind: str) -> dict[str, Any] | None:
    """The kind's JSON Schema with every $ref inlined (None: a recursive, dynamic or unresolvable
    $ref). The refs are resolved here, not by `referencing` (~20 ms to import, for every command
    that validates): these are the package's own documents, and
    tests/resources/test_schemas_inlined.py compares the result with referencing's resolution."""
    schema = schema_for(kind)

    def inline(node: Any, base: str, depth: int) -> Any:
        if depth > 50:
            raise RecursionError("recursive $ref")
        if isinstance(node, Mapping):
            if "$dynamicRef" in node or "$recursiveRef" in node:
                raise RecursionError("dynamic $ref")
            if "$ref" in node:
                contents, uri = _lookup(node["$ref"], base)
                target = inline(contents, uri, depth + 1)
                rest = {k: inline(v, base, depth + 1) for k, v in node.items() if k != "$ref"}
                return {"allOf": [target, rest]} if rest else target
            return {k: inline(v, base, depth + 1) for k, v in node.items() if k not in ("$id", "$defs")}
        if isinstance(node, list):
            return [inline(item, base, depth + 1) for item in node]
        return node

    try:
        return inline(schema, schema["$id"], 0)
    except (RecursionError, LookupError, ValueError, TypeError):
        return None
    finally:
        inline = None  # type: ignore[assignment]  # it refers to itself: a cycle otherwise (see yaml_nodes.construct)


@cache
def schema_predicate(kind: str) -> Callable[[Any], bool]:
    """"Has this `kind` document no schema error?", fast: the schema with its $refs inlined, compiled
    once to closures (fastschema.py); jsonschema on the inlined schema when it cannot be compiled, the
    registry-resolving validator when it cannot be inlined. Only a True answer is relied on: the
    errors themselves always come from jsonschema (schema_check.py); tests compare the answers with
    jsonschema's on the corpus and on mutated documents."""
    flat = inlined_schema(kind)
    if flat is None:
        return validator_for(kind).is_valid
    compiled = compile_schema(flat)
    if compiled is not None:
        return compiled
    from jsonschema import Draft202012Validator

    return Draft202012Validator(flat).is_valid
