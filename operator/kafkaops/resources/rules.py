"""Semantic rules for one document at a time (what a JSON Schema cannot say).

Each check reads the raw manifest defensively — a document that also breaks
the schema still gets every rule that can be applied — and returns Findings
with the field path and a CamelCase rule name. Rules that need several
documents (duplicates, clusterRef) live in set_rules.py.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

from kafkaops.resources.acl_rules import (  # noqa: F401  (the rule names are part of this module's vocabulary)
    DUPLICATE_ACL_BINDING,
    INVALID_ACL_HOST,
    INVALID_CLUSTER_RESOURCE_NAME,
    INVALID_PRINCIPAL,
    OPERATION_NOT_VALID,
    REDUNDANT_ACL_OPERATION,
    WILDCARD_PREFIXED,
    check_acl_rules,
)
from kafkaops.resources.broker_configs import (
    BROKER_CONFIGS,
    is_broker_config_name,
    is_known_broker_config,
    suggest_broker_config,
)
from kafkaops.resources.config_types import INT_MAX, ConfigType, normalise_value, suggest
from kafkaops.resources.durations import parse_duration
from kafkaops.resources.issues import Finding, error, join_path, warning
from kafkaops.resources.kinds import (
    KAFKA_ACL,
    KAFKA_BROKER_CONFIG,
    KAFKA_CLIENT_QUOTA,
    KAFKA_CLUSTER,
    KAFKA_TOPIC,
    KAFKA_USER,
)
from kafkaops.resources.topic_configs import BROKER_SYNONYMS, TOPIC_CONFIGS, suggest_topic_config
from kafkaops.resources.user_rules import check_client_quota, check_user

# Rule names (also usable as Kubernetes condition reasons).
INVALID_RESOURCE_NAME = "InvalidResourceName"
INVALID_NAMESPACE = "InvalidNamespace"
INVALID_BOOTSTRAP_SERVER = "InvalidBootstrapServer"
INVALID_DURATION = "InvalidDuration"
INVALID_MAX_DELETIONS = "InvalidMaxDeletions"
INVALID_SASL_MECHANISM = "InvalidSaslMechanism"
INVALID_REPLICATION_THROTTLE = "InvalidReplicationThrottle"
INVALID_TOPIC_PREFIX = "InvalidTopicPrefix"
INVALID_TOPIC_NAME = "InvalidTopicName"
RESERVED_TOPIC_NAME = "ReservedTopicName"
INVALID_PARTITION_COUNT = "InvalidPartitionCount"
INVALID_REPLICATION_FACTOR = "InvalidReplicationFactor"
REPLICA_ASSIGNMENT_CONFLICT = "ReplicaAssignmentConflict"
EMPTY_REPLICA_ASSIGNMENT = "EmptyReplicaAssignment"
UNEVEN_REPLICA_ASSIGNMENT = "UnevenReplicaAssignment"
DUPLICATE_REPLICA = "DuplicateReplica"
INVALID_BROKER_ID = "InvalidBrokerId"
UNKNOWN_CONFIG_KEY = "UnknownConfigKey"
UNQUOTED_CONFIG_VALUE = "UnquotedConfigValue"
MIN_INSYNC_ABOVE_RF = "MinInsyncAboveReplicationFactor"
COMPACTION_LAG_CONFLICT = "CompactionLagConflict"
REMOTE_STORAGE_REQUIRES_DELETE = "RemoteStorageRequiresDeletePolicy"
LOCAL_RETENTION_EXCEEDS_RETENTION = "LocalRetentionExceedsRetention"
INVALID_BROKER_CONFIG_KEY = "InvalidBrokerConfigKey"
UNKNOWN_BROKER_CONFIG_KEY = "UnknownBrokerConfigKey"

MAX_TOPIC_NAME_LENGTH = 249
MAX_REPLICATION_FACTOR = 32767
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")

TOPIC_CHARS = re.compile(r"^[a-zA-Z0-9._-]+$")
_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS_SUBDOMAIN = re.compile(rf"^{_DNS_LABEL}(\.{_DNS_LABEL})*$")
DNS_LABEL_RE = re.compile(rf"^{_DNS_LABEL}$")
_HOST = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*$")
_TOPIC_TO_BROKER = {topic_key: broker_key for broker_key, topic_key in BROKER_SYNONYMS.items()
                    if broker_key.startswith("log.") and broker_key in BROKER_CONFIGS}
_TOPIC_TO_BROKER["max.message.bytes"] = "message.max.bytes"


def check_rules(kind: str, body: Mapping[str, Any]) -> list[Finding]:
    """Every semantic finding for one document of `kind`."""
    findings = check_metadata(body)
    spec = body.get("spec")
    check = _BY_KIND.get(kind)
    if check is not None and isinstance(spec, Mapping):
        findings.extend(check(spec, body))
    return findings


# --- helpers ------------------------------------------------------------------


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _scalar(value: Any) -> str | None:
    """A config value as Kafka receives it; None for a value the schema rejects."""
    return normalise_value(value) if isinstance(value, (str, int, float, bool)) else None


def topic_name_problem(name: str) -> str | None:
    """Why Kafka would refuse `name` as a topic name, or None."""
    if name in (".", ".."):
        return f"{name!r} is not allowed as a topic name"
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        return f"topic name is {len(name)} characters long; Kafka allows at most {MAX_TOPIC_NAME_LENGTH}"
    if not name:
        return "topic name is empty"
    if not TOPIC_CHARS.match(name):
        bad = sorted({c for c in name if not re.match(r"[a-zA-Z0-9._-]", c)})
        return f"topic name {name!r} contains {''.join(bad)!r}; only ASCII letters, digits, '.', '_' and '-' are allowed"
    return None


def collision_key(topic_name: str) -> str:
    """Kafka's metric names treat '.' and '_' alike: names equal under this key collide."""
    return topic_name.replace(".", "_")


