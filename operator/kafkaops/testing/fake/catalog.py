"""The config catalog of the fake cluster test double: Kafka's topic and broker
configs with their types, defaults, constraints and synonyms, and Kafka's
value validation (with Kafka's error messages).

A subset of Kafka 3.x, large enough that a reconciler meets the real shapes:
typed values, LIST configs for APPEND/SUBTRACT, sensitive values, read-only
broker configs and topic -> broker synonyms.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping

from kafkaops.frozen import frozen

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1


class ConfigType(enum.IntEnum):
    """DescribeConfigs v3+ config_type."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


from kafkaops.kafka.models import ConfigSource  # noqa: E402  (DescribeConfigs config_source values)


class Dynamic(enum.Enum):
    """How a broker config may be changed at runtime."""

    READ_ONLY = "read-only"
    PER_BROKER = "per-broker"
    CLUSTER_WIDE = "cluster-wide"


@frozen
class ConfigSpec:
    """One config key: type, default (as Kafka renders it) and constraints."""

    name: str
    type: ConfigType
    default: str | None
    valid: tuple[str, ...] | None = None
    minimum: float | None = None
    maximum: float | None = None
    synonym: str | None = None  # topic config -> the broker config it defaults to
    dynamic: Dynamic = Dynamic.CLUSTER_WIDE
    doc: str = ""

    @property
    def sensitive(self) -> bool:
        return self.type is ConfigType.PASSWORD

    @property
    def read_only(self) -> bool:
        return self.dynamic is Dynamic.READ_ONLY


def _t(name: str, type_: ConfigType, default: str | None, synonym: str | None, **kw: object) -> ConfigSpec:
    return ConfigSpec(name, type_, default, synonym=synonym, doc=f"The {name} topic config.", **kw)  # type: ignore[arg-type]


_B, _I, _L, _D, _S, _LIST = (
    ConfigType.BOOLEAN,
    ConfigType.INT,
    ConfigType.LONG,
    ConfigType.DOUBLE,
    ConfigType.STRING,
    ConfigType.LIST,
)
_COMPRESSION = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")

TOPIC_CONFIGS: Mapping[str, ConfigSpec] = {
    s.name: s
    for s in (
        _t("cleanup.policy", _LIST, "delete", "log.cleanup.policy", valid=("compact", "delete")),
        _t("compression.type", _S, "producer", "compression.type", valid=_COMPRESSION),
        _t("compression.gzip.level", _I, "-1", "compression.gzip.level", minimum=-1, maximum=9),
        _t("compression.lz4.level", _I, "9", "compression.lz4.level", minimum=1, maximum=17),
        _t("compression.zstd.level", _I, "3", "compression.zstd.level", minimum=-131072, maximum=22),
        _t("delete.retention.ms", _L, "86400000", "log.cleaner.delete.retention.ms", minimum=0),
        _t("file.delete.delay.ms", _L, "60000", "log.segment.delete.delay.ms", minimum=0),
        _t("flush.messages", _L, str(LONG_MAX), "log.flush.interval.messages", minimum=1),
        _t("flush.ms", _L, str(LONG_MAX), "log.flush.interval.ms", minimum=0),
        _t("follower.replication.throttled.replicas", _LIST, "", None),
        _t("index.interval.bytes", _I, "4096", "log.index.interval.bytes", minimum=0),
        _t("leader.replication.throttled.replicas", _LIST, "", None),
        _t("local.retention.bytes", _L, "-2", "log.local.retention.bytes", minimum=-2),
        _t("local.retention.ms", _L, "-2", "log.local.retention.ms", minimum=-2),
        _t("max.compaction.lag.ms", _L, str(LONG_MAX), "log.cleaner.max.compaction.lag.ms", minimum=1),
        _t("max.message.bytes", _I, "1048588", "message.max.bytes", minimum=0),
        _t("message.downconversion.enable", _B, "true", "log.message.downconversion.enable"),
        _t("message.format.version", _S, "3.0-IV1", "log.message.format.version"),
        _t("message.timestamp.after.max.ms", _L, str(LONG_MAX), "log.message.timestamp.after.max.ms", minimum=0),
        _t("message.timestamp.before.max.ms", _L, str(LONG_MAX), "log.message.timestamp.before.max.ms", minimum=0),
        _t(
            "message.timestamp.difference.max.ms",
            _L,
            str(LONG_MAX),
            "log.message.timestamp.difference.max.ms",
            minimum=0,
        ),
        _t(
            "message.timestamp.type",
            _S,
            "CreateTime",
            "log.message.timestamp.type",
            valid=("CreateTime", "LogAppendTime"),
        ),
        _t("min.cleanable.dirty.ratio", _D, "0.5", "log.cleaner.min.cleanable.ratio", minimum=0, maximum=1),
        _t("min.compaction.lag.ms", _L, "0", "log.cleaner.min.compaction.lag.ms", minimum=0),
        _t("min.insync.replicas", _I, "1", "min.insync.replicas", minimum=1),
        _t("preallocate", _B, "false", "log.preallocate"),
        _t("remote.storage.enable", _B, "false", None),
        _t("remote.log.copy.disable", _B, "false", None),
        _t("remote.log.delete.on.disable", _B, "false", None),
        _t("retention.bytes", _L, "-1", "log.retention.bytes"),
        _t("retention.ms", _L, "604800000", "log.retention.ms", minimum=-1),
        _t("segment.bytes", _I, "1073741824", "log.segment.bytes", minimum=14),
        _t("segment.index.bytes", _I, "10485760", "log.index.size.max.bytes", minimum=4),
        _t("segment.jitter.ms", _L, "0", "log.roll.jitter.ms", minimum=0),
        _t("segment.ms", _L, "604800000", "log.roll.ms", minimum=1),
        _t("unclean.leader.election.enable", _B, "false", "unclean.leader.election.enable"),
    )
}

