"""Pure translation between the typed values of users and quotas and kio message payloads:
DescribeClientQuotas (48), AlterClientQuotas (49), DescribeUserScramCredentials (50) and
AlterUserScramCredentials (51). Same conventions as ``messages.py``; no I/O."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .messages import _error, _result
from .models import ItemResult
from .quotas import QuotaAlteration, QuotaEntity, QuotaFilter, component_order
from .scram import ScramAlteration, ScramCredentialInfo, ScramDeletion, ScramMechanism, ScramUpsertion

ScramKey = tuple[str, ScramMechanism]


def _mechanism(value: int) -> ScramMechanism:
    try:
        return ScramMechanism(int(value))
    except ValueError:
        return ScramMechanism.UNKNOWN


# --- DescribeUserScramCredentials --------------------------------------------------------------


def encode_describe_scram(users: Sequence[str] | None) -> dict[str, Any]:
    return {"users": None if users is None else [{"name": u} for u in users]}


def decode_describe_scram(response: Any) -> dict[str, ItemResult[tuple[ScramCredentialInfo, ...]]]:
    """Per user: its credentials (sorted), or the user's error; a request-level error for each."""
    top = _error(response.error_code, response.error_message)
    out: dict[str, ItemResult[tuple[ScramCredentialInfo, ...]]] = {}
    for r in response.results:
        if top is not None:
            out[r.user] = ItemResult(None, top)
            continue
        infos = tuple(sorted(ScramCredentialInfo(_mechanism(c.mechanism), int(c.iterations)) for c in r.credential_infos))
        out[r.user] = _result(infos, r.error_code, r.error_message)
    return out


def decode_describe_all_scram(response: Any) -> ItemResult[dict[str, tuple[ScramCredentialInfo, ...]]]:
    """Every user with credentials (a request-level error fails the whole read)."""
    top = _error(response.error_code, response.error_message)
    if top is not None:
        return ItemResult(None, top)
    found = decode_describe_scram(response)
    return ItemResult({user: r.value for user, r in found.items() if r.value is not None})


# --- AlterUserScramCredentials -----------------------------------------------------------------


def encode_alter_scram(alterations: Sequence[ScramAlteration]) -> dict[str, Any]:
    return {
        "deletions": [{"name": a.user, "mechanism": int(a.mechanism)} for a in alterations if isinstance(a, ScramDeletion)],
        "upsertions": [
            {
                "name": a.user,
                "mechanism": int(a.mechanism),
                "iterations": a.iterations,
                "salt": a.salt,
                "salted_password": a.salted_password,
            }
            for a in alterations
            if isinstance(a, ScramUpsertion)
        ],
    }


def decode_alter_scram(response: Any, pending: Mapping[ScramKey, ScramAlteration]) -> dict[ScramKey, ItemResult[None]]:
    """Kafka answers per user; a request carries at most one alteration per user (the admin client
    sends a user's further alterations in later requests), so the user's result is that item's."""
    by_user = {r.user: _result(None, r.error_code, r.error_message) for r in response.results}
    return {key: by_user[key[0]] for key in pending if key[0] in by_user}


# --- DescribeClientQuotas ----------------------------------------------------------------------


def encode_describe_quotas(quota_filter: QuotaFilter) -> dict[str, Any]:
    return {
        "components": [
            {"entity_type": c.entity_type, "match_type": int(c.match_type), "match": c.match}
            for c in quota_filter.components
        ],
        "strict": quota_filter.strict,
    }


def _components(entity: Any) -> tuple[tuple[str, str | None], ...]:
    return tuple((e.entity_type, e.entity_name) for e in entity)


def decode_describe_quotas(response: Any) -> ItemResult[dict[QuotaEntity, dict[str, float]]]:
    top = _error(response.error_code, response.error_message)
    if top is not None:
        return ItemResult(None, top)
    found: dict[QuotaEntity, dict[str, float]] = {}
    for entry in response.entries or ():
        entity = QuotaEntity(_components(entry.entity))
        found[entity] = {v.key: float(v.value) for v in entry.values}
    return ItemResult(found)


# --- AlterClientQuotas -------------------------------------------------------------------------


def encode_alter_quotas(alterations: Sequence[QuotaAlteration], validate_only: bool) -> dict[str, Any]:
    return {
        "entries": [
            {
                "entity": [{"entity_type": t, "entity_name": n} for t, n in a.entity.components],
                "ops": [
                    {"key": key, "value": 0.0 if value is None else value, "remove": value is None}
                    for key, value in a.ops.items()
                ],
            }
            for a in alterations
        ],
        "validate_only": validate_only,
    }


def decode_alter_quotas(response: Any, pending: Mapping[QuotaEntity, QuotaAlteration]) -> dict[QuotaEntity, ItemResult[None]]:
    """Entries are matched by their components (the order Kafka answers in is not promised)."""
    by_components = {entity.components: entity for entity in pending}
    out: dict[QuotaEntity, ItemResult[None]] = {}
    for entry in response.entries:
        entity = by_components.get(tuple(sorted(_components(entry.entity), key=component_order)))
        if entity is not None:
            out[entity] = _result(None, entry.error_code, entry.error_message)
    return out