def bootstrap_problem(entry: str) -> str | None:
    """Why `entry` is not host:port (port 1..65535), or None."""
    if "://" in entry:
        return f"{entry!r} has a scheme; give host:port (the listener's security comes from tls/sasl)"
    if "," in entry:
        return f"{entry!r} holds several servers; give one host:port per list item"
    host, sep, port = entry.rpartition(":")
    if not sep or not host:
        return f"{entry!r} is not host:port"
    if host.startswith("[") and host.endswith("]"):
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            return f"{host!r} is not an IPv6 address"
    elif ":" in host:
        return f"{entry!r}: write an IPv6 address in brackets, as [addr]:port"
    elif not _HOST.match(host):
        return f"{host!r} is not a valid host name or address"
    if not port.isdigit() or not 1 <= int(port) <= 65535:
        return f"port {port!r} is not a number from 1 to 65535"
    return None


# --- metadata -----------------------------------------------------------------


def check_metadata(body: Mapping[str, Any]) -> list[Finding]:
    findings: list[Finding] = []
    metadata = body.get("metadata")
    if not isinstance(metadata, Mapping):
        return findings
    name = _str(metadata.get("name"))
    if name and (len(name) > 253 or not DNS_SUBDOMAIN.match(name)):
        findings.append(error("metadata.name", f"{name!r} is not a valid Kubernetes name (lowercase letters, digits, "
                                               "'-' and '.', at most 253); set spec.topicName for the Kafka name",
                              INVALID_RESOURCE_NAME))
    namespace = _str(metadata.get("namespace"))
    if namespace and (len(namespace) > 63 or not DNS_LABEL_RE.match(namespace)):
        findings.append(error("metadata.namespace", f"{namespace!r} is not a valid Kubernetes namespace name",
                              INVALID_NAMESPACE))
    return findings


# --- KafkaCluster ---------------------------------------------------------------


