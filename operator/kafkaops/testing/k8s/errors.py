"""Kubernetes `Status` errors as the real API server words them (reason, message, details)."""

from __future__ import annotations

from typing import Any

import kmock


class ApiError(kmock.KubernetesError):
    """A failed API call; rendered as a `v1 Status` with this code, reason, message and details."""


def _details(name: str | None, group: str, kind: str, **extra: Any) -> dict[str, Any]:
    details: dict[str, Any] = {"kind": kind}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    details.update(extra)
    return details


def _qualified(plural: str, group: str) -> str:
    return f"{plural}.{group}" if group else plural


def not_found(plural: str, group: str, name: str) -> ApiError:
    return ApiError(status=404, reason="NotFound", message=f'{_qualified(plural, group)} "{name}" not found',
                    details=_details(name, group, plural))


def resource_not_found() -> ApiError:
    return ApiError(status=404, reason="NotFound", message="the server could not find the requested resource",
                    details={})


def already_exists(plural: str, group: str, name: str) -> ApiError:
    return ApiError(status=409, reason="AlreadyExists", message=f'{_qualified(plural, group)} "{name}" already exists',
                    details=_details(name, group, plural))


def conflict(plural: str, group: str, name: str, why: str | None = None) -> ApiError:
    why = why or "the object has been modified; please apply your changes to the latest version and try again"
    return ApiError(status=409, reason="Conflict",
                    message=f'Operation cannot be fulfilled on {_qualified(plural, group)} "{name}": {why}',
                    details=_details(name, group, plural))


def invalid(kind: str, group: str, name: str | None, causes: list[dict[str, str]]) -> ApiError:
    """422 with one cause per field error, each `{reason, message, field}`, as the real server."""
    texts = [f"{c['field']}: {c['message']}" if c.get("field") else c["message"] for c in causes]
    summary = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    return ApiError(status=422, reason="Invalid",
                    message=f'{kind}{"." + group if group else ""} "{name or ""}" is invalid: {summary}',
                    details=_details(name, group, kind, causes=causes))


def cause(reason: str, field: str, message: str) -> dict[str, str]:
    return {"reason": reason, "message": message, "field": field}


def bad_request(message: str) -> ApiError:
    return ApiError(status=400, reason="BadRequest", message=message, details={})


def forbidden(plural: str, group: str, name: str, message: str) -> ApiError:
    return ApiError(status=403, reason="Forbidden", message=message, details=_details(name, group, plural))


def method_not_allowed() -> ApiError:
    return ApiError(status=405, reason="MethodNotAllowed",
                    message="the server does not allow this method on the requested resource", details={})


def unsupported_media_type(content_type: str, message: str | None = None) -> ApiError:
    return ApiError(status=415, reason="UnsupportedMediaType",
                    message=message or f'the body of the request was in an unknown format - accepted media types '
                                       f'include: application/json-patch+json, application/merge-patch+json, '
                                       f'application/apply-patch+yaml (got "{content_type}")',
                    details={})


def not_acceptable(message: str) -> ApiError:
    return ApiError(status=406, reason="NotAcceptable", message=message, details={})


def expired(message: str) -> ApiError:
    return ApiError(status=410, reason="Expired", message=message, details={})


def status_body(error: kmock.KubernetesError) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": error.message or "", "reason": error.reason or "", "code": error.status,
    }
    if error.details:
        body["details"] = error.details
    return body
