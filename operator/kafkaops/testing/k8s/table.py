"""`meta.k8s.io/v1 Table` responses (server-side printing), as kube-apiserver builds them for CRDs.

`kubectl get` asks for `Accept: application/json;as=Table;v=v1;g=meta.k8s.io` and prints the
columns it gets back. For a custom resource the columns are NAME plus the CRD version's
`additionalPrinterColumns` (their `jsonPath` evaluated per object; `date` cells rendered as an age
such as `5m`, `integer`/`number`/`boolean` cells as JSON values, `string` cells as text); for a
built-in kind, NAME, a few kind-specific columns, and AGE. Rows carry the object as
`includeObject` asks (`None`, `Metadata` (default: a PartialObjectMetadata) or `Object`).
"""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Iterable
from typing import Any

from . import errors
from .resources import ResourceDef

NAME_COLUMN = {"name": "Name", "type": "string", "format": "name", "priority": 0,
               "description": "Name must be unique within a namespace."}
AGE_COLUMN = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp", "priority": 0,
              "description": "CreationTimestamp is a timestamp representing the server time when this object "
                             "was created."}
# Columns of built-in kinds (the real server has Go code per kind; these are the simple ones).
BUILTIN_COLUMNS: dict[tuple[str, str], tuple[dict[str, Any], ...]] = {
    ("", "namespaces"): ({"name": "Status", "type": "string", "jsonPath": ".status.phase"},),
    ("", "secrets"): ({"name": "Type", "type": "string", "jsonPath": ".type"},),
    ("", "services"): ({"name": "Type", "type": "string", "jsonPath": ".spec.type"},
                       {"name": "Cluster-IP", "type": "string", "jsonPath": ".spec.clusterIP"}),
    ("coordination.k8s.io", "leases"): ({"name": "Holder", "type": "string", "jsonPath": ".spec.holderIdentity"},),
    ("apiextensions.k8s.io", "customresourcedefinitions"): (
        {"name": "Created At", "type": "string", "jsonPath": ".metadata.creationTimestamp"},),
}
TABLE_MEDIA = "application/json;as=Table;v=v1;g=meta.k8s.io"


def wants_table(accept: str) -> str | None:
    """`v1` or `v1beta1` if the Accept header asks for a Table before anything else, else None."""
    for part in accept.split(","):
        params = {k.strip(): v.strip() for k, _, v in (p.partition("=") for p in part.split(";")[1:])}
        if params.get("as") == "Table" and params.get("g") == "meta.k8s.io" and params.get("v") in ("v1", "v1beta1"):
            return params["v"]
        if part.split(";")[0].strip() in ("application/json", "*/*"):
            return None
    return None


# -- JSONPath (the subset CRD printer columns use) --------------------------------------------------

_TOKEN = re.compile(r"""\.(?P<field>[A-Za-z0-9_$-]+)|\[(?P<index>-?\d+|\*)\]|\[['"](?P<quoted>[^'"]+)['"]\]|"""
                    r"""\[\?\(@(?P<fpath>(?:\.[A-Za-z0-9_-]+)+)\s*(?P<op>==|!=)\s*(?P<value>"[^"]*"|'[^']*'|[^)\s]+)\)\]""")


def parse_jsonpath(path: str) -> list[re.Match[str]]:
    """The steps of a simple JSONPath (`.a.b[0]`, `[*]`, `['k.x']`, `[?(@.type=="Ready")]`); 422 otherwise."""
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    if text.startswith("$"):
        text = text[1:]
    steps, pos = [], 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            raise errors.bad_request(f"unsupported JSONPath {path!r} at {text[pos:]!r}")
        steps.append(match)
        pos = match.end()
    return steps


