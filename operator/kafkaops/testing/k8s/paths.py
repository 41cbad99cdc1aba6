"""Request URLs of the Kubernetes API, parsed into group/version/namespace/plural/name/subresource.

kmock 0.8 parses the same URLs itself, but it fails on `/api/v1/namespaces` (an unpacking error)
and reads `/api/v1/namespaces/NAME` as "namespace NAME, no resource". The emulator serves
namespace objects, so it builds kmock's `Request` from this parser instead.
"""

from __future__ import annotations

import functools

from dataclasses import dataclass

import aiohttp.web
import kmock


@dataclass(frozen=True)
class ApiPath:
    group: str | None = None  # None: not a Kubernetes API path; "" for the core group
    version: str | None = None
    namespace: str | None = None
    plural: str | None = None
    name: str | None = None
    subresource: str | None = None


def parse_path(path: str) -> ApiPath:
    parts = [p for p in path.strip("/").split("/") if p]
    if len(parts) >= 1 and parts[0] == "api":
        group, rest = "", parts[1:]
    elif len(parts) >= 2 and parts[0] == "apis":
        group, rest = parts[1], parts[2:]
    else:
        return ApiPath()
    if not rest:
        return ApiPath(group=group)
    version, rest = rest[0], rest[1:]
    namespace: str | None = None
    if group == "" and rest[:1] == ["namespaces"] and (len(rest) <= 2 or rest[2] in ("status", "finalize")):
        # The namespace objects themselves: /api/v1/namespaces[/NAME[/status]].
        return ApiPath(group, version, None, "namespaces", rest[1] if len(rest) > 1 else None,
                       "/".join(rest[2:]) or None)
    if rest[:1] == ["namespaces"] and len(rest) >= 3:
        namespace, rest = rest[1], rest[2:]
    plural = rest[0] if rest else None
    name = rest[1] if len(rest) > 1 else None
    subresource = "/".join(rest[2:]) or None
    return ApiPath(group, version, namespace, plural, name, subresource)


def guess_action(path: ApiPath, method: str, query: dict[str, str]) -> kmock.action | None:
    if path.group is None or path.plural is None:
        return None
    if method == "GET":
        return kmock.action.WATCH if query.get("watch") in ("true", "1") else \
            kmock.action.FETCH if path.name else kmock.action.LIST
    if method == "POST" and not path.name:
        return kmock.action.CREATE
    if method in ("PUT", "PATCH") and path.name:
        return kmock.action.UPDATE
    if method == "DELETE":
        return kmock.action.DELETE
    return None


@functools.lru_cache(maxsize=512)
def _resource(group: str, version: str | None, plural: str | None) -> kmock.resource:
    """kmock.resource() checks its arguments against typing Protocols: built once per path."""
    return kmock.resource(group=group, version=version, plural=plural)


async def parse_request(raw: aiohttp.web.BaseRequest, *, id: int) -> tuple[kmock.Request, ApiPath]:
    """A kmock `Request` (for kmock's filters and request log) plus the parsed API path."""
    body = await raw.read()
    text = body.decode("utf-8", errors="replace")
    data = None
    if body:
        import json
        try:
            data = json.loads(body)
        except ValueError:
            data = None
    path = parse_path(raw.path)
    query = dict(raw.query)
    resource = None if path.group is None else _resource(path.group, path.version, path.plural)
    request = kmock.Request(
        id=id, raw_request=raw, url=raw.url, method=raw.method, params=query,
        headers=dict(raw.headers), cookies=dict(raw.cookies), body=body, text=text, data=data,
        action=guess_action(path, raw.method, query), resource=resource,
        namespace=path.namespace, name=path.name, subresource=path.subresource,
    )
    return request, path
