"""Pure translation between typed values and kio message payloads, per API.

``encode_*`` functions return the plain mapping ``wire.build`` turns into a
kio request of whatever version was negotiated (fields a version lacks are
dropped there). ``decode_*`` functions turn a kio response into per-item
``ItemResult`` values keyed like the input, plus the throttle time. No I/O.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .errors import KafkaError
from .models import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermission,
    AlterConfigOp,
    BrokerInfo,
    ClusterDescription,
    ClusterMetadata,
    ConfigEntry,
    ConfigResource,
    ConfigResourceType,
    ConfigSource,
    ConfigSynonym,
    CreatedTopic,
    ItemResult,
    LogDir,
    NewPartitions,
    NewTopic,
    PartitionInfo,
    PatternType,
    Reassignment,
    ReplicaLogDir,
    ResourceType,
    TopicInfo,
    TopicPartition,
)

ZERO_UUID = uuid.UUID(int=0)
WHOLE = "*"  # the key of calls whose result is one value for the whole request


def _ms(value: int) -> datetime.timedelta:
    return datetime.timedelta(milliseconds=value)


def throttle_seconds(response: Any) -> float:
    throttle = getattr(response, "throttle_time", None)
    if isinstance(throttle, datetime.timedelta):
        return throttle.total_seconds()
    return float(throttle or 0) / 1000.0


def _error(code: int, message: str | None = None) -> KafkaError | None:
    return KafkaError.from_code(int(code), message)


def _result(value: Any, code: int, message: str | None = None) -> ItemResult[Any]:
    error = _error(code, message)
    return ItemResult(None if error else value, error)


def missing(key: object) -> ItemResult[Any]:
    """A broker answer that left an item out: an error, never a silent drop."""
    return ItemResult(None, KafkaError(-1, "UNKNOWN_SERVER_ERROR", f"the broker returned no result for {key}", False))


def _uuid(value: Any) -> uuid.UUID | None:
    return None if value is None or value == ZERO_UUID else value


# --- Metadata / DescribeCluster ------------------------------------------------------


def encode_metadata(topics: Sequence[str] | None) -> dict[str, Any]:
    return {
        "topics": None if topics is None else [{"name": t, "topic_id": ZERO_UUID} for t in topics],
        "allow_auto_topic_creation": False,
        "include_cluster_authorized_operations": False,
        "include_topic_authorized_operations": False,
    }


def _partition_index(partition: PartitionInfo) -> int:
    return partition.partition


def _ints(values: Any) -> tuple[int, ...]:
    """Broker ids as a tuple of ints: kio already decodes them so (then as they are), else converted."""
    return values if type(values) is tuple else tuple(map(int, values))


def decode_metadata(response: Any) -> ClusterMetadata:
    brokers = {b.node_id: BrokerInfo(int(b.node_id), b.host, int(b.port), getattr(b, "rack", None)) for b in response.brokers}
    topics: dict[str, TopicInfo] = {}
    errors: dict[str, KafkaError] = {}
    for t in response.topics:
        error = _error(t.error_code)
        if error is not None and not t.partitions:
            errors[t.name] = error
            continue
        # a 5,000-topic answer has 15,000 partitions: one list comprehension, kio's tuples of ints kept
        # as they are, and sorted only when the broker did not list them in order (30 -> 23 ms)
        partitions = tuple([
            PartitionInfo(int(p.partition_index), int(p.leader_id), _ints(p.replica_nodes), _ints(p.isr_nodes),
                          _ints(getattr(p, "offline_replicas", ())), _error(p.error_code) if p.error_code else None)
            for p in t.partitions
        ])
        if any(a.partition > b.partition for a, b in zip(partitions, partitions[1:])):
            partitions = tuple(sorted(partitions, key=_partition_index))
        topics[t.name] = TopicInfo(t.name, _uuid(getattr(t, "topic_id", None)), partitions, bool(t.is_internal))
    return ClusterMetadata(
        cluster_id=getattr(response, "cluster_id", None),
        controller_id=int(getattr(response, "controller_id", -1)),
        brokers=brokers,
        topics=topics,
        topic_errors=errors,
    )


def decode_describe_cluster(response: Any) -> ItemResult[ClusterDescription]:
    brokers = {b.broker_id: BrokerInfo(int(b.broker_id), b.host, int(b.port), b.rack) for b in response.brokers}
    description = ClusterDescription(response.cluster_id, int(response.controller_id), brokers)
    return _result(description, response.error_code, response.error_message)


# --- Topics ----------------------------------------------------------------------------


def encode_create_topics(topics: Sequence[NewTopic], timeout_ms: int, validate_only: bool) -> dict[str, Any]:
    return {
        "topics": [
            {
                "name": t.name,
                "num_partitions": -1 if t.replica_assignment is not None else t.partitions,
                "replication_factor": -1 if t.replica_assignment is not None else t.replication_factor,
                "assignments": [
                    {"partition_index": i, "broker_ids": tuple(brokers)}
                    for i, brokers in enumerate(t.replica_assignment or ())
                ],
                "configs": [{"name": k, "value": v} for k, v in t.configs.items()],
            }
            for t in topics
        ],
        "timeout": _ms(timeout_ms),
        "validate_only": validate_only,
    }


def decode_create_topics(response: Any, requested: Mapping[str, NewTopic]) -> dict[str, ItemResult[CreatedTopic]]:
    out: dict[str, ItemResult[CreatedTopic]] = {}
    for t in response.topics:
        spec = requested.get(t.name)
        partitions = int(getattr(t, "num_partitions", -1))
        rf = int(getattr(t, "replication_factor", -1))
        if partitions < 0 and spec is not None:
            partitions = spec.partition_count
        if rf < 0 and spec is not None:
            rf = spec.replica_count
        value = CreatedTopic(t.name, _uuid(getattr(t, "topic_id", None)), partitions, rf)
        out[t.name] = _result(value, t.error_code, getattr(t, "error_message", None))
    return out


def encode_delete_topics(names: Sequence[str], timeout_ms: int) -> dict[str, Any]:
    return {
        "topic_names": list(names),
        "topics": [{"name": n, "topic_id": ZERO_UUID} for n in names],
        "timeout": _ms(timeout_ms),
    }


def decode_delete_topics(response: Any) -> dict[str, ItemResult[None]]:
    return {r.name: _result(None, r.error_code, getattr(r, "error_message", None)) for r in response.responses}


def encode_create_partitions(requests: Sequence[NewPartitions], timeout_ms: int, validate_only: bool) -> dict[str, Any]:
    return {
        "topics": [
            {
                "name": r.topic,
                "count": r.total_count,
                "assignments": None if r.assignments is None else [{"broker_ids": tuple(a)} for a in r.assignments],
            }
            for r in requests
        ],
        "timeout": _ms(timeout_ms),
        "validate_only": validate_only,
    }


def decode_create_partitions(response: Any) -> dict[str, ItemResult[None]]:
    return {r.name: _result(None, r.error_code, r.error_message) for r in response.results}


# --- Configs -----------------------------------------------------------------------------


def encode_describe_configs(
    resources: Sequence[ConfigResource],
    keys: Sequence[str] | Mapping[ConfigResource, Sequence[str] | None] | None,
    synonyms: bool,
) -> dict[str, Any]:
    """`keys`: the same keys for every resource, or keys per resource (None: every key)."""

    def wanted(resource: ConfigResource) -> tuple[str, ...] | None:
        chosen = keys.get(resource) if isinstance(keys, Mapping) else keys
        return None if chosen is None else tuple(chosen)

    return {
        "resources": [
            {"resource_type": int(r.type), "resource_name": r.name, "configuration_keys": wanted(r)}
            for r in resources
        ],
        "include_synonyms": synonyms,
        "include_documentation": False,
    }


_CONFIG_SOURCES = {int(source): source for source in ConfigSource}  # a dict look-up: an enum call costs ~1 µs
_RESOURCE_TYPES = {int(kind): kind for kind in ConfigResourceType}


def _source_of(code: int) -> ConfigSource:
    """The ConfigSource of a wire code; UNKNOWN for a code this client does not know (a newer broker's)."""
    return _CONFIG_SOURCES.get(int(code), ConfigSource.UNKNOWN)


def _config_source(entry: Any) -> ConfigSource:
    source = getattr(entry, "config_source", None)
    if source is None or int(source) < 0:
        # v0 had only is_default; treat as default
        return ConfigSource.DEFAULT_CONFIG if getattr(entry, "is_default", False) else ConfigSource.UNKNOWN
    return _source_of(source)


def _synonyms(entry: Any, hidden: bool) -> tuple[ConfigSynonym, ...]:
    found = getattr(entry, "synonyms", None)  # none unless asked for (include_synonyms)
    if not found:
        return ()
    return tuple([ConfigSynonym(s.name, None if hidden else s.value, _source_of(s.source)) for s in found])


def decode_describe_configs(response: Any) -> dict[ConfigResource, ItemResult[dict[str, ConfigEntry]]]:
    # 5,000 topics x 2 keys: 30.5 -> 19.0 ms with the entries built positionally, the enums looked up in
    # dicts and no synonyms generator per entry (docs/benchmarks.md, "What a user types")
    out: dict[ConfigResource, ItemResult[dict[str, ConfigEntry]]] = {}
    for r in response.results:
        kind = _RESOURCE_TYPES.get(int(r.resource_type))
        key = ConfigResource(ConfigResourceType(int(r.resource_type)) if kind is None else kind, r.resource_name)
        entries: dict[str, ConfigEntry] = {}
        for c in r.configs:
            hidden = bool(c.is_sensitive)
            entries[c.name] = ConfigEntry(c.name, None if hidden else c.value, _config_source(c), bool(c.read_only),
                                          hidden, _synonyms(c, hidden), getattr(c, "documentation", None))
        out[key] = _result(entries, r.error_code, r.error_message)
    return out


def encode_incremental_alter_configs(
    changes: Mapping[ConfigResource, Sequence[AlterConfigOp]], validate_only: bool
) -> dict[str, Any]:
    return {
        "resources": [
            {
                "resource_type": int(resource.type),
                "resource_name": resource.name,
                "configs": [{"name": op.name, "config_operation": int(op.op), "value": op.value} for op in ops],
            }
            for resource, ops in changes.items()
        ],
        "validate_only": validate_only,
    }


def decode_incremental_alter_configs(response: Any) -> dict[ConfigResource, ItemResult[None]]:
    return {
        ConfigResource(ConfigResourceType(int(r.resource_type)), r.resource_name): _result(None, r.error_code, r.error_message)
        for r in response.responses
    }


# --- ACLs ------------------------------------------------------------------------------------


def encode_create_acls(bindings: Sequence[AclBinding]) -> dict[str, Any]:
    return {
        "creations": [
            {
                "resource_type": int(b.resource_type),
                "resource_name": b.resource_name,
                "resource_pattern_type": int(b.pattern_type),
                "principal": b.principal,
                "host": b.host,
                "operation": int(b.operation),
                "permission_type": int(b.permission),
            }
            for b in bindings
        ]
    }


def decode_create_acls(response: Any, bindings: Sequence[AclBinding]) -> dict[AclBinding, ItemResult[None]]:
    """CreateAcls answers positionally, one result per creation."""
    out: dict[AclBinding, ItemResult[None]] = {}
    for binding, result in zip(bindings, response.results):
        out[binding] = _result(None, result.error_code, result.error_message)
    return out


def _filter_fields(f: AclBindingFilter) -> dict[str, Any]:
    return {
        "resource_type_filter": int(f.resource_type),
        "resource_name_filter": f.resource_name,
        "pattern_type_filter": int(f.pattern_type),
        "principal_filter": f.principal,
        "host_filter": f.host,
        "operation": int(f.operation),
        "permission_type": int(f.permission),
    }


def encode_describe_acls(f: AclBindingFilter) -> dict[str, Any]:
    return _filter_fields(f)


def _binding(resource_type: int, name: str, pattern: int, acl: Any) -> AclBinding:
    return AclBinding(
        ResourceType(int(resource_type)),
        name,
        PatternType(int(pattern)),
        acl.principal,
        acl.host,
        AclOperation(int(acl.operation)),
        AclPermission(int(acl.permission_type)),
    )


def decode_describe_acls(response: Any) -> ItemResult[tuple[AclBinding, ...]]:
    bindings = tuple(
        _binding(r.resource_type, r.resource_name, getattr(r, "pattern_type", PatternType.LITERAL), acl)
        for r in response.resources
        for acl in r.acls
    )
    return _result(bindings, response.error_code, response.error_message)


def encode_delete_acls(filters: Sequence[AclBindingFilter]) -> dict[str, Any]:
    return {"filters": [_filter_fields(f) for f in filters]}


def decode_delete_acls(
    response: Any, filters: Sequence[AclBindingFilter]
) -> dict[AclBindingFilter, ItemResult[tuple[AclBinding, ...]]]:
    out: dict[AclBindingFilter, ItemResult[tuple[AclBinding, ...]]] = {}
    for f, result in zip(filters, response.filter_results):
        error = _error(result.error_code, result.error_message)
        if error is None:
            # A matching binding that failed to delete makes the filter fail.
            for m in result.matching_acls:
                error = error or _error(m.error_code, m.error_message)
        deleted = tuple(
            _binding(m.resource_type, m.resource_name, getattr(m, "pattern_type", PatternType.LITERAL), m)
            for m in result.matching_acls
            if int(m.error_code) == 0
        )
        out[f] = ItemResult(None, error) if error else ItemResult(deleted, None)
    return out


# --- Reassignments, elections, log dirs ------------------------------------------------------


def _by_topic(partitions: Sequence[TopicPartition]) -> dict[str, list[int]]:
    grouped: dict[str, list[int]] = {}
    for tp in partitions:
        grouped.setdefault(tp.topic, []).append(tp.partition)
    return grouped


def encode_alter_reassignments(targets: Mapping[TopicPartition, tuple[int, ...] | None], timeout_ms: int) -> dict[str, Any]:
    topics: dict[str, list[dict[str, Any]]] = {}
    for tp, replicas in targets.items():
        topics.setdefault(tp.topic, []).append(
            {"partition_index": tp.partition, "replicas": None if replicas is None else tuple(replicas)}
        )
    return {"timeout": _ms(timeout_ms), "topics": [{"name": n, "partitions": p} for n, p in topics.items()]}


def decode_alter_reassignments(response: Any, requested: Iterable[TopicPartition] = ()) -> dict[TopicPartition, ItemResult[None]]:
    """Per-partition results; a top-level error (NOT_CONTROLLER: Kafka then lists no partition)
    is every requested partition's, so that it is retried like any other item error."""
    top = _error(response.error_code, response.error_message)
    out: dict[TopicPartition, ItemResult[None]] = {tp: ItemResult(None, top) for tp in requested} if top else {}
    for t in response.responses:
        for p in t.partitions:
            tp = TopicPartition(t.name, int(p.partition_index))
            out[tp] = ItemResult(None, top) if top else _result(None, p.error_code, p.error_message)
    return out


def encode_list_reassignments(partitions: Sequence[TopicPartition] | None, timeout_ms: int) -> dict[str, Any]:
    topics = None
    if partitions is not None:
        topics = [{"name": n, "partition_indexes": tuple(p)} for n, p in _by_topic(partitions).items()]
    return {"timeout": _ms(timeout_ms), "topics": topics}


def decode_list_reassignments(response: Any) -> ItemResult[dict[TopicPartition, Reassignment]]:
    found = {
        TopicPartition(t.name, int(p.partition_index)): Reassignment(
            TopicPartition(t.name, int(p.partition_index)),
            tuple(int(r) for r in p.replicas),
            tuple(int(r) for r in p.adding_replicas),
            tuple(int(r) for r in p.removing_replicas),
        )
        for t in response.topics
        for p in t.partitions
    }
    return _result(found, response.error_code, response.error_message)


def encode_elect_leaders(partitions: Sequence[TopicPartition] | None, timeout_ms: int) -> dict[str, Any]:
    return {
        "election_type": 0,  # PREFERRED
        "topic_partitions": None
        if partitions is None
        else [{"topic": t, "partitions": tuple(p)} for t, p in _by_topic(partitions).items()],
        "timeout": _ms(timeout_ms),
    }


def elect_leaders_error(response: Any) -> KafkaError | None:
    """The top-level error of an ElectLeaders answer (NOT_CONTROLLER...), if any."""
    return _error(getattr(response, "error_code", 0))


def decode_elect_leaders(response: Any, requested: Iterable[TopicPartition] = ()) -> dict[TopicPartition, ItemResult[None]]:
    top = elect_leaders_error(response)
    out: dict[TopicPartition, ItemResult[None]] = {tp: ItemResult(None, top) for tp in requested} if top else {}
    for t in response.replica_election_results:
        for p in t.partition_result:
            tp = TopicPartition(t.topic, int(p.partition_id))
            out[tp] = ItemResult(None, top) if top else _result(None, p.error_code, p.error_message)
    return out


def encode_describe_log_dirs(partitions: Sequence[TopicPartition] | None) -> dict[str, Any]:
    if partitions is None:
        return {"topics": None}
    return {"topics": [{"topic": t, "partitions": tuple(p)} for t, p in _by_topic(partitions).items()]}


def decode_describe_log_dirs(response: Any) -> ItemResult[tuple[LogDir, ...]]:
    dirs = tuple(
        LogDir(
            path=d.log_dir,
            error=_error(d.error_code),
            replicas=tuple(
                ReplicaLogDir(TopicPartition(t.name, int(p.partition_index)), int(p.partition_size), int(p.offset_lag), bool(p.is_future_key))
                for t in d.topics
                for p in t.partitions
            ),
            total_bytes=int(getattr(d, "total_bytes", -1)),
            usable_bytes=int(getattr(d, "usable_bytes", -1)),
        )
        for d in response.results
    )
    return _result(dirs, getattr(response, "error_code", 0))