def evaluate(obj: Any, path: str) -> list[Any]:
    """Every value `path` selects in `obj` (an empty list if none)."""
    values = [obj]
    for step in parse_jsonpath(path):
        found: list[Any] = []
        for value in values:
            if step["field"] is not None or step["quoted"] is not None:
                key = step["field"] if step["field"] is not None else step["quoted"]
                if isinstance(value, dict) and key in value:
                    found.append(value[key])
            elif step["index"] is not None:
                if isinstance(value, list):
                    if step["index"] == "*":
                        found.extend(value)
                    elif -len(value) <= int(step["index"]) < len(value):
                        found.append(value[int(step["index"])])
                elif isinstance(value, dict) and step["index"] == "*":
                    found.extend(value.values())
            else:
                wanted = step["value"].strip("\"'")
                for item in value if isinstance(value, list) else []:
                    got = evaluate(item, step["fpath"])
                    text = "" if not got else got[0] if isinstance(got[0], str) else json.dumps(got[0])
                    if bool(got) and (text == wanted) == (step["op"] == "=="):
                        found.append(item)
        values = found
    return values


# -- cells --------------------------------------------------------------------------------------------

def human_duration(seconds: float) -> str:
    """Kubernetes' `duration.HumanDuration` (apimachinery/pkg/util/duration)."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d{hours % 24}h" if hours % 24 else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        years, days = hours // 24 // 365, (hours // 24) % 365
        return f"{years}y{days}d" if days else f"{years}y"
    return f"{hours // 24 // 365}y"


def _age(timestamp: Any, now: datetime.datetime) -> Any:
    if not isinstance(timestamp, str):
        return None
    try:
        when = datetime.datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return human_duration((now - when).total_seconds())


def _cell(column: dict[str, Any], obj: dict[str, Any], now: datetime.datetime) -> Any:
    found = evaluate(obj, column["jsonPath"])
    if not found:
        return None
    value = found[0]
    kind = column.get("type", "string")
    if kind == "date":
        return _age(value, now)
    if kind == "string":
        return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    if kind == "integer":
        return value if isinstance(value, int) and not isinstance(value, bool) else None
    if kind == "number":
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    if kind == "boolean":
        return value if isinstance(value, bool) else None
    return value


def columns_of(rdef: ResourceDef) -> list[dict[str, Any]]:
    """The columns of a resource: NAME first; then the CRD's printer columns, or a built-in's and AGE."""
    if rdef.custom:
        extra = list(rdef.printer_columns) or [AGE_COLUMN]
    else:
        extra = [*BUILTIN_COLUMNS.get((rdef.group, rdef.plural), ()), AGE_COLUMN]
    return [NAME_COLUMN, *extra]


def _row_object(obj: dict[str, Any], include: str) -> dict[str, Any] | None:
    if include == "None":
        return None
    if include == "Object":
        return obj
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj.get("metadata", {})}


def table(rdef: ResourceDef, objects: Iterable[dict[str, Any]], *, list_metadata: dict[str, Any] | None = None,
          include_object: str = "Metadata", version: str = "v1", with_columns: bool = True) -> dict[str, Any]:
    """A Table of these objects (for a list, a get, or one watch event: then `with_columns=False`
    unless it is the first, as the real server sends column definitions once per watch)."""
    if include_object not in ("None", "Metadata", "Object"):
        raise errors.bad_request(f'includeObject parameter unsupported: "{include_object}"')
    now = datetime.datetime.now(datetime.UTC)
    columns = columns_of(rdef)
    rows = []
    for obj in objects:
        cells = [obj.get("metadata", {}).get("name")] + [_cell(c, obj, now) for c in columns[1:]]
        row: dict[str, Any] = {"cells": cells}
        shown = _row_object(obj, include_object)
        if shown is not None:
            row["object"] = shown
        rows.append(row)
    result: dict[str, Any] = {"kind": "Table", "apiVersion": f"meta.k8s.io/{version}",
                              "metadata": dict(list_metadata or {})}
    result["columnDefinitions"] = [
        {key: column.get(key, default) for key, default in
         (("name", ""), ("type", "string"), ("format", ""), ("description", ""), ("priority", 0))}
        for column in columns] if with_columns else []
    result["rows"] = rows
    return result