def check_cluster(spec: Mapping[str, Any], body: Mapping[str, Any]) -> list[Finding]:
    findings: list[Finding] = []
    servers = spec.get("bootstrapServers")
    if isinstance(servers, list):
        for i, entry in enumerate(servers):
            if isinstance(entry, str) and (problem := bootstrap_problem(entry)):
                findings.append(error(join_path("spec.bootstrapServers", i), problem, INVALID_BOOTSTRAP_SERVER))
    interval = spec.get("resyncInterval")
    if isinstance(interval, str):
        try:
            parse_duration(interval)
        except ValueError as exc:
            findings.append(error("spec.resyncInterval", str(exc), INVALID_DURATION))
    deletion = spec.get("topicDeletion")
    if isinstance(deletion, Mapping):
        cap = _int(deletion.get("maxDeletionsPerReconcile"))
        if cap is not None and cap < 0:
            findings.append(error("spec.topicDeletion.maxDeletionsPerReconcile",
                                  f"{cap} is negative; use 0 to forbid deletions", INVALID_MAX_DELETIONS))
    sasl = spec.get("sasl")
    if isinstance(sasl, Mapping):
        mechanism = _str(sasl.get("mechanism"))
        if mechanism is not None and mechanism not in SASL_MECHANISMS:
            close = suggest(mechanism.upper(), SASL_MECHANISMS)
            hint = f"; did you mean {close}?" if close else ""
            findings.append(error("spec.sasl.mechanism", f"{mechanism!r} is not one of {', '.join(SASL_MECHANISMS)}{hint}",
                                  INVALID_SASL_MECHANISM))
    throttle = _int(spec.get("replicationThrottle"))
    if throttle is not None and throttle < 1:
        findings.append(error("spec.replicationThrottle", f"{throttle} bytes/s: a throttle must be at least 1",
                              INVALID_REPLICATION_THROTTLE))
    allowed = spec.get("allowedNamespaces")
    if isinstance(allowed, list):
        for i, item in enumerate(allowed):
            if not isinstance(item, Mapping):
                continue
            namespace = _str(item.get("namespace"))
            if namespace and not DNS_LABEL_RE.match(namespace):
                findings.append(error(join_path("spec.allowedNamespaces", i, "namespace"),
                                      f"{namespace!r} is not a valid namespace name", INVALID_NAMESPACE))
            prefixes = item.get("topicPrefixes")
            if isinstance(prefixes, list):
                for j, prefix in enumerate(prefixes):
                    if isinstance(prefix, str) and prefix and not TOPIC_CHARS.match(prefix):
                        findings.append(error(join_path("spec.allowedNamespaces", i, "topicPrefixes", j),
                                              f"{prefix!r} cannot start a topic name", INVALID_TOPIC_PREFIX))
    return findings


# --- KafkaTopic -----------------------------------------------------------------


def effective_topic_name(body: Mapping[str, Any]) -> tuple[str | None, str]:
    """(topic name, the field it comes from): spec.topicName, else metadata.name."""
    spec = body.get("spec") if isinstance(body.get("spec"), Mapping) else {}
    if isinstance(spec.get("topicName"), str):
        return spec["topicName"], "spec.topicName"
    metadata = body.get("metadata") if isinstance(body.get("metadata"), Mapping) else {}
    return _str(metadata.get("name")), "metadata.name"


def check_topic(spec: Mapping[str, Any], body: Mapping[str, Any]) -> list[Finding]:
    findings: list[Finding] = []
    name, name_path = effective_topic_name(body)
    if name is not None:
        if problem := topic_name_problem(name):
            findings.append(error(name_path, problem, INVALID_TOPIC_NAME))
        elif name.startswith("__"):
            findings.append(warning(name_path, f"{name!r}: names starting with '__' are for Kafka's internal topics",
                                    RESERVED_TOPIC_NAME))

    partitions = _int(spec.get("partitions"))
    if partitions is not None and not 1 <= partitions <= INT_MAX:
        findings.append(error("spec.partitions", f"{partitions} partitions: a topic needs at least 1"
                              if partitions < 1 else f"{partitions} partitions is more than Kafka can hold",
                              INVALID_PARTITION_COUNT))
    rf = _int(spec.get("replicationFactor"))
    if rf is not None and not 1 <= rf <= MAX_REPLICATION_FACTOR:
        findings.append(error("spec.replicationFactor",
                              f"replication factor {rf} is outside 1..{MAX_REPLICATION_FACTOR}",
                              INVALID_REPLICATION_FACTOR))

    assignment = spec.get("replicaAssignment")
    replicas_per_partition: int | None = rf if rf is not None and rf >= 1 else None
    if assignment is not None:
        conflicting = [key for key in ("partitions", "replicationFactor") if key in spec]
        if conflicting:
            findings.append(error("spec.replicaAssignment",
                                  f"replicaAssignment cannot be combined with {' and '.join(conflicting)}: it already "
                                  "fixes the partitions and their replicas", REPLICA_ASSIGNMENT_CONFLICT))
        if isinstance(assignment, list):
            findings.extend(_check_assignment(assignment))
            if assignment and isinstance(assignment[0], list) and assignment[0]:
                replicas_per_partition = len(assignment[0])

    config = spec.get("config")
    if isinstance(config, Mapping):
        findings.extend(_check_topic_config(config, replicas_per_partition))
    return findings


