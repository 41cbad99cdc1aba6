"""What the engine saw in a cluster: typed, frozen, read in bulk by observe.py.

A field that could not be read carries the Kafka error instead of a value
(`acls_error`, `ObservedTopic.configs_error`...), so planning can fail exactly
the resources that needed it and go on with the others.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from types import MappingProxyType

from kafkaops.frozen import frozen
from kafkaops.kafka import (
    BrokerInfo,
    ConfigEntry,
    ConfigSource,
    KafkaError,
    QuotaEntity,
    Reassignment,
    ScramCredentialInfo,
    TopicPartition,
)
from kafkaops.resources.acl import AclBinding

EMPTY: Mapping = MappingProxyType({})


@frozen
class ObservedConfig:
    """One config key as DescribeConfigs reported it. `value` is None when Kafka hides it (sensitive)."""

    value: str | None
    source: ConfigSource
    sensitive: bool = False

    @classmethod
    def of(cls, entry: ConfigEntry) -> ObservedConfig:
        return cls(entry.value, entry.source, entry.sensitive)

    def __repr__(self) -> str:
        shown = "***" if self.sensitive else repr(self.value)
        return f"ObservedConfig({shown}, {self.source.name})"


@frozen
class ObservedTopic:
    name: str
    assignment: tuple[tuple[int, ...], ...]  # replicas per partition, by partition id
    topic_id: str | None = None
    internal: bool = False
    all_led: bool = True
    configs: Mapping[str, ObservedConfig] | None = None  # None: not read (or configs_error)
    configs_error: KafkaError | None = None

    @property
    def partitions(self) -> int:
        return len(self.assignment)

    @property
    def replication_factor(self) -> int:
        return len(self.assignment[0]) if self.assignment else 0

    def overrides(self) -> dict[str, ObservedConfig]:
        """The configs set on the topic itself (not defaults)."""
        return {k: c for k, c in (self.configs or {}).items() if c.source is ConfigSource.DYNAMIC_TOPIC_CONFIG}


@frozen
class ObservedState:
    """A cluster as read by one observe(): topics in scope, ACLs, broker configs, reassignments,
    SCRAM credentials and client quotas."""

    cluster_id: str | None
    controller_id: int
    brokers: Mapping[int, BrokerInfo]
    topics: Mapping[str, ObservedTopic]
    # Every topic name in the cluster when observe listed them all (prune, export); else None.
    all_topic_names: frozenset[str] | None = None
    # ACL bindings by principal; None when not read (acls_error says why when reading failed).
    acls: Mapping[str, frozenset[AclBinding]] | None = None
    acls_error: KafkaError | None = None
    # Dynamic broker configs by broker key ("" = cluster default, else the broker id).
    broker_configs: Mapping[str, Mapping[str, ObservedConfig]] = field(default_factory=lambda: EMPTY)
    broker_config_errors: Mapping[str, KafkaError] = field(default_factory=lambda: EMPTY)
    # Partitions being reassigned, with their target and the replicas being added/removed
    # (None: not read, or the cluster has no ListPartitionReassignments).
    reassignments: Mapping[TopicPartition, Reassignment] | None = None
    # Topics that could not be read (other than "does not exist"), e.g. TOPIC_AUTHORIZATION_FAILED.
    topic_errors: Mapping[str, KafkaError] = field(default_factory=lambda: EMPTY)
    # SCRAM credentials by user (mechanism + iterations only); None when not read (scram_error: why).
    scram: Mapping[str, tuple[ScramCredentialInfo, ...]] | None = None
    scram_error: KafkaError | None = None
    # Client quotas by entity; None when not read (quotas_error: why, e.g. UNSUPPORTED_VERSION).
    quotas: Mapping[QuotaEntity, Mapping[str, float]] | None = None
    quotas_error: KafkaError | None = None

    def topic(self, name: str) -> ObservedTopic | None:
        return self.topics.get(name)

    @property
    def reassigning(self) -> frozenset[TopicPartition]:
        return frozenset(self.reassignments or ())

    def original_assignment(self, topic: ObservedTopic) -> tuple[tuple[int, ...], ...]:
        """The topic's replicas without the ones a reassignment in flight is adding: while moving,
        Metadata shows target + removing replicas, which would read as the new replication factor."""
        moving = self.reassignments
        if not moving:  # the usual case: no TopicPartition built per partition of every topic
            return topic.assignment
        return tuple(
            tuple(b for b in replicas if b not in moving[tp].adding) if (tp := TopicPartition(topic.name, p)) in moving
            else replicas
            for p, replicas in enumerate(topic.assignment)
        )


def broker_key(broker_id: int | None) -> str:
    """The ConfigResource name of a broker config: "" for the cluster-wide default."""
    return "" if broker_id is None else str(broker_id)
