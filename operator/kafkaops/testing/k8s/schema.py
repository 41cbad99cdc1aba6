"""openAPIV3Schema handling for custom resources: pruning, defaulting, validation into causes.

The order is the real API server's: drop unknown fields (pruning), fill in defaults, validate.
Validation runs `jsonschema`'s Draft 4 validator (OpenAPI v3.0 schemas use draft-4 keywords, e.g.
boolean `exclusiveMinimum`) on a copy of the schema where `nullable` and
`x-kubernetes-int-or-string` are translated. `format` is not checked (neither is it by Kubernetes
for most formats). `x-kubernetes-validations` (CEL rules) are evaluated where they fall in the
subset `cel.py` understands; other rules (and transition rules, with `oldSelf`) are skipped.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from jsonschema import Draft4Validator
from jsonschema.exceptions import ValidationError

from . import errors
from .cel import compile_rule

ROOT_FIELDS = ("apiVersion", "kind", "metadata")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")


def field_path(parts: list[Any] | tuple[Any, ...]) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def prune(obj: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    """Drop the fields the schema does not declare, in place; return their paths."""
    pruned: list[str] = []
    _prune(obj, schema, [], pruned, root=True)
    return pruned


def _prune(value: Any, schema: dict[str, Any] | None, path: list[Any], pruned: list[str], root: bool) -> None:
    if not isinstance(schema, dict):
        return
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        additional = schema.get("additionalProperties")
        preserve = schema.get("x-kubernetes-preserve-unknown-fields") is True
        keep_meta = root or schema.get("x-kubernetes-embedded-resource") is True
        for key in list(value):
            if keep_meta and key in ROOT_FIELDS:
                continue
            if key in properties:
                _prune(value[key], properties[key], [*path, key], pruned, root=False)
            elif isinstance(additional, dict):
                _prune(value[key], additional, [*path, key], pruned, root=False)
            elif additional is True or preserve:
                continue
            else:
                pruned.append(field_path([*path, key]))
                del value[key]
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            _prune(item, schema["items"], [*path, index], pruned, root=False)


def apply_defaults(value: Any, schema: dict[str, Any] | None) -> None:
    """Fill in `default`s of absent properties, in place, under objects that exist."""
    if not isinstance(schema, dict):
        return
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        for key, sub in properties.items():
            if key not in value and isinstance(sub, dict) and "default" in sub:
                value[key] = copy.deepcopy(sub["default"])
            if key in value:
                apply_defaults(value[key], sub)
        additional = schema.get("additionalProperties")
        if isinstance(additional, dict):
            for key in value:
                if key not in properties:
                    apply_defaults(value[key], additional)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            apply_defaults(item, schema["items"])


def _translate(schema: Any) -> Any:
    """A jsonschema-checkable copy: `nullable`, `x-kubernetes-int-or-string`; `metadata` left alone."""
    if isinstance(schema, list):
        return [_translate(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: _translate(val) if key in ("items", "additionalProperties", "not") else
           {k: _translate(v) for k, v in val.items()} if key == "properties" and isinstance(val, dict) else
           _translate(val) if key in ("allOf", "anyOf", "oneOf") else val
           for key, val in schema.items()}
    if out.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out.setdefault("allOf", []).append({"anyOf": [{"type": "integer"}, {"type": "string"}]})
    if out.get("nullable") is True:
        if "type" in out:
            out["type"] = [out["type"], "null"]
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
    return out


class SchemaValidator:
    """Validates whole objects of one resource version against its openAPIV3Schema."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema
        translated = _translate(schema)
        # metadata is validated by the server's own rules, not by the CRD's schema.
        translated.get("properties", {}).pop("metadata", None)
        self._validator = Draft4Validator(translated)

    def causes(self, obj: dict[str, Any]) -> list[dict[str, str]]:
        found: list[dict[str, str]] = []
        for error in sorted(self._validator.iter_errors(obj), key=lambda e: list(map(str, e.absolute_path))):
            found.extend(_causes(error))
        found.extend(_list_type_causes(obj, self.schema, []))
        found.extend(_cel_causes(obj, self.schema, []))
        unique: list[dict[str, str]] = []
        for item in found:
            if item not in unique:
                unique.append(item)
        return unique


def _show(value: Any) -> str:
    return json.dumps(value) if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def _json_type(value: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", int: "integer", float: "number",
            type(None): "null"}.get(type(value), "string")


def _causes(error: ValidationError) -> list[dict[str, str]]:
    path = field_path(list(error.absolute_path))
    where = path or "<root>"
    value, expected = error.instance, error.validator_value
    match error.validator:
        case "required":
            missing = [name for name in expected if isinstance(value, dict) and name not in value]
            return [errors.cause("FieldValueRequired", field_path([*error.absolute_path, name]), "Required value")
                    for name in missing]
        case "type":
            kinds = expected if isinstance(expected, list) else [expected]
            kinds = [k for k in kinds if k != "null"]
            actual = _json_type(value)
            return [errors.cause("FieldValueTypeInvalid", where, f'Invalid value: "{actual}": {where} in body must be '
                                                                 f'of type {" or ".join(kinds)}: "{actual}"')]
        case "enum":
            supported = ", ".join(_show(v) for v in expected)
            return [errors.cause("FieldValueNotSupported", where,
                                 f"Unsupported value: {_show(value)}: supported values: {supported}")]
        case "minimum" | "maximum":
            word = "greater" if error.validator == "minimum" else "less"
            exclusive = error.schema.get("exclusiveMinimum" if word == "greater" else "exclusiveMaximum")
            return [errors.cause("FieldValueInvalid", where, f"Invalid value: {_show(value)}: {where} in body should "
                                                             f"be {word} than {'' if exclusive else 'or equal to '}"
                                                             f"{expected}")]
        case "minLength":
            return [errors.cause("FieldValueInvalid", where, f"Invalid value: {_show(value)}: {where} in body should "
                                                             f"be at least {expected} chars long")]
        case "maxLength":
            return [errors.cause("FieldValueTooLong", where, f"Too long: may not be more than {expected} bytes")]
        case "pattern":
            return [errors.cause("FieldValueInvalid", where,
                                 f"Invalid value: {_show(value)}: {where} in body should match '{expected}'")]
        case "minItems":
            return [errors.cause("FieldValueInvalid", where, f"Invalid value: {len(value)}: {where} in body should "
                                                             f"have at least {expected} items")]
        case "maxItems":
            return [errors.cause("FieldValueTooMany", where, f"Too many: {len(value)}: must have at most {expected} "
                                                             f"items")]
        case _:
            return [errors.cause("FieldValueInvalid", where, f"Invalid value: {_show(value)}: {error.message}")]


