"""Label selectors (equality- and set-based) and field selectors, as list/watch query parameters."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from typing import Any

from . import errors

Matcher = Callable[[dict[str, Any]], bool]

_SET_REQ = re.compile(r"^\s*(?P<key>[^\s!=(),]+)\s+(?P<op>in|notin)\s+\((?P<values>[^()]*)\)\s*$")
_EQ_REQ = re.compile(r"^\s*(?P<key>[^\s!=(),]+)\s*(?P<op>==|=|!=)\s*(?P<value>[^\s!=(),]*)\s*$")
_EXISTS_REQ = re.compile(r"^\s*(?P<neg>!?)\s*(?P<key>[^\s!=(),]+)\s*$")


def _split(selector: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in selector:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return [p for p in parts if p.strip()]


def label_matcher(selector: str | None) -> Matcher:
    """`a=b,c!=d,e in (f,g),h notin (i),j,!k`; 400 BadRequest if it does not parse."""
    checks: list[Callable[[dict[str, str]], bool]] = []
    for requirement in _split(selector or ""):
        if m := _SET_REQ.match(requirement):
            key, values = m["key"], {v.strip() for v in m["values"].split(",") if v.strip()}
            if m["op"] == "in":
                checks.append(lambda labels, k=key, vs=values: labels.get(k) in vs)
            else:
                checks.append(lambda labels, k=key, vs=values: labels.get(k) not in vs)
        elif m := _EQ_REQ.match(requirement):
            key, value = m["key"], m["value"]
            if m["op"] == "!=":
                checks.append(lambda labels, k=key, v=value: labels.get(k) != v)
            else:
                checks.append(lambda labels, k=key, v=value: labels.get(k) == v)
        elif m := _EXISTS_REQ.match(requirement):
            key = m["key"]
            if m["neg"]:
                checks.append(lambda labels, k=key: k not in labels)
            else:
                checks.append(lambda labels, k=key: k in labels)
        else:
            raise errors.bad_request(f"unable to parse requirement: {requirement.strip()!r}")

    def matches(obj: dict[str, Any]) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(check(labels) for check in checks)
    return matches


def _lookup(obj: dict[str, Any], path: str) -> str:
    value: Any = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if path == "source" and isinstance(value, dict):  # core/v1 Event's `source` is its component
        value = value.get("component")
    return "" if value is None else str(value)


def field_matcher(selector: str | None, supported: Collection[str]) -> Matcher:
    """`metadata.name=x,metadata.namespace!=y`; only the fields the resource supports, like the server."""
    checks: list[Callable[[dict[str, Any]], bool]] = []
    for requirement in _split(selector or ""):
        m = _EQ_REQ.match(requirement)
        if not m:
            raise errors.bad_request(f"invalid field selector: {requirement.strip()!r}")
        key, value, negate = m["key"], m["value"], m["op"] == "!="
        if key not in supported:
            raise errors.bad_request(f'field label not supported: {key}')
        checks.append(lambda obj, k=key, v=value, n=negate: (_lookup(obj, k) == v) != n)
    return lambda obj: all(check(obj) for check in checks)
