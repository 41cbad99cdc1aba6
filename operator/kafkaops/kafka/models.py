"""Typed values the admin client takes and returns (frozen dataclasses, enums)."""

from __future__ import annotations

import enum
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import field
from typing import Generic, TypeVar

from kafkaops.frozen import frozen

from .errors import KafkaError

K = TypeVar("K")
V = TypeVar("V")


# --- enums with Kafka's wire values -------------------------------------------------


class ResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class ConfigResourceType(enum.IntEnum):
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermission(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


class AlterOp(enum.IntEnum):
    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


class ConfigSource(enum.IntEnum):
    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8


# --- requests ------------------------------------------------------------------------


@frozen
class NewTopic:
    """A topic to create: partitions + replication factor, or an explicit assignment.

    ``-1`` for partitions or replication factor means the broker's default.
    ``replica_assignment`` is one broker-id list per partition (KIP-4: it
    excludes partitions/replication_factor).
    """

    name: str
    partitions: int = -1
    replication_factor: int = -1
    configs: Mapping[str, str] = field(default_factory=dict)
    replica_assignment: tuple[tuple[int, ...], ...] | None = None

    def __post_init__(self) -> None:
        if self.replica_assignment is not None:
            object.__setattr__(self, "replica_assignment", tuple(tuple(r) for r in self.replica_assignment))
        object.__setattr__(self, "configs", dict(self.configs))

    def __hash__(self) -> int:
        return hash((self.name, self.partitions, self.replication_factor, self.replica_assignment))

    @property
    def partition_count(self) -> int:
        if self.replica_assignment is not None:
            return len(self.replica_assignment)
        return self.partitions

    @property
    def replica_count(self) -> int:
        if self.replica_assignment:
            return len(self.replica_assignment[0])
        return self.replication_factor


@frozen
class NewPartitions:
    """Grow ``topic`` to ``total_count`` partitions (optionally with placement)."""

    topic: str
    total_count: int
    assignments: tuple[tuple[int, ...], ...] | None = None


@frozen
class ConfigResource:
    type: ConfigResourceType
    name: str  # topic name, broker id as a string, or "" for the cluster-wide broker default

    @classmethod
    def topic(cls, name: str) -> ConfigResource:
        return cls(ConfigResourceType.TOPIC, name)

    @classmethod
    def broker(cls, broker_id: int | None = None) -> ConfigResource:
        return cls(ConfigResourceType.BROKER, "" if broker_id is None else str(broker_id))


@frozen
class AlterConfigOp:
    name: str
    value: str | None = None
    op: AlterOp = AlterOp.SET

    def __repr__(self) -> str:  # values may be secrets (e.g. sasl.jaas.config)
        return f"AlterConfigOp({self.name!r}, {self.op.name})"


@frozen
class AclBinding:
    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission: AclPermission


@frozen
class AclBindingFilter:
    """Matches bindings; None / ANY match everything for that field."""

    resource_type: ResourceType = ResourceType.ANY
    resource_name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission: AclPermission = AclPermission.ANY

    @classmethod
    def exact(cls, binding: AclBinding) -> AclBindingFilter:
        return cls(
            binding.resource_type,
            binding.resource_name,
            binding.pattern_type,
            binding.principal,
            binding.host,
            binding.operation,
            binding.permission,
        )


@frozen(order=True)
class TopicPartition:
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


# --- results -------------------------------------------------------------------------


@frozen
class BrokerInfo:
    node_id: int
    host: str
    port: int
    rack: str | None = None


@frozen
class PartitionInfo:
    partition: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()
    error: KafkaError | None = None


@frozen
class TopicInfo:
    """A topic as a Metadata answer describes it; `partitions` in partition order (decode_metadata
    sorts them when a broker lists them otherwise)."""

    name: str
    topic_id: uuid.UUID | None
    partitions: tuple[PartitionInfo, ...]
    internal: bool = False

    @property
    def replication_factor(self) -> int:
        return len(self.partitions[0].replicas) if self.partitions else 0

    @property
    def all_led(self) -> bool:
        """Every partition has a leader (a created topic is ready)."""
        for partition in self.partitions:  # a loop: asked of every topic a wait polls, of three partitions or so
            if partition.leader < 0:
                return False
        return bool(self.partitions)


@frozen
class ClusterMetadata:
    cluster_id: str | None
    controller_id: int
    brokers: Mapping[int, BrokerInfo]
    topics: Mapping[str, TopicInfo]
    topic_errors: Mapping[str, KafkaError] = field(default_factory=dict)


@frozen
class ClusterDescription:
    cluster_id: str | None
    controller_id: int
    brokers: Mapping[int, BrokerInfo]


@frozen
class CreatedTopic:
    name: str
    topic_id: uuid.UUID | None
    partitions: int
    replication_factor: int


@frozen
class ConfigSynonym:
    name: str
    value: str | None
    source: ConfigSource

    def __repr__(self) -> str:
        return f"ConfigSynonym({self.name!r}, source={self.source.name})"


@frozen
class ConfigEntry:
    name: str
    value: str | None
    source: ConfigSource
    read_only: bool
    sensitive: bool
    synonyms: tuple[ConfigSynonym, ...] = ()
    documentation: str | None = None

    @property
    def is_default(self) -> bool:
        return self.source in (ConfigSource.DEFAULT_CONFIG, ConfigSource.STATIC_BROKER_CONFIG, ConfigSource.UNKNOWN)

    def __repr__(self) -> str:
        shown = "***" if self.sensitive else repr(self.value)
        return f"ConfigEntry({self.name!r}, {shown}, source={self.source.name})"


@frozen
class Reassignment:
    partition: TopicPartition
    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]


@frozen
class ReplicaLogDir:
    partition: TopicPartition
    size: int
    offset_lag: int
    is_future: bool


@frozen
class LogDir:
    path: str
    error: KafkaError | None
    replicas: tuple[ReplicaLogDir, ...]
    total_bytes: int = -1
    usable_bytes: int = -1


@frozen
class ItemResult(Generic[V]):
    """One item's outcome: a value, or a typed Kafka error (never both)."""

    value: V | None = None
    error: KafkaError | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


class Results(Mapping[K, ItemResult[V]]):
    """Per-item results of one admin call, keyed like the input (kadm-style)."""

    __slots__ = ("_items",)

    def __init__(self, items: Mapping[K, ItemResult[V]] | None = None) -> None:
        self._items: dict[K, ItemResult[V]] = dict(items or {})

    def __getitem__(self, key: K) -> ItemResult[V]:
        return self._items[key]

    def __iter__(self) -> Iterator[K]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        failed = len(self.failed())
        return f"Results({len(self)} items, {failed} failed)"

    def failed(self) -> dict[K, KafkaError]:
        return {k: r.error for k, r in self._items.items() if r.error is not None}

    def succeeded(self) -> dict[K, V | None]:
        return {k: r.value for k, r in self._items.items() if r.error is None}

    @property
    def all_ok(self) -> bool:
        return all(r.error is None for r in self._items.values())


# --- users and quotas (their own modules; importable from here like every other value) --------

from .quotas import (  # noqa: E402
    QuotaAlteration,
    QuotaEntity,
    QuotaFilter,
    QuotaFilterComponent,
    QuotaMatch,
)
from .scram import ScramAlteration, ScramCredentialInfo, ScramDeletion, ScramMechanism, ScramUpsertion  # noqa: E402
