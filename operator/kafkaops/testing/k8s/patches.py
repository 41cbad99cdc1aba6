"""PATCH bodies: JSON merge patch (RFC 7386) and JSON patch (RFC 6902, via `jsonpatch`)."""

from __future__ import annotations

import json
from typing import Any

import jsonpatch

from . import errors
from .values import clone

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, `null` deletes a key, anything else replaces."""
    if not isinstance(patch, dict):
        return clone(patch)
    result = clone(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def apply_patch(obj: dict[str, Any], body: bytes, content_type: str, *, custom: bool) -> dict[str, Any]:
    """The patched copy of `obj`; 400 if the body does not parse, 422 if it cannot apply, 415 if unknown."""
    media = content_type.split(";")[0].strip().lower()
    if media == APPLY or (media == STRATEGIC and custom) or media not in (MERGE, JSON_PATCH, STRATEGIC):
        # Server-side apply is served by the caller (it needs the manager's last applied config).
        raise errors.unsupported_media_type(media)
    try:
        patch = json.loads(body or b"null")
    except ValueError as exc:
        raise errors.bad_request(f"error decoding patch: {exc}") from None
    if media == JSON_PATCH:
        if not isinstance(patch, list):
            raise errors.bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
        try:
            return jsonpatch.JsonPatch(patch).apply(clone(obj))
        except jsonpatch.JsonPatchTestFailed as exc:
            raise errors.ApiError(status=422, reason="Invalid", message=f"the server rejected our request due to "
                                  f"an error in our request: {exc}", details={}) from None
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
            raise errors.ApiError(status=422, reason="Invalid", message=str(exc), details={}) from None
    if not isinstance(patch, dict):
        raise errors.bad_request("json: cannot unmarshal into Go value of type map[string]interface {}")
    if media == STRATEGIC:
        return strategic_merge(obj, patch)
    return merge_patch(obj, patch)


# -- strategic merge patch (built-in kinds), approximated -------------------------------------------

# The merge keys of the built-in lists kubectl patches most (from the Go types' patchMergeKey tags);
# lists not named here are replaced, as for atomic lists.
MERGE_KEYS = {"containers": "name", "initContainers": "name", "ephemeralContainers": "name", "volumes": "name",
              "env": "name", "ports": None, "volumeMounts": "mountPath", "volumeDevices": "devicePath",
              "imagePullSecrets": "name", "conditions": "type", "hostAliases": "ip", "tolerations": None,
              "topologySpreadConstraints": "topologyKey", "finalizers": None, "ownerReferences": "uid"}
PORT_KEYS = ("containerPort", "port")


def _merge_key(field: str, items: list[Any]) -> str | None:
    if field == "ports":
        return next((k for k in PORT_KEYS if items and all(isinstance(i, dict) and k in i for i in items)), None)
    return MERGE_KEYS.get(field)


def _strip(value: Any) -> Any:
    """The patch value without its `$...` directives."""
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if not k.startswith("$")}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _merge_list(field: str, target: list[Any], patch: list[Any]) -> list[Any]:
    key = _merge_key(field, [*target, *patch])
    if key is None or not all(isinstance(i, dict) for i in [*target, *patch]):
        if field == "finalizers":  # a set: union, as its patchStrategy says
            return [*target, *(v for v in patch if v not in target)]
        return _strip(patch)
    result = clone(target)
    for item in patch:
        index = next((n for n, old in enumerate(result) if old.get(key) == item.get(key)), None)
        if item.get("$patch") == "delete":
            if index is not None:
                del result[index]
        elif index is None:
            result.append(_strip(item))
        else:
            result[index] = strategic_merge(result[index], item)
    return result


def strategic_merge(target: Any, patch: Any) -> Any:
    """A strategic merge patch as kube-apiserver applies it, approximated without the Go types:
    maps merge, `null` deletes, lists named in MERGE_KEYS merge by their key (`$patch: delete`
    removes an item), other lists are replaced; `$patch: replace|delete`, `$retainKeys` and
    `$deleteFromPrimitiveList/<field>` are honoured, `$setElementOrder/<field>` is ignored."""
    if not isinstance(patch, dict):
        return _strip(patch)
    if patch.get("$patch") == "replace":
        return _strip(patch)
    result = clone(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            if isinstance(result.get(field), list):
                result[field] = [v for v in result[field] if v not in value]
        elif key.startswith("$"):
            continue
        elif value is None or (isinstance(value, dict) and value.get("$patch") == "delete"):
            result.pop(key, None)
        elif isinstance(value, list) and isinstance(result.get(key), list):
            result[key] = _merge_list(key, result[key], value)
        else:
            result[key] = strategic_merge(result.get(key), value)
    if isinstance(patch.get("$retainKeys"), list):
        result = {k: v for k, v in result.items() if k in patch["$retainKeys"]}
    return result


# -- server-side apply, simplified --------------------------------------------------------------------

def _remove_unapplied(current: Any, previous: Any, applied: Any) -> Any:
    """Drop what this manager applied before and applies no longer (maps only, recursively)."""
    if not (isinstance(current, dict) and isinstance(previous, dict)):
        return current
    result = dict(current)
    applied = applied if isinstance(applied, dict) else {}
    for key, value in previous.items():
        if key not in applied and isinstance(value, dict) and isinstance(result.get(key), dict):
            rest = _remove_unapplied(result[key], value, {})  # keep what other managers set inside
            if rest:
                result[key] = rest
            else:
                result.pop(key)
        elif key not in applied:
            result.pop(key, None)
        elif key in result:
            result[key] = _remove_unapplied(result[key], value, applied[key])
    return result


def _apply_merge(current: Any, applied: Any, field: str = "") -> Any:
    if isinstance(applied, dict) and isinstance(current, dict):
        result = dict(current)
        for key, value in applied.items():
            result[key] = _apply_merge(current.get(key), value, key)
        return result
    if isinstance(applied, list) and isinstance(current, list):
        key = _merge_key(field, [*current, *applied])
        if key is not None and all(isinstance(i, dict) for i in [*current, *applied]):
            result = list(current)
            for item in applied:
                index = next((n for n, old in enumerate(result) if old.get(key) == item.get(key)), None)
                if index is None:
                    result.append(item)
                else:
                    result[index] = _apply_merge(result[index], item)
            return result
    return clone(applied)


def server_side_apply(current: dict[str, Any], applied: dict[str, Any],
                      previous: dict[str, Any] | None) -> dict[str, Any]:
    """The object after `applied` (one field manager's whole intent) is applied to `current`.

    Simplified from kube-apiserver: the fields a manager owns are the ones in its last applied
    configuration (no managedFields sets, no conflicts between managers: every apply wins, as with
    `--force-conflicts`); fields it applied before and omits now are removed; maps merge, lists
    with a known merge key merge by it, other lists are replaced.
    """
    base = _remove_unapplied(clone(current), previous or {}, applied)
    return _apply_merge(base, clone(applied))
