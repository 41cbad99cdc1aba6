"""Users and quotas of the fake cluster TEST DOUBLE: SCRAM credentials per user and mechanism
(KIP-554) and client quotas per entity (KIP-546), with Kafka's validation rules.

The handlers (``handlers/principals.py``) translate requests; the SASL listener
(``testing/sasl_double.py``) reads the credentials here to authenticate clients, deriving the
stored and server keys from the salted password as a broker does (RFC 5802).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
from collections.abc import Iterable
from dataclasses import field

from kio.schema.errors import ErrorCode

from kafkaops.frozen import frozen

from .context import ItemError

MECHANISMS = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
_HASHES = {1: "sha256", 2: "sha512"}
MIN_ITERATIONS, MAX_ITERATIONS = 4096, 16384

USER, CLIENT_ID, IP = "user", "client-id", "ip"
_ORDER = (USER, CLIENT_ID, IP)
# Kafka's quota keys, by entity type, and whether the value must be whole (LONG) or not (DOUBLE).
CLIENT_KEYS = {"producer_byte_rate": True, "consumer_byte_rate": True, "request_percentage": False,
               "controller_mutation_rate": False}
IP_KEYS = {"connection_creation_rate": True}

Entity = tuple[tuple[str, str | None], ...]


@frozen
class ScramCredentialDouble:
    """One stored credential, as the broker keeps it (never shown by /state)."""

    iterations: int
    salt: bytes = field(repr=False)
    salted_password: bytes = field(repr=False)

    def keys(self, mechanism: int) -> tuple[bytes, bytes]:
        """(stored key, server key) of RFC 5802 from the salted password."""
        digest = _HASHES[mechanism]
        client_key = hmac.new(self.salted_password, b"Client Key", digest).digest()
        server_key = hmac.new(self.salted_password, b"Server Key", digest).digest()
        return hashlib.new(digest, client_key).digest(), server_key


class PrincipalStoreDouble:
    """SCRAM credentials (user -> mechanism -> credential) and quotas (entity -> key -> value)."""

    def __init__(self) -> None:
        self.scram: dict[str, dict[int, ScramCredentialDouble]] = {}
        self.quotas: dict[Entity, dict[str, float]] = {}
        self.scram_changes = 0  # credential upsertions/deletions applied (tests count them)

    # ------------------------------------------------------------------ SCRAM
    def scram_credential(self, mechanism: str, user: str) -> tuple[bytes, bytes, bytes, int] | None:
        """(salt, stored key, server key, iterations) for SASL/SCRAM, or None."""
        wire = next((k for k, name in MECHANISMS.items() if name == mechanism), None)
        credential = self.scram.get(user, {}).get(wire) if wire is not None else None
        if credential is None or wire is None:
            return None
        stored, server = credential.keys(wire)
        return credential.salt, stored, server, credential.iterations

    def upsertion_error(self, user: str, mechanism: int, iterations: int, salt: bytes, salted: bytes) -> ItemError | None:
        base = self._alteration_error(user, mechanism)
        if base is not None:
            return base
        if iterations < MIN_ITERATIONS:
            return ItemError(ErrorCode.unacceptable_credential, f"Too few iterations: {iterations} < {MIN_ITERATIONS}")
        if iterations > MAX_ITERATIONS:
            return ItemError(ErrorCode.unacceptable_credential, f"Too many iterations: {iterations} > {MAX_ITERATIONS}")
        if not salt or not salted:
            return ItemError(ErrorCode.unacceptable_credential, "Credential salt and salted password must not be empty")
        return None

    def deletion_error(self, user: str, mechanism: int) -> ItemError | None:
        base = self._alteration_error(user, mechanism)
        if base is None and mechanism not in self.scram.get(user, {}):
            return ItemError(ErrorCode.resource_not_found, "Attempt to delete a user credential that does not exist")
        return base

    @staticmethod
    def _alteration_error(user: str, mechanism: int) -> ItemError | None:
        if not user:
            return ItemError(ErrorCode.unacceptable_credential, "Username must not be empty")
        if mechanism not in MECHANISMS:
            return ItemError(ErrorCode.unsupported_sasl_mechanism, f"Unknown SCRAM mechanism {mechanism}")
        return None

    def upsert(self, user: str, mechanism: int, credential: ScramCredentialDouble) -> None:
        self.scram.setdefault(user, {})[mechanism] = credential
        self.scram_changes += 1

    def delete(self, user: str, mechanism: int) -> None:
        mechanisms = self.scram.get(user, {})
        mechanisms.pop(mechanism, None)
        if not mechanisms:
            self.scram.pop(user, None)
        self.scram_changes += 1

    # ----------------------------------------------------------------- quotas
    def alter_quotas(self, entity: Entity, ops: Iterable[tuple[str, float, bool]]) -> None:
        values = self.quotas.setdefault(entity, {})
        for key, value, remove in ops:
            if remove:
                values.pop(key, None)
            else:
                values[key] = value
        if not values:
            del self.quotas[entity]

    def describe_quotas(self, components: Iterable[tuple[str, int, str | None]], strict: bool) -> list[tuple[Entity, dict[str, float]]]:
        """Entities matching every component (KIP-546: 0 exact name, 1 default, 2 any name);
        ``strict``: only entities with exactly the filter's types. Call ``filter_error`` first."""
        wanted = list(components)
        found = []
        for entity, values in self.quotas.items():
            names = dict(entity)
            if strict and set(names) != {t for t, _, _ in wanted}:
                continue
            if all(t in names and _matches(names[t], kind, match) for t, kind, match in wanted):
                found.append((entity, dict(values)))
        return found


