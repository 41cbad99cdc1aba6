"""DescribeAcls, CreateAcls and DeleteAcls for the fake cluster test double.

Without an authorizer (``acls_enabled=False``) every call answers
SECURITY_DISABLED, as Kafka (and noida-db) do.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from ..acls import AclBinding, AclBindingFilter, group_by_resource, matches, validate_binding, validate_filter
from ..context import ItemError, RequestContext
from .common import invalid_request, respond


def _filter(item: Any) -> AclBindingFilter:
    return AclBindingFilter(
        item.resource_type_filter,
        item.resource_name_filter,
        item.pattern_type_filter,
        item.principal_filter,
        item.host_filter,
        item.operation,
        item.permission_type,
    )


def _binding(item: Any) -> AclBinding:
    return AclBinding(
        item.resource_type,
        item.resource_name,
        item.resource_pattern_type,
        item.principal,
        item.host,
        item.operation,
        item.permission_type,
    )


def _acl_fields(binding: AclBinding) -> dict[str, Any]:
    return {
        "principal": binding.principal,
        "host": binding.host,
        "operation": binding.operation,
        "permission_type": binding.permission,
    }


def handle_describe_acls(ctx: RequestContext, body: Any) -> Any:
    acl_filter = _filter(body)
    error = ctx.forced
    if error is None:
        message = validate_filter(acl_filter)
        error = invalid_request(message) if message else None
    resources: list[dict[str, Any]] = []
    if error is None:
        found = [b for b in ctx.state.acls if matches(acl_filter, b)]
        for (rtype, rname, pattern), bindings in group_by_resource(found).items():
            resources.append(
                {
                    "resource_type": rtype,
                    "resource_name": rname,
                    "pattern_type": pattern,
                    "acls": [_acl_fields(b) for b in bindings],
                }
            )
    return respond(
        ctx,
        {"throttle_time": ctx.throttle_time, **(error or ItemError(ErrorCode.none)).fields(), "resources": resources},
    )


def handle_create_acls(ctx: RequestContext, body: Any) -> Any:
    results: list[dict[str, Any]] = []
    planned: list[tuple[int, AclBinding]] = []
    for index, creation in enumerate(body.creations):
        binding = _binding(creation)
        error = ctx.gate(index)
        if error is None:
            message = validate_binding(binding)
            error = invalid_request(message) if message else None
        if error is None:
            planned.append((len(results), binding))
        results.append((error or ItemError(ErrorCode.none)).fields())
    new = {b for _, b in planned if b not in ctx.state.acls}
    limit = ctx.record_limit_error(len(new))
    for slot, binding in planned:
        if limit is None:
            ctx.state.acls[binding] = None
        results[slot] = (limit or ctx.success()).fields()
    return respond(ctx, {"throttle_time": ctx.throttle_time, "results": results})


def _matching_fields(binding: AclBinding) -> dict[str, Any]:
    return {
        "error_code": ErrorCode.none,
        "error_message": None,
        "resource_type": binding.resource_type,
        "resource_name": binding.resource_name,
        "pattern_type": binding.pattern_type,
        **_acl_fields(binding),
    }


def handle_delete_acls(ctx: RequestContext, body: Any) -> Any:
    snapshot = list(ctx.state.acls)
    results: list[dict[str, Any]] = []
    doomed: dict[AclBinding, None] = {}
    applied: list[int] = []
    for index, item in enumerate(body.filters):
        acl_filter = _filter(item)
        error = ctx.gate(index)
        if error is None:
            message = validate_filter(acl_filter)
            error = invalid_request(message) if message else None
        if error is not None:
            results.append({**error.fields(), "matching_acls": []})
            continue
        found = [b for b in snapshot if matches(acl_filter, b)]
        doomed.update(dict.fromkeys(found))
        applied.append(len(results))
        results.append({**ctx.success().fields(), "matching_acls": [_matching_fields(b) for b in found]})
    limit = ctx.record_limit_error(len(doomed))
    if limit is not None:
        for slot in applied:
            results[slot] = {**limit.fields(), "matching_acls": []}
    else:
        for binding in doomed:
            del ctx.state.acls[binding]
    return respond(ctx, {"throttle_time": ctx.throttle_time, "filter_results": results})
