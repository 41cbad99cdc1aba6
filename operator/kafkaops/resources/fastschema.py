"""A JSON Schema, compiled into a plain Python predicate: "does this document have no schema error?".

`kafkaops apply` checks thousands of manifests and the fleet a million; jsonschema spends
~90 us on each, walking its generic machinery (most of it resolving $refs). The kafkaops schemas
use a handful of keywords, so they compile to nested closures that answer the same question in a
few microseconds (schemas.schema_predicate inlines the $refs and compiles once per kind).

Only the answer "valid" is ever trusted: when the predicate says a document is invalid, the
caller runs jsonschema (schema_check.check_schema) for the exact issues. A schema using a
keyword this compiler does not know compiles to None (the caller then uses jsonschema), and
tests (tests/resources, tests/fleet) compare the predicate with jsonschema on the resources
corpus and on thousands of mutated documents.

Semantics follow jsonschema's Draft 2020-12 validator: `integer` accepts floats with an
integral value, booleans are neither integers nor numbers, `format` is an annotation, each
keyword applies only to the instance types it constrains, `pattern` is `re.search`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

Check = Callable[[Any], bool]

# Keywords that never constrain (annotations and Kubernetes extensions are x-*).
_ANNOTATIONS = frozenset({"description", "default", "title", "$schema", "$comment", "format", "examples",
                          "deprecated", "readOnly", "writeOnly", "$id", "$defs", "definitions"})
_SUPPORTED = frozenset({"type", "properties", "required", "additionalProperties", "enum", "const", "minimum",
                        "maximum", "minLength", "maxLength", "pattern", "items", "minItems", "maxItems", "allOf"})


class Unsupported(Exception):
    """The schema uses something this compiler does not handle."""


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


_TYPES: dict[str, Check] = {
    "object": lambda x: isinstance(x, dict),
    "array": lambda x: isinstance(x, list),
    "string": lambda x: isinstance(x, str),
    "boolean": lambda x: isinstance(x, bool),
    "null": lambda x: x is None,
    "number": _is_number,
    "integer": lambda x: (isinstance(x, int) and not isinstance(x, bool)) or (isinstance(x, float) and x.is_integer()),
}


def compile_schema(schema: Any) -> Check | None:
    """The predicate of `schema`, or None when it uses a keyword this module does not support."""
    try:
        return _compile(schema)
    except Unsupported:
        return None


def _compile(schema: Any) -> Check:
    if schema is True:
        return lambda x: True
    if schema is False:
        return lambda x: False
    if not isinstance(schema, Mapping):
        raise Unsupported(repr(schema))
    for key in schema:
        if key not in _SUPPORTED and key not in _ANNOTATIONS and not key.startswith("x-"):
            raise Unsupported(key)
    checks: list[Check] = []
    if "type" in schema:
        names = [schema["type"]] if isinstance(schema["type"], str) else list(schema["type"])
        if not all(n in _TYPES for n in names):
            raise Unsupported(f"type {names}")
        tests = [_TYPES[n] for n in names]
        checks.append(tests[0] if len(tests) == 1 else _any_of(tests))
    for key in ("enum", "const"):
        if key in schema:
            values = schema[key] if key == "enum" else [schema[key]]
            if not all(isinstance(v, str) for v in values):
                raise Unsupported(f"non-string {key}")  # jsonschema's equality rules for other types differ
            allowed = frozenset(values)
            checks.append(lambda x, allowed=allowed: isinstance(x, str) and x in allowed)
    if "minimum" in schema:
        low = schema["minimum"]
        checks.append(lambda x, low=low: not _is_number(x) or x >= low)
    if "maximum" in schema:
        high = schema["maximum"]
        checks.append(lambda x, high=high: not _is_number(x) or x <= high)
    if "minLength" in schema:
        n = schema["minLength"]
        checks.append(lambda x, n=n: not isinstance(x, str) or len(x) >= n)
    if "maxLength" in schema:
        n = schema["maxLength"]
        checks.append(lambda x, n=n: not isinstance(x, str) or len(x) <= n)
    if "pattern" in schema:
        search = re.compile(schema["pattern"]).search
        checks.append(lambda x, search=search: not isinstance(x, str) or search(x) is not None)
    if "minItems" in schema:
        n = schema["minItems"]
        checks.append(lambda x, n=n: not isinstance(x, list) or len(x) >= n)
    if "maxItems" in schema:
        n = schema["maxItems"]
        checks.append(lambda x, n=n: not isinstance(x, list) or len(x) <= n)
    if "items" in schema:
        if not isinstance(schema["items"], (Mapping, bool)):
            raise Unsupported("items as a list")
        item = _compile(schema["items"])
        checks.append(lambda x, item=item: not isinstance(x, list) or all(map(item, x)))
    if "required" in schema:
        required = tuple(schema["required"])
        checks.append(lambda x, required=required: not isinstance(x, dict) or all(map(x.__contains__, required)))
    if "properties" in schema or "additionalProperties" in schema:
        props = {k: _compile(v) for k, v in (schema.get("properties") or {}).items()}
        extra_schema = schema.get("additionalProperties", True)
        extra = None if extra_schema is True else _compile(extra_schema)

        def objects(x: Any, props: dict[str, Check] = props, extra: Check | None = extra) -> bool:
            if not isinstance(x, dict):
                return True
            for key, value in x.items():
                check = props.get(key)
                if check is not None:
                    if not check(value):
                        return False
                elif extra is not None and not extra(value):
                    return False
            return True

        checks.append(objects)
    if "allOf" in schema:
        parts = [_compile(s) for s in schema["allOf"]]
        checks.append(_all_of(parts))
    if not checks:
        return lambda x: True
    if len(checks) == 1:
        return checks[0]
    return _all_of(checks)


# Loops rather than all()/any() over a generator: these run once per schema node per document.
def _all_of(checks: list[Check]) -> Check:
    frozen = tuple(checks)

    def every(x: Any) -> bool:
        for check in frozen:
            if not check(x):
                return False
        return True

    return every


def _any_of(checks: list[Check]) -> Check:
    frozen = tuple(checks)

    def some(x: Any) -> bool:
        for check in frozen:
            if check(x):
                return True
        return False

    return some