THROTTLED_REPLICA_CONFIGS = frozenset(
    {"leader.replication.throttled.replicas", "follower.replication.throttled.replicas"}
)


def _broker_synonyms() -> list[ConfigSpec]:
    """Each topic config's broker synonym, same type and default, cluster-wide dynamic."""
    return [
        ConfigSpec(
            spec.synonym,
            spec.type,
            spec.default,
            valid=spec.valid,
            minimum=spec.minimum,
            maximum=spec.maximum,
            dynamic=Dynamic.CLUSTER_WIDE,
            doc=f"The default {spec.name} for topics.",
        )
        for spec in TOPIC_CONFIGS.values()
        if spec.synonym is not None
    ]


def _b(name: str, type_: ConfigType, default: str | None, dynamic: Dynamic, **kw: object) -> ConfigSpec:
    return ConfigSpec(name, type_, default, dynamic=dynamic, doc=f"The {name} broker config.", **kw)  # type: ignore[arg-type]


_RO, _PB, _CW = Dynamic.READ_ONLY, Dynamic.PER_BROKER, Dynamic.CLUSTER_WIDE
_PW = ConfigType.PASSWORD

BROKER_CONFIGS: Mapping[str, ConfigSpec] = {
    s.name: s
    for s in (
        *_broker_synonyms(),
        _b("broker.id", _I, "-1", _RO),
        _b("log.dirs", _S, None, _RO),
        _b("num.partitions", _I, "1", _RO, minimum=1),
        _b("default.replication.factor", _I, "1", _RO),
        _b("auto.create.topics.enable", _B, "true", _RO),
        _b("delete.topic.enable", _B, "true", _RO),
        _b("leader.replication.throttled.rate", _L, str(LONG_MAX), _CW, minimum=0),
        _b("follower.replication.throttled.rate", _L, str(LONG_MAX), _CW, minimum=0),
        _b("replica.alter.log.dirs.io.max.bytes.per.second", _L, str(LONG_MAX), _CW, minimum=0),
        _b("log.cleaner.threads", _I, "1", _CW, minimum=0),
        _b("log.cleaner.io.max.bytes.per.second", _D, "1.7976931348623157E308", _CW),
        _b("log.cleaner.dedupe.buffer.size", _L, "134217728", _CW),
        _b("log.cleaner.backoff.ms", _L, "15000", _CW, minimum=0),
        _b("max.connections", _I, "2147483647", _CW, minimum=0),
        _b("max.connections.per.ip", _I, "2147483647", _CW, minimum=0),
        _b("num.io.threads", _I, "8", _CW, minimum=1),
        _b("num.network.threads", _I, "3", _CW, minimum=1),
        _b("num.replica.fetchers", _I, "1", _CW),
        _b("background.threads", _I, "10", _CW, minimum=1),
        _b("ssl.keystore.password", _PW, None, _PB),
        _b("ssl.key.password", _PW, None, _PB),
        _b("ssl.truststore.password", _PW, None, _PB),
        _b("sasl.jaas.config", _PW, None, _PB),
    )
}

