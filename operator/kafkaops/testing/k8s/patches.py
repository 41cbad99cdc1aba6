"""PATCH bodies: JSON merge patch (RFC 7386) and JSON patch (RFC 6902, via `jsonpatch`)."""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonpatch

from . import errors

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, `null` deletes a key, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
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
        raise errors.unsupported_media_type(media)
    try:
        patch = json.loads(body or b"null")
    except ValueError as exc:
        raise errors.bad_request(f"error decoding patch: {exc}") from None
    if media == JSON_PATCH:
        if not isinstance(patch, list):
            raise errors.bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
        try:
            return jsonpatch.JsonPatch(patch).apply(copy.deepcopy(obj))
        except jsonpatch.JsonPatchTestFailed as exc:
            raise errors.ApiError(status=422, reason="Invalid", message=f"the server rejected our request due to "
                                  f"an error in our request: {exc}", details={}) from None
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
            raise errors.ApiError(status=422, reason="Invalid", message=str(exc), details={}) from None
    if not isinstance(patch, dict):
        raise errors.bad_request("json: cannot unmarshal into Go value of type map[string]interface {}")
    # Strategic merge patch of built-in resources is served as a merge patch (an approximation).
    return merge_patch(obj, patch)
