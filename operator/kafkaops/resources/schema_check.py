"""Structural validation: a document against its kind's JSON Schema, every error with its field path."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from kafkaops.resources.config_types import suggest
from kafkaops.resources.issues import Finding, error, join_path
from kafkaops.resources.schemas import schema_predicate, validator_for

if TYPE_CHECKING:
    from jsonschema import ValidationError

SCHEMA_VIOLATION = "SchemaViolation"

_JSON_TYPES = {
    str: "string", bool: "boolean", int: "integer", float: "number", type(None): "null", list: "array", dict: "object",
}


def check_schema(kind: str, body: Mapping[str, Any]) -> list[Finding]:
    """Every schema violation of `body` as a `kind` document (all of them, not the first).

    A document the compiled predicate calls valid has none (the common case, ~30x faster than
    jsonschema); otherwise jsonschema finds each violation."""
    if schema_predicate(kind)(body):
        return []
    findings: list[Finding] = []
    for err in sorted(validator_for(kind).iter_errors(body), key=lambda e: [str(p) for p in e.absolute_path]):
        findings.extend(_findings(err))
    return findings


def _path(parts: Iterable[Any]) -> str:
    return join_path("", *parts)


def _describe(value: Any) -> str:
    name = _JSON_TYPES.get(type(value), type(value).__name__)
    if isinstance(value, (dict, list)):
        return f"an {name}" if name[0] in "aeiou" else f"a {name}"
    return f"{name} {value!r}"


def _findings(err: ValidationError) -> Iterator[Finding]:
    path = _path(err.absolute_path)
    keyword = err.validator
    schema = err.schema if isinstance(err.schema, Mapping) else {}
    instance = err.instance
    if keyword == "required":
        for prop in err.validator_value:
            if isinstance(instance, Mapping) and prop not in instance and repr(prop) in err.message:
                yield error(join_path(path, prop), "required field is missing", SCHEMA_VIOLATION)
        return
    if keyword == "additionalProperties" and isinstance(instance, Mapping):
        known = list(schema.get("properties", {}))
        for extra in instance:
            if extra not in known:
                close = suggest(str(extra), known)
                hint = f"; did you mean {close!r}?" if close else (f" (known: {', '.join(known)})" if known else "")
                yield error(join_path(path, str(extra)), f"unknown field{hint}", SCHEMA_VIOLATION)
        return
    if keyword == "type":
        expected = err.validator_value
        wanted = " or ".join(expected) if isinstance(expected, list) else expected
        reason = f"expected {wanted}, got {_describe(instance)}"
        if path.startswith("spec.config.") and instance is None:
            reason = "a config value cannot be empty (null); remove the key to use Kafka's default"
        elif path == "spec.bootstrapServers" and isinstance(instance, str):
            reason += "; give a list with one host:port per item"
        yield error(path, reason, SCHEMA_VIOLATION)
        return
    if keyword == "enum":
        options = ", ".join(str(v) for v in err.validator_value)
        close = suggest(str(instance), [str(v) for v in err.validator_value]) if isinstance(instance, str) else None
        hint = f"; did you mean {close!r}?" if close else ""
        yield error(path, f"{instance!r} is not one of: {options}{hint}", SCHEMA_VIOLATION)
        return
    if keyword == "const":
        yield error(path, f"must be {err.validator_value!r}, got {instance!r}", SCHEMA_VIOLATION)
        return
    yield error(path, err.message, SCHEMA_VIOLATION)