def _check_assignment(assignment: list[Any]) -> list[Finding]:
    findings: list[Finding] = []
    if not assignment:
        return [error("spec.replicaAssignment", "replicaAssignment needs at least one partition", EMPTY_REPLICA_ASSIGNMENT)]
    expected: int | None = None
    for i, replicas in enumerate(assignment):
        path = join_path("spec.replicaAssignment", i)
        if not isinstance(replicas, list):
            continue
        if not replicas:
            findings.append(error(path, f"partition {i} has no replicas", EMPTY_REPLICA_ASSIGNMENT))
            continue
        if expected is None:
            expected = len(replicas)
        elif len(replicas) != expected:
            findings.append(error(path, f"partition {i} has {_replicas(len(replicas))} but partition 0 has {expected}: "
                                        "every partition needs the same number", UNEVEN_REPLICA_ASSIGNMENT))
        seen: set[int] = set()
        for j, broker in enumerate(replicas):
            broker_id = _int(broker)
            if broker_id is None:
                continue
            if broker_id < 0:
                findings.append(error(join_path(path, j), f"broker id {broker_id} is negative", INVALID_BROKER_ID))
            elif broker_id in seen:
                findings.append(error(join_path(path, j), f"broker {broker_id} appears twice in partition {i}",
                                      DUPLICATE_REPLICA))
            seen.add(broker_id)
    return findings


def _replicas(count: int) -> str:
    return "1 replica" if count == 1 else f"{count} replicas"


def _check_topic_config(config: Mapping[Any, Any], replicas: int | None) -> list[Finding]:
    findings: list[Finding] = []
    values: dict[str, str] = {}
    for raw_key, raw_value in config.items():
        key = str(raw_key)
        spec = TOPIC_CONFIGS.get(key)
        if spec is None:
            close = suggest_topic_config(key)
            hint = f"; did you mean {close}?" if close else ""
            findings.append(error(join_path("spec.config", key), f"{key!r} is not a Kafka topic config{hint}",
                                  UNKNOWN_CONFIG_KEY))
            continue
        value = _scalar(raw_value)
        if value is None:
            continue  # the schema reports it
        values[key] = value
        findings.extend(_topic_config_value_findings(key, value))
        if not isinstance(raw_value, str) and spec.type in (ConfigType.STRING, ConfigType.LIST):
            path = join_path("spec.config", key)
            findings.append(warning(path, f"unquoted {type(raw_value).__name__} {raw_value!r} becomes {value!r}; "
                                          "quote the value to say exactly what Kafka should get", UNQUOTED_CONFIG_VALUE))
    findings.extend(_check_config_combinations(values, replicas))
    return findings


@lru_cache(maxsize=8192)
def _topic_config_value_findings(key: str, value: str) -> tuple[Finding, ...]:
    """TOPIC_CONFIGS[key].check(value), remembered: a fleet's topics repeat their values
    (`delete`, `2`, a week of retention), and the check depends on the key and value alone."""
    return tuple(TOPIC_CONFIGS[key].check(value, join_path("spec.config", key)))


def _valid_number(values: Mapping[str, str], key: str) -> int | None:
    value = values.get(key)
    if value is None:
        return None
    try:
        return int(value.strip())
    except ValueError:
        return None