def _list_type_causes(value: Any, schema: Any, path: list[Any]) -> list[dict[str, str]]:
    """Duplicates in `x-kubernetes-list-type: map|set` lists (not a JSON Schema keyword)."""
    if not isinstance(schema, dict):
        return []
    found: list[dict[str, str]] = []
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        additional = schema.get("additionalProperties")
        for key, item in value.items():
            sub = properties.get(key, additional if isinstance(additional, dict) else None)
            found.extend(_list_type_causes(item, sub, [*path, key]))
    elif isinstance(value, list):
        list_type = schema.get("x-kubernetes-list-type")
        seen: list[Any] = []
        for index, item in enumerate(value):
            if list_type == "map" and isinstance(item, dict):
                key = {k: item.get(k) for k in schema.get("x-kubernetes-list-map-keys") or ()}
            elif list_type == "set":
                key = item
            else:
                key = None
            if key is not None and key in seen:
                found.append(errors.cause("FieldValueDuplicate", field_path([*path, index]),
                                          f"Duplicate value: {_show(key)}"))
            elif key is not None:
                seen.append(key)
            found.extend(_list_type_causes(item, schema.get("items"), [*path, index]))
    return found


def _cel_causes(value: Any, schema: Any, path: list[Any]) -> list[dict[str, str]]:
    """Failed `x-kubernetes-validations` rules, at the path of the value they are declared on."""
    if not isinstance(schema, dict):
        return []
    found: list[dict[str, str]] = []
    for rule in schema.get("x-kubernetes-validations") or ():
        check = compile_rule(rule.get("rule", ""))
        if check is not None and not check(value):
            where = field_path(path) or "<root>"
            shown = _json_type(value) if isinstance(value, (dict, list)) else _show(value)
            message = rule.get("message") or f"failed rule: {rule.get('rule')}"
            found.append(errors.cause(rule.get("reason") or "FieldValueInvalid", where,
                                      f'Invalid value: "{shown}": {message}'))
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        additional = schema.get("additionalProperties")
        for key, item in value.items():
            sub = properties.get(key, additional if isinstance(additional, dict) else None)
            found.extend(_cel_causes(item, sub, [*path, key]))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(_cel_causes(item, schema.get("items"), [*path, index]))
    return found


def metadata_causes(obj: dict[str, Any], *, dns_label: bool = False) -> list[dict[str, str]]:
    """The server's own checks of metadata: name format, labels' keys and values."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return [errors.cause("FieldValueRequired", "metadata", "Required value")]
    found = []
    name = meta.get("name")
    if not name:
        found.append(errors.cause("FieldValueRequired", "metadata.name",
                                  "Required value: name or generateName is required"))
    elif not isinstance(name, str) or len(name) > (63 if dns_label else 253) or \
            not (DNS_LABEL if dns_label else DNS_SUBDOMAIN).match(name):
        what = "RFC 1123 label" if dns_label else "RFC 1123 subdomain"
        found.append(errors.cause("FieldValueInvalid", "metadata.name",
                                  f"Invalid value: {_show(name)}: a lowercase {what} must consist of lower case "
                                  f"alphanumeric characters, '-' or '.', and must start and end with an "
                                  f"alphanumeric character"))
    labels = meta.get("labels") or {}
    if not isinstance(labels, dict):
        found.append(errors.cause("FieldValueTypeInvalid", "metadata.labels", "Invalid value: must be a map"))
        labels = {}
    for key, value in labels.items():
        if not LABEL_NAME.match(key.rsplit("/", 1)[-1]) or len(key.rsplit("/", 1)[-1]) > 63:
            found.append(errors.cause("FieldValueInvalid", "metadata.labels",
                                      f"Invalid value: {_show(key)}: name part must consist of alphanumeric "
                                      f"characters, '-', '_' or '.'"))
        if not isinstance(value, str) or len(value) > 63 or not LABEL_VALUE.match(value):
            found.append(errors.cause("FieldValueInvalid", "metadata.labels",
                                      f"Invalid value: {_show(value)}: a valid label must be an empty string or "
                                      f"consist of alphanumeric characters, '-', '_' or '.'"))
    for key in ("annotations",):
        if key in meta and meta[key] is not None and not (
                isinstance(meta[key], dict) and all(isinstance(v, str) for v in meta[key].values())):
            found.append(errors.cause("FieldValueTypeInvalid", f"metadata.{key}",
                                      "Invalid value: must be a map of strings"))
    finalizers = meta.get("finalizers")
    if finalizers is not None and not (isinstance(finalizers, list) and all(isinstance(f, str) for f in finalizers)):
        found.append(errors.cause("FieldValueTypeInvalid", "metadata.finalizers",
                                  "Invalid value: must be a list of strings"))
    return found
