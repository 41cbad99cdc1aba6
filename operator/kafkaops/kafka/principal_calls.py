"""The admin client's calls for users and quotas: SCRAM credentials (KIP-554, APIs 50/51) and
client quotas (KIP-546, APIs 48/49). ``AdminClient`` inherits them; they go through the same
engine as every other call (``_execute``/``_single``: dedupe, record-sized requests, routing,
retries of failed items only, NOT_CONTROLLER rediscovery, KIP-35 versions, UnsupportedFeature
naming the API and both version ranges on brokers without it).

Kafka's own rules shape two of them:

* AlterUserScramCredentials answers per *user*, and the KRaft controller refuses a second
  alteration of one user in one request (DUPLICATE_RESOURCE). Alterations are keyed
  (user, mechanism); a user's second mechanism goes in a following request ("waves"), so
  upserting SCRAM-SHA-512 and deleting SCRAM-SHA-256 of one user takes two requests, while
  1,000 users take one.
* A retried deletion that meets RESOURCE_NOT_FOUND after an attempt that may have been applied
  (a timeout, a broken connection) counts as done, like a retried topic deletion.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from . import principal_messages as pm
from .apis import Api
from .calls import Route, _Call
from .models import ItemResult, Results
from .quotas import QuotaAlteration, QuotaEntity, QuotaFilter
from .scram import ScramAlteration, ScramCredentialInfo, ScramDeletion
from .sizing import dedupe

if TYPE_CHECKING:
    from .admin import AdminClient

ScramKey = pm.ScramKey
ALL_QUOTAS = QuotaFilter()


class PrincipalCalls:
    """Users and quotas; mixed into ``AdminClient``."""

    async def describe_user_scram_credentials(
        self: AdminClient, users: Iterable[str] | None = None
    ) -> Results[str, tuple[ScramCredentialInfo, ...]]:
        """Each user's credentials (mechanism + iterations, never salts or keys).

        ``users=None``: every user that has a credential, in one request (a request-level error
        raises KafkaRequestError). Named users: one result each; a user without any credential
        answers RESOURCE_NOT_FOUND, as Kafka does.
        """
        if users is None:
            found = await self._single(
                Api.DESCRIBE_USER_SCRAM_CREDENTIALS, Route.ANY, lambda: pm.encode_describe_scram(None), pm.decode_describe_all_scram
            )
            return Results({user: ItemResult(infos) for user, infos in sorted(found.items())})
        call: _Call[str, None, tuple[ScramCredentialInfo, ...]] = _Call(
            Api.DESCRIBE_USER_SCRAM_CREDENTIALS,
            Route.ANY,
            lambda p: pm.encode_describe_scram(list(p)),
            lambda r, _p: pm.decode_describe_scram(r),
        )
        results, _ = await self._execute(call, ((u, None) for u in users))
        return results

    async def alter_user_scram_credentials(self: AdminClient, alterations: Iterable[ScramAlteration]) -> Results[ScramKey, None]:
        """Upsert and delete SCRAM credentials; one result per (user, mechanism).

        The last alteration of a (user, mechanism) wins. Build upsertions with
        ``scram_upsertion(user, mechanism, password)`` (salted client-side).
        """
        unique = dedupe((a.key, a) for a in alterations)
        waves: list[dict[ScramKey, ScramAlteration]] = []
        seen: dict[str, int] = {}
        for key, alteration in unique.items():
            wave = seen.get(key[0], 0)
            seen[key[0]] = wave + 1
            if wave == len(waves):
                waves.append({})
            waves[wave][key] = alteration
        call: _Call[ScramKey, ScramAlteration, None] = _Call(
            Api.ALTER_USER_SCRAM_CREDENTIALS,
            Route.CONTROLLER,
            lambda p: pm.encode_alter_scram(list(p.values())),
            pm.decode_alter_scram,
            write=True,
        )
        merged: dict[ScramKey, ItemResult[None]] = {}
        for wave_items in waves:
            results, uncertain = await self._execute(call, wave_items.items())
            for key, result in results.items():
                gone = (
                    key in uncertain
                    and isinstance(wave_items[key], ScramDeletion)
                    and result.error is not None
                    and result.error.code == ErrorCode.resource_not_found
                )
                merged[key] = ItemResult() if gone else result
        return Results({key: merged[key] for key in unique})

    async def describe_client_quotas(self: AdminClient, quota_filter: QuotaFilter = ALL_QUOTAS) -> dict[QuotaEntity, dict[str, float]]:
        """The quotas of every entity matching the filter (default: all of them, one request).
        A request-level error (e.g. INVALID_REQUEST for a bad filter) raises KafkaRequestError."""
        found: dict[QuotaEntity, dict[str, float]] = await self._single(
            Api.DESCRIBE_CLIENT_QUOTAS, Route.ANY, lambda: pm.encode_describe_quotas(quota_filter), pm.decode_describe_quotas
        )
        return found

    async def alter_client_quotas(
        self: AdminClient, alterations: Iterable[QuotaAlteration], *, validate_only: bool = False
    ) -> Results[QuotaEntity, None]:
        """Set/remove quota keys per entity; one result per entity (the last alteration of an
        entity wins). ``validate_only``: the broker checks and changes nothing (for ``plan``)."""
        call: _Call[QuotaEntity, QuotaAlteration, None] = _Call(
            Api.ALTER_CLIENT_QUOTAS,
            Route.CONTROLLER,
            lambda p: pm.encode_alter_quotas(list(p.values()), validate_only),
            pm.decode_alter_quotas,
            write=not validate_only,
        )
        results, _ = await self._execute(call, ((a.entity, a) for a in alterations))
        return results
