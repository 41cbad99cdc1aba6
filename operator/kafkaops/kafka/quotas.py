"""Client quotas (KIP-546): the typed values of DescribeClientQuotas (API 48) and
AlterClientQuotas (API 49).

A quota entity is a set of components, each an entity type (``user``, ``client-id``, ``ip``)
with a name, or None for that type's default entity. Kafka accepts these shapes: user,
client-id, user + client-id (any of them default), and ip (alone). Quota values are floats
keyed by Kafka's quota keys (``QUOTA_KEYS``); the broker checks keys per entity type and
answers INVALID_REQUEST per entity, so an alteration is not checked for keys here.
Pure values, no I/O.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import field
from typing import Final

from kafkaops.frozen import frozen

USER: Final = "user"
CLIENT_ID: Final = "client-id"
IP: Final = "ip"
ENTITY_TYPES: Final = (USER, CLIENT_ID, IP)

# The quota keys Kafka knows, by the entity types they apply to (QuotaConfigs).
CLIENT_QUOTA_KEYS: Final = frozenset(
    {"producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate"}
)
IP_QUOTA_KEYS: Final = frozenset({"connection_creation_rate"})
QUOTA_KEYS: Final = CLIENT_QUOTA_KEYS | IP_QUOTA_KEYS


class _Absent(enum.Enum):
    ABSENT = "absent"


ABSENT: Final = _Absent.ABSENT  # a component the entity does not have (None: the default entity)


def component_order(component: tuple[str, str | None]) -> int:
    """Sort key of a component: user, client-id, ip (unknown types last)."""
    return ENTITY_TYPES.index(component[0]) if component[0] in ENTITY_TYPES else len(ENTITY_TYPES)


@frozen
class QuotaEntity:
    """A quota entity: ((entity type, name or None for the default), ...), kept in a fixed order
    (user, client-id, ip) so equal entities compare and hash equal. Build with ``of``."""

    components: tuple[tuple[str, str | None], ...]

    def __post_init__(self) -> None:
        components = tuple(sorted(((str(t), n) for t, n in self.components), key=component_order))
        types = [t for t, _ in components]
        where = f"quota entity {_describe(components) or '(empty)'}"
        if not components:
            raise ValueError("quota entity: needs at least one of user, client-id, ip")
        for entity_type, name in components:
            if entity_type not in ENTITY_TYPES:
                raise ValueError(f"{where}: unknown entity type {entity_type!r}; expected one of {', '.join(ENTITY_TYPES)}")
            if name is not None and (not isinstance(name, str) or not name):
                raise ValueError(f"{where}: {entity_type} must be a non-empty name, or None for the default")
        if len(set(types)) != len(types):
            raise ValueError(f"{where}: an entity type appears twice")
        if IP in types and len(types) > 1:
            raise ValueError(f"{where}: ip cannot be combined with user or client-id")
        object.__setattr__(self, "components", components)

    @classmethod
    def of(
        cls,
        *,
        user: str | None | _Absent = ABSENT,
        client_id: str | None | _Absent = ABSENT,
        ip: str | None | _Absent = ABSENT,
    ) -> QuotaEntity:
        """``QuotaEntity.of(user="alice")``; ``user=None`` is the default user."""
        given = ((USER, user), (CLIENT_ID, client_id), (IP, ip))
        return cls(tuple((t, n) for t, n in given if n is not ABSENT))  # type: ignore[misc]

    @classmethod
    def from_components(cls, components: Mapping[str, str | None] | Iterable[tuple[str, str | None]]) -> QuotaEntity:
        pairs = components.items() if isinstance(components, Mapping) else components
        return cls(tuple(pairs))

    def has(self, entity_type: str) -> bool:
        return any(t == entity_type for t, _ in self.components)

    def name(self, entity_type: str) -> str | None:
        """The component's name (None: the default entity); KeyError when it has no such component."""
        for t, n in self.components:
            if t == entity_type:
                return n
        raise KeyError(entity_type)

    @property
    def types(self) -> tuple[str, ...]:
        return tuple(t for t, _ in self.components)

    def __str__(self) -> str:
        return _describe(self.components)


def _describe(components: Iterable[tuple[str, str | None]]) -> str:
    return ",".join(f"{t}={'<default>' if n is None else n}" for t, n in components)


@frozen
class QuotaAlteration:
    """Set (a float) or remove (None) quota keys of one entity; keys not named are left alone."""

    entity: QuotaEntity
    ops: Mapping[str, float | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        ops: dict[str, float | None] = {}
        for key, value in dict(self.ops).items():
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
                raise ValueError(f"quota entity {self.entity}: {key}: expected a number or None, not {value!r}")
            ops[str(key)] = None if value is None else float(value)
        object.__setattr__(self, "ops", ops)

    def __hash__(self) -> int:
        return hash((self.entity, tuple(sorted(self.ops.items(), key=lambda kv: kv[0]))))


class QuotaMatch(enum.IntEnum):
    """How a DescribeClientQuotas filter component matches (KIP-546)."""

    EXACT = 0  # the entity type with this name
    DEFAULT = 1  # the entity type's default entity
    ANY = 2  # the entity type with any name, the default included


@frozen
class QuotaFilterComponent:
    entity_type: str
    match_type: QuotaMatch
    match: str | None = None

    @classmethod
    def exact(cls, entity_type: str, name: str) -> QuotaFilterComponent:
        return cls(entity_type, QuotaMatch.EXACT, name)

    @classmethod
    def default(cls, entity_type: str) -> QuotaFilterComponent:
        return cls(entity_type, QuotaMatch.DEFAULT)

    @classmethod
    def any(cls, entity_type: str) -> QuotaFilterComponent:
        return cls(entity_type, QuotaMatch.ANY)


@frozen
class QuotaFilter:
    """Which entities DescribeClientQuotas returns. No components and not strict: every entity
    (one request reads all quotas of a cluster). ``strict``: entities with exactly these types."""

    components: tuple[QuotaFilterComponent, ...] = ()
    strict: bool = False

    @classmethod
    def entity(cls, entity: QuotaEntity) -> QuotaFilter:
        """Exactly this entity."""
        return cls(
            tuple(
                QuotaFilterComponent.default(t) if n is None else QuotaFilterComponent.exact(t, n)
                for t, n in entity.components
            ),
            strict=True,
        )