LISTENER_PREFIX = "listener.name."


def is_sensitive(name: str, spec: ConfigSpec | None) -> bool:
    if spec is not None and spec.sensitive:
        return True
    return name.endswith(".password") or name.endswith("sasl.jaas.config")


def broker_spec(name: str) -> ConfigSpec | None:
    """The spec of a broker config; per-listener keys are accepted as per-broker strings."""
    spec = BROKER_CONFIGS.get(name)
    if spec is None and name.startswith(LISTENER_PREFIX) and name.count(".") >= 3:
        type_ = ConfigType.PASSWORD if is_sensitive(name, None) else ConfigType.STRING
        spec = ConfigSpec(name, type_, None, dynamic=Dynamic.PER_BROKER)
    return spec


_THROTTLED_ITEM = re.compile(r"^\d+:\d+$")
_INTEGER = re.compile(r"^[+-]?\d+$")


def _invalid(name: str, value: str, reason: str) -> str:
    return f"Invalid value {value} for configuration {name}: {reason}"


def _check_number(spec: ConfigSpec, value: str) -> str | None:
    text = value.strip()
    number: float
    if spec.type is ConfigType.DOUBLE:
        try:
            number = float(text)
        except ValueError:
            return _invalid(spec.name, value, "Not a number of type DOUBLE")
    else:
        bound = INT_MAX if spec.type is ConfigType.INT else LONG_MAX
        if not _INTEGER.match(text) or not -bound - 1 <= int(text) <= bound:
            return _invalid(spec.name, value, f"Not a number of type {spec.type.name}")
        number = int(text)
    if spec.minimum is not None and number < spec.minimum:
        return _invalid(spec.name, value, f"Value must be at least {_fmt(spec.minimum)}")
    if spec.maximum is not None and number > spec.maximum:
        return _invalid(spec.name, value, f"Value must be no more than {_fmt(spec.maximum)}")
    return None


def _fmt(bound: float) -> str:
    return str(int(bound)) if float(bound).is_integer() else str(bound)


def _check_list(spec: ConfigSpec, value: str) -> str | None:
    items = split_list(value)
    if spec.name in THROTTLED_REPLICA_CONFIGS:
        if value.strip() == "*" or all(_THROTTLED_ITEM.match(item) for item in items):
            return None
        return _invalid(
            spec.name,
            value,
            "Must be the wildcard (*) or a list of partitionId:brokerId pairs",
        )
    if spec.valid is not None:
        for item in items:
            if item not in spec.valid:
                return _invalid(spec.name, value, "String must be one of: " + ", ".join(spec.valid))
    return None


def validate_value(spec: ConfigSpec, value: str) -> str | None:
    """Kafka's ConfigException message for a bad value, or None when valid."""
    if spec.type in (ConfigType.INT, ConfigType.LONG, ConfigType.SHORT, ConfigType.DOUBLE):
        return _check_number(spec, value)
    if spec.type is ConfigType.BOOLEAN:
        if value.strip().lower() not in ("true", "false"):
            return _invalid(spec.name, value, "Expected value to be either true or false")
        return None
    if spec.type is ConfigType.LIST:
        return _check_list(spec, value)
    if spec.valid is not None and value.strip() not in spec.valid:
        return _invalid(spec.name, value, "String must be one of: " + ", ".join(spec.valid))
    return None


def split_list(value: str | None) -> list[str]:
    if not value:
        return []
    return [item.strip() for item in value.split(",") if item.strip()]


def validate_topic_config(name: str, value: str | None) -> str | None:
    """The INVALID_CONFIG message for a topic config, or None when valid."""
    spec = TOPIC_CONFIGS.get(name)
    if spec is None:
        return f"Unknown topic config name: {name}"
    if value is None:
        return f"Null value not supported for topic configs: {name}"
    return validate_value(spec, value)