def _matches(name: str | None, kind: int, match: str | None) -> bool:
    if kind == 0:
        return name == match
    if kind == 1:
        return name is None
    return True


def filter_error(components: Iterable[tuple[str, int, str | None]]) -> ItemError | None:
    """Kafka's checks of a DescribeClientQuotas filter, as INVALID_REQUEST (or UNSUPPORTED_VERSION
    for an entity type it does not know)."""
    seen: set[str] = set()
    for entity_type, kind, match in components:
        if entity_type in seen:
            return _invalid(f"Entity type {entity_type} cannot appear more than once in the filter.")
        seen.add(entity_type)
        if entity_type not in _ORDER:
            return ItemError(ErrorCode.unsupported_version, f"Unsupported entity type {entity_type}")
        if kind == 0 and match is None:
            return _invalid("Request specified MATCH_TYPE_EXACT, but set match string to null.")
        if kind in (1, 2) and match is not None:
            name = "MATCH_TYPE_DEFAULT" if kind == 1 else "MATCH_TYPE_SPECIFIED"
            return _invalid(f"Request specified {name}, but also specified a match string.")
        if kind not in (0, 1, 2):
            return _invalid(f"Unknown match type {kind}")
    if IP in seen and len(seen) > 1:
        return _invalid("Invalid entity filter component combination. IP filter component should not be used "
                        "with user or clientId filter component.")
    return None


def entity_error(components: Iterable[tuple[str, str | None]]) -> tuple[Entity, ItemError | None]:
    """The entity in canonical order, and Kafka's INVALID_REQUEST for a bad one."""
    pairs = list(components)
    entity = tuple(sorted(pairs, key=lambda c: _ORDER.index(c[0]) if c[0] in _ORDER else len(_ORDER)))
    types = [t for t, _ in pairs]
    if not pairs:
        return entity, _invalid("Invalid empty client quota entity")
    if len(set(types)) != len(types):
        return entity, _invalid("Invalid quota entity: an entity type appears more than once")
    unknown = [t for t in types if t not in _ORDER]
    if unknown:
        return entity, _invalid(f"Unhandled client quota entity type: {unknown[0]}")
    if IP in types:
        if len(types) > 1:
            return entity, _invalid("Invalid quota entity combination, IP entity should not be combined with User or ClientId")
        name = dict(pairs)[IP]
        if name is not None:
            try:
                ipaddress.ip_address(name)
            except ValueError:
                return entity, _invalid(f"{name} is not a valid IP or resolvable host.")
    for entity_type, name in pairs:
        if name == "":
            return entity, _invalid(f"Empty {entity_type} name is not allowed in quota entity")
    return entity, None


def quota_op_error(entity: Entity, key: str, value: float, remove: bool) -> ItemError | None:
    """Unknown keys for the entity's type and non-whole LONG values answer INVALID_REQUEST."""
    allowed = IP_KEYS if any(t == IP for t, _ in entity) else CLIENT_KEYS
    if key not in allowed:
        return _invalid(f"Invalid configuration key {key}")
    if not remove and allowed[key] and abs(value - round(value)) > 1e-6:
        return _invalid(f"Configuration {key} must be a Long value")
    return None


def _invalid(message: str) -> ItemError:
    return ItemError(ErrorCode.invalid_request, message)


def state_view(store: PrincipalStoreDouble) -> dict[str, object]:
    """What `/state` shows: users with mechanisms and iterations (never salts or hashes), quotas."""
    return {
        "users": {
            user: {MECHANISMS[m]: {"iterations": c.iterations} for m, c in sorted(mechanisms.items())}
            for user, mechanisms in sorted(store.scram.items())
        },
        "quotas": [
            {"entity": {t: n for t, n in entity}, "values": dict(values)}
            for entity, values in store.quotas.items()
        ],
    }
