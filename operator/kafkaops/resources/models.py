"""Frozen dataclasses for the desired state, built from validated manifests.

`build_resource(document)` assumes the document passed validation (see
validation.py, which is the way in: `validate_set`, `from_custom_resource`).
Every model carries its Source so that issues and outcomes can name it.

Defaults applied here (the schemas carry the same values as `default`):
topicName <- metadata.name; clusterRef.namespace <- the resource's namespace;
deletionPolicy absent -> None, meaning "inherit the cluster's
topicDeletion.policy"; ACL patternType Literal, host *, permission Allow;
config values normalised to strings.
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, KeysView, Mapping, ValuesView
from dataclasses import field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, TypeAlias

from kafkaops.frozen import frozen
from kafkaops.resources.acl import AclBinding, AclOperation, AclPermission, PatternType, ResourceType
from kafkaops.resources.config_types import normalise_value
from kafkaops.resources.documents import Document, Source
from kafkaops.resources.durations import parse_duration
from kafkaops.resources.kinds import KAFKA_ACL, KAFKA_BROKER_CONFIG, KAFKA_CLIENT_QUOTA, KAFKA_CLUSTER, KAFKA_TOPIC, KAFKA_USER

if TYPE_CHECKING:
    from kafkaops.resources.users import KafkaClientQuota, KafkaUser


class DeletionPolicy(StrEnum):
    RETAIN = "Retain"
    DELETE = "Delete"


class SaslMechanism(StrEnum):
    PLAIN = "PLAIN"
    SCRAM_SHA_256 = "SCRAM-SHA-256"
    SCRAM_SHA_512 = "SCRAM-SHA-512"
    OAUTHBEARER = "OAUTHBEARER"


DEFAULT_RESYNC_INTERVAL = "5m"
DEFAULT_MAX_DELETIONS_PER_RECONCILE = 10


class FrozenDict(Mapping[str, str]):
    """An immutable, hashable str -> str mapping (for config maps inside frozen models)."""

    __slots__ = ("_items", "_hash")

    def __init__(self, items: Mapping[str, str] | None = None) -> None:
        self._items: dict[str, str] = dict(items or {})
        self._hash: int | None = None

    def __getitem__(self, key: str) -> str:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    # the dict's own views (read-only) instead of the Mapping mixin's, which look every key up again
    def keys(self) -> KeysView[str]:
        return self._items.keys()

    def items(self) -> ItemsView[str, str]:
        return self._items.items()

    def values(self) -> ValuesView[str]:
        return self._items.values()

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self._items.items()))
        return self._hash

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and dict(self._items) == dict(other.items())

    def __repr__(self) -> str:
        return f"FrozenDict({self._items!r})"


@frozen
class ClusterRef:
    name: str
    namespace: str | None = None

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


# --- KafkaCluster -----------------------------------------------------------


@frozen
class CaSecretRef:
    name: str
    key: str = "ca.crt"


@frozen
class ClientCertSecretRef:
    name: str
    cert_key: str = "tls.crt"
    key_key: str = "tls.key"


@frozen
class TlsSpec:
    enabled: bool = True
    ca_secret_ref: CaSecretRef | None = None
    client_cert_secret_ref: ClientCertSecretRef | None = None
    verify_hostname: bool = True


@frozen
class SaslCredentialsRef:
    name: str
    username_key: str = "username"
    password_key: str = "password"
    token_key: str = "token"


@frozen
class SaslSpec:
    mechanism: SaslMechanism
    credentials_secret_ref: SaslCredentialsRef | None = None


@frozen
class TopicDeletion:
    policy: DeletionPolicy = DeletionPolicy.RETAIN
    max_deletions_per_reconcile: int = DEFAULT_MAX_DELETIONS_PER_RECONCILE


@frozen
class AllowedNamespace:
    namespace: str
    topic_prefixes: tuple[str, ...] = ()

    def allows_topic(self, topic_name: str) -> bool:
        return not self.topic_prefixes or topic_name.startswith(self.topic_prefixes)


@frozen
class KafkaClusterSpec:
    bootstrap_servers: tuple[str, ...]
    tls: TlsSpec | None = None
    sasl: SaslSpec | None = None
    topic_deletion: TopicDeletion = TopicDeletion()
    resync_interval: str = DEFAULT_RESYNC_INTERVAL
    allowed_namespaces: tuple[AllowedNamespace, ...] | None = None
    replication_throttle: int | None = None
    preferred_leader_election_interval: str | None = None

    @property
    def resync_interval_seconds(self) -> float:
        return parse_duration(self.resync_interval)

    @property
    def leader_election_seconds(self) -> float | None:
        interval = self.preferred_leader_election_interval
        return None if interval is None else parse_duration(interval)


@frozen
class KafkaCluster:
    source: Source
    name: str
    namespace: str | None
    spec: KafkaClusterSpec
    generation: int | None = None

    kind = KAFKA_CLUSTER

    @property
    def ref(self) -> ClusterRef:
        return ClusterRef(self.name, self.namespace)

    def admission_problem(self, namespace: str | None, topic_name: str | None = None) -> str | None:
        """Why a resource in `namespace` (a topic named `topic_name`) may not use this cluster, or None.

        allowedNamespaces absent: every namespace may. The cluster's own namespace always may.
        An unknown namespace (files without namespaces) is not checked.
        """
        allowed = self.spec.allowed_namespaces
        if allowed is None or namespace is None or namespace == self.namespace:
            return None
        entries = [entry for entry in allowed if entry.namespace == namespace]
        if not entries:
            return f"namespace {namespace!r} is not in KafkaCluster {self.name!r}'s allowedNamespaces"
        if topic_name is not None and not any(entry.allows_topic(topic_name) for entry in entries):
            prefixes = sorted({p for entry in entries for p in entry.topic_prefixes})
            return (f"topic {topic_name!r} does not start with a prefix namespace {namespace!r} may use on "
                    f"KafkaCluster {self.name!r}: {', '.join(prefixes)}")
        return None


# --- KafkaTopic -------------------------------------------------------------


@frozen
class KafkaTopic:
    """A desired topic. partitions/replication_factor None: the broker default (KIP-464);
    replica_assignment excludes both. deletion_policy None: inherit from the cluster."""

    source: Source
    name: str
    namespace: str | None
    cluster_ref: ClusterRef
    topic_name: str
    partitions: int | None = None
    replication_factor: int | None = None
    replica_assignment: tuple[tuple[int, ...], ...] | None = None
    config: FrozenDict = field(default_factory=FrozenDict)
    deletion_policy: DeletionPolicy | None = None
    generation: int | None = None

    kind = KAFKA_TOPIC

    @property
    def desired_partitions(self) -> int | None:
        if self.replica_assignment is not None:
            return len(self.replica_assignment)
        return self.partitions

    @property
    def desired_replication_factor(self) -> int | None:
        if self.replica_assignment is not None:
            return len(self.replica_assignment[0])
        return self.replication_factor

    def effective_deletion_policy(self, cluster: KafkaCluster | KafkaClusterSpec | None) -> DeletionPolicy:
        """The topic's own policy, else its cluster's, else Retain."""
        if self.deletion_policy is not None:
            return self.deletion_policy
        spec = cluster.spec if isinstance(cluster, KafkaCluster) else cluster
        return spec.topic_deletion.policy if spec is not None else DeletionPolicy.RETAIN


# --- KafkaAcl ---------------------------------------------------------------


@frozen
class AclEntry:
    """One item of spec.acls: several operations on one resource pattern."""

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    operations: tuple[AclOperation, ...]
    host: str = "*"
    permission: AclPermission = AclPermission.ALLOW


@frozen
class KafkaAcl:
    """All ACL bindings of one principal on one cluster; `bindings` is the expansion, one per operation."""

    source: Source
    name: str
    namespace: str | None
    cluster_ref: ClusterRef
    principal: str
    entries: tuple[AclEntry, ...]
    bindings: frozenset[AclBinding]
    generation: int | None = None

    kind = KAFKA_ACL


def expand_bindings(principal: str, entries: tuple[AclEntry, ...]) -> frozenset[AclBinding]:
    return frozenset(
        AclBinding(entry.resource_type, entry.resource_name, entry.pattern_type, principal, entry.host,
                   operation, entry.permission)
        for entry in entries
        for operation in entry.operations
    )


# --- KafkaBrokerConfig ------------------------------------------------------


@frozen
class KafkaBrokerConfig:
    """Dynamic broker configs for broker `broker_id`, or the cluster-wide default when None."""

    source: Source
    name: str
    namespace: str | None
    cluster_ref: ClusterRef
    broker_id: int | None
    config: FrozenDict
    generation: int | None = None

    kind = KAFKA_BROKER_CONFIG

    @property
    def is_cluster_default(self) -> bool:
        return self.broker_id is None


Resource: TypeAlias = "KafkaCluster | KafkaTopic | KafkaAcl | KafkaBrokerConfig | KafkaUser | KafkaClientQuota"


# --- construction -------------------------------------------------------------


def build_resource(document: Document) -> Resource:
    """The model of a document that passed validation (ValueError for an unknown kind)."""
    if not _BUILDERS.keys() >= {KAFKA_USER, KAFKA_CLIENT_QUOTA}:
        from kafkaops.resources.users import build_client_quota, build_user  # users.py builds on this module

        _BUILDERS.update({KAFKA_USER: build_user, KAFKA_CLIENT_QUOTA: build_client_quota})
    builder = _BUILDERS.get(document.kind)
    if builder is None:
        raise ValueError(f"not a kafkaops kind: {document.kind!r}")
    return builder(document)


def metadata_of(document: Document) -> tuple[str, str | None, int | None]:
    metadata = document.body.get("metadata") or {}
    generation = metadata.get("generation")
    return (
        metadata["name"],
        metadata.get("namespace"),
        generation if isinstance(generation, int) and not isinstance(generation, bool) else None,
    )


def cluster_ref_of(spec: Mapping[str, Any], namespace: str | None) -> ClusterRef:
    ref = spec["clusterRef"]
    return ClusterRef(ref["name"], ref.get("namespace") or namespace)


def _config(spec: Mapping[str, Any]) -> FrozenDict:
    return FrozenDict({key: normalise_value(value) for key, value in (spec.get("config") or {}).items()})


def _build_cluster(document: Document) -> KafkaCluster:
    name, namespace, generation = metadata_of(document)
    spec = document.body["spec"]
    tls = sasl = None
    if (raw := spec.get("tls")) is not None:
        ca = raw.get("caSecretRef")
        client = raw.get("clientCertSecretRef")
        tls = TlsSpec(
            enabled=raw.get("enabled", True),
            ca_secret_ref=CaSecretRef(ca["name"], ca.get("key", "ca.crt")) if ca else None,
            client_cert_secret_ref=ClientCertSecretRef(
                client["name"], client.get("certKey", "tls.crt"), client.get("keyKey", "tls.key")
            ) if client else None,
            verify_hostname=raw.get("verifyHostname", True),
        )
    if (raw := spec.get("sasl")) is not None:
        creds = raw.get("credentialsSecretRef")
        sasl = SaslSpec(
            SaslMechanism(raw["mechanism"]),
            SaslCredentialsRef(
                creds["name"],
                creds.get("usernameKey", "username"),
                creds.get("passwordKey", "password"),
                creds.get("tokenKey", "token"),
            ) if creds else None,
        )
    deletion = spec.get("topicDeletion") or {}
    allowed = spec.get("allowedNamespaces")
    return KafkaCluster(
        document.source,
        name,
        namespace,
        KafkaClusterSpec(
            bootstrap_servers=tuple(spec["bootstrapServers"]),
            tls=tls,
            sasl=sasl,
            topic_deletion=TopicDeletion(
                DeletionPolicy(deletion.get("policy", DeletionPolicy.RETAIN)),
                deletion.get("maxDeletionsPerReconcile", DEFAULT_MAX_DELETIONS_PER_RECONCILE),
            ),
            resync_interval=spec.get("resyncInterval", DEFAULT_RESYNC_INTERVAL),
            allowed_namespaces=None if allowed is None else tuple(
                AllowedNamespace(item["namespace"], tuple(item.get("topicPrefixes") or ())) for item in allowed
            ),
            replication_throttle=spec.get("replicationThrottle"),
            preferred_leader_election_interval=spec.get("preferredLeaderElectionInterval"),
        ),
        generation,
    )


def _build_topic(document: Document) -> KafkaTopic:
    name, namespace, generation = metadata_of(document)
    spec = document.body["spec"]
    assignment = spec.get("replicaAssignment")
    policy = spec.get("deletionPolicy")
    return KafkaTopic(
        document.source,
        name,
        namespace,
        cluster_ref_of(spec, namespace),
        spec.get("topicName") or name,
        spec.get("partitions"),
        spec.get("replicationFactor"),
        None if assignment is None else tuple(tuple(replicas) for replicas in assignment),
        _config(spec),
        None if policy is None else DeletionPolicy(policy),
        generation,
    )


def acl_entries(items: list[Mapping[str, Any]]) -> tuple[AclEntry, ...]:
    """spec.acls of a KafkaAcl (or a KafkaUser's inline rules) as AclEntry values, defaults applied."""
    return tuple(
        AclEntry(
            ResourceType(item["resource"]["type"]),
            item["resource"]["name"],
            PatternType(item["resource"].get("patternType", PatternType.LITERAL)),
            tuple(dict.fromkeys(AclOperation(op) for op in item["operations"])),
            item.get("host", "*"),
            AclPermission(item.get("permission", AclPermission.ALLOW)),
        )
        for item in items
    )


def _build_acl(document: Document) -> KafkaAcl:
    name, namespace, generation = metadata_of(document)
    spec = document.body["spec"]
    entries = acl_entries(spec["acls"])
    principal = spec["principal"]
    return KafkaAcl(
        document.source, name, namespace, cluster_ref_of(spec, namespace), principal, entries,
        expand_bindings(principal, entries), generation,
    )


def _build_broker_config(document: Document) -> KafkaBrokerConfig:
    name, namespace, generation = metadata_of(document)
    spec = document.body["spec"]
    return KafkaBrokerConfig(
        document.source, name, namespace, cluster_ref_of(spec, namespace), spec.get("brokerId"), _config(spec), generation,
    )


_BUILDERS: dict[str, Any] = {
    KAFKA_CLUSTER: _build_cluster,
    KAFKA_TOPIC: _build_topic,
    KAFKA_ACL: _build_acl,
    KAFKA_BROKER_CONFIG: _build_broker_config,
}
