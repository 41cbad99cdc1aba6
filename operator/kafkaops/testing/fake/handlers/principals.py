"""DescribeClientQuotas (48), AlterClientQuotas (49), DescribeUserScramCredentials (50) and
AlterUserScramCredentials (51) for the fake cluster test double.

Alterations follow the KRaft controller: one alteration per user per request (a second one
answers DUPLICATE_RESOURCE for that user), per-user and per-entity errors, nothing applied for
an item that fails. Writes need the controller in zk mode, like the other writes.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from ..context import ItemError, RequestContext
from ..principals import ScramCredentialDouble, entity_error, filter_error, quota_op_error
from .common import respond

_NONE = ItemError(ErrorCode.none)


def handle_describe_user_scram_credentials(ctx: RequestContext, body: Any) -> Any:
    store = ctx.state.principals
    error = ctx.request_error(needs_controller=False)
    results: list[dict[str, Any]] = []
    if error is None:
        if not body.users:
            users = sorted(store.scram)
            asked: list[str] = users
        else:
            asked = [u.name for u in body.users]
        counts = {u: asked.count(u) for u in asked}
        for user in dict.fromkeys(asked):
            mechanisms = store.scram.get(user, {})
            if counts[user] > 1:
                item = ItemError(ErrorCode.duplicate_resource, f"Cannot describe SCRAM credentials for the same user twice in a single request: {user}")
            elif not mechanisms:
                item = ItemError(ErrorCode.resource_not_found, f"Attempt to describe a user credential that does not exist: {user}")
            else:
                item = _NONE
            infos = [{"mechanism": m, "iterations": c.iterations} for m, c in sorted(mechanisms.items())] if item is _NONE else []
            results.append({"user": user, **item.fields(), "credential_infos": infos})
    return respond(ctx, {"throttle_time": ctx.throttle_time, **(error or _NONE).fields(), "results": results})


def handle_alter_user_scram_credentials(ctx: RequestContext, body: Any) -> Any:
    store = ctx.state.principals
    items = [(d.name, d, False) for d in body.deletions] + [(u.name, u, True) for u in body.upsertions]
    errors: dict[str, ItemError] = {}
    chosen: dict[str, tuple[Any, bool]] = {}
    for index, (user, item, upsert) in enumerate(items):
        if user in errors:
            continue
        gate = ctx.gate(index)
        if gate is not None:
            errors[user] = gate
            chosen.pop(user, None)
            continue
        if user in chosen:
            errors[user] = ItemError(ErrorCode.duplicate_resource, "A user credential cannot be altered twice in the same request")
            del chosen[user]
            continue
        if upsert:
            problem = store.upsertion_error(user, int(item.mechanism), int(item.iterations), bytes(item.salt), bytes(item.salted_password))
        else:
            problem = store.deletion_error(user, int(item.mechanism))
        if problem is not None:
            errors[user] = problem
        else:
            chosen[user] = (item, upsert)
    for user, (item, upsert) in chosen.items():
        if upsert:
            store.upsert(user, int(item.mechanism), ScramCredentialDouble(int(item.iterations), bytes(item.salt), bytes(item.salted_password)))
        else:
            store.delete(user, int(item.mechanism))
    results = [
        {"user": user, **(errors.get(user) or ctx.success()).fields()}
        for user in dict.fromkeys(u for u, _, _ in items)
    ]
    return respond(ctx, {"throttle_time": ctx.throttle_time, "results": results})


def handle_describe_client_quotas(ctx: RequestContext, body: Any) -> Any:
    components = [(c.entity_type, int(c.match_type), c.match) for c in body.components]
    error = ctx.request_error(needs_controller=False) or filter_error(components)
    entries: list[dict[str, Any]] | None = None
    if error is None:
        entries = [
            {
                "entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
                "values": [{"key": k, "value": v} for k, v in sorted(values.items())],
            }
            for entity, values in ctx.state.principals.describe_quotas(components, bool(body.strict))
        ]
    return respond(ctx, {"throttle_time": ctx.throttle_time, **(error or _NONE).fields(), "entries": entries})


def handle_alter_client_quotas(ctx: RequestContext, body: Any) -> Any:
    store = ctx.state.principals
    entries: list[dict[str, Any]] = []
    for index, entry in enumerate(body.entries):
        pairs = [(e.entity_type, e.entity_name) for e in entry.entity]
        entity, error = entity_error(pairs)
        error = ctx.gate(index) or error
        ops = [(op.key, float(op.value), bool(op.remove)) for op in entry.ops]
        if error is None:
            keys = [k for k, _, _ in ops]
            if len(set(keys)) != len(keys):
                error = ItemError(ErrorCode.invalid_request, "Duplicate quota configuration key in one entry")
        for key, value, remove in ops:
            error = error or quota_op_error(entity, key, value, remove)
        if error is None and not body.validate_only:
            store.alter_quotas(entity, ops)
        outcome = error or (ctx.success() if not body.validate_only else _NONE)
        entries.append({**outcome.fields(), "entity": [{"entity_type": t, "entity_name": n} for t, n in pairs]})
    return respond(ctx, {"throttle_time": ctx.throttle_time, "entries": entries})