# The fleet's JVM reader (fleet/jvm/ManifestRows.java) repeats these rules; a new rule here names its
# keys in fleet/jvm_rows.py (a test reads this function for the keys it uses).
def _check_config_combinations(values: Mapping[str, str], replicas: int | None) -> list[Finding]:
    findings: list[Finding] = []
    min_isr = _valid_number(values, "min.insync.replicas")
    if min_isr is not None and replicas is not None and min_isr > replicas:
        findings.append(error("spec.config.min.insync.replicas",
                              f"min.insync.replicas {min_isr} is above the {replicas} replicas per partition: "
                              "producers with acks=all could never write", MIN_INSYNC_ABOVE_RF))
    min_lag = _valid_number(values, "min.compaction.lag.ms")
    max_lag = _valid_number(values, "max.compaction.lag.ms")
    if min_lag is not None and max_lag is not None and min_lag > max_lag:
        findings.append(error("spec.config.min.compaction.lag.ms",
                              f"min.compaction.lag.ms {min_lag} is above max.compaction.lag.ms {max_lag}",
                              COMPACTION_LAG_CONFLICT))
    if values.get("remote.storage.enable", "").strip().lower() == "true":
        policies = {p.strip() for p in values.get("cleanup.policy", "delete").split(",") if p.strip()}
        if "compact" in policies:
            findings.append(error("spec.config.remote.storage.enable",
                                  "tiered storage (remote.storage.enable) needs cleanup.policy=delete",
                                  REMOTE_STORAGE_REQUIRES_DELETE))
        for local_key, total_key, unlimited in (("local.retention.ms", "retention.ms", -1),
                                                ("local.retention.bytes", "retention.bytes", -1)):
            local, total = _valid_number(values, local_key), _valid_number(values, total_key)
            if local is not None and total is not None and total != unlimited and local != -2:
                if local == -1 or local > total:
                    findings.append(error(join_path("spec.config", local_key),
                                          f"{local_key} {local} must not exceed {total_key} {total}",
                                          LOCAL_RETENTION_EXCEEDS_RETENTION))
    return findings


# --- KafkaAcl -----------------------------------------------------------------


def check_acl(spec: Mapping[str, Any], body: Mapping[str, Any]) -> list[Finding]:
    return check_acl_rules(spec, "spec.principal", "spec.acls")


# --- KafkaBrokerConfig ------------------------------------------------------------


def check_broker_config(spec: Mapping[str, Any], body: Mapping[str, Any]) -> list[Finding]:
    findings: list[Finding] = []
    broker_id = _int(spec.get("brokerId"))
    if broker_id is not None and broker_id < 0:
        findings.append(error("spec.brokerId", f"broker id {broker_id} is negative; omit brokerId for the "
                                               "cluster-wide default", INVALID_BROKER_ID))
    config = spec.get("config")
    if not isinstance(config, Mapping):
        return findings
    for raw_key, raw_value in config.items():
        key = str(raw_key)
        path = join_path("spec.config", key)
        if not is_broker_config_name(key):
            findings.append(error(path, f"{key!r} does not look like a broker config name (dotted lowercase words)",
                                  INVALID_BROKER_CONFIG_KEY))
            continue
        if not is_known_broker_config(key):
            close = _TOPIC_TO_BROKER.get(key) or suggest_broker_config(key)
            hint = f"; did you mean {close}?" if close else ""
            findings.append(warning(path, f"{key!r} is not a dynamic broker config kafkaops knows{hint}",
                                    UNKNOWN_BROKER_CONFIG_KEY))
            continue
        spec_ = BROKER_CONFIGS.get(key)
        value = _scalar(raw_value)
        if spec_ is not None and value is not None:
            findings.extend(spec_.check(value, path))
    return findings


_BY_KIND: dict[str, Callable[[Mapping[str, Any], Mapping[str, Any]], list[Finding]]] = {
    KAFKA_CLUSTER: check_cluster,
    KAFKA_TOPIC: check_topic,
    KAFKA_ACL: check_acl,
    KAFKA_BROKER_CONFIG: check_broker_config,
    KAFKA_USER: check_user,
    KAFKA_CLIENT_QUOTA: check_client_quota,
}
