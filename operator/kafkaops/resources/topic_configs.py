"""The catalog of Kafka's topic-level configs (Kafka 3.x and 4.x), with types, ranges and defaults.

Taken from Kafka's LogConfig/TopicConfig definitions. The defaults are Kafka's
own (what DescribeConfigs reports for a topic without an override); where
Kafka 4.0 changed a minimum or a default, `kafka4_minimum`/`kafka4_default`
say so. Keys Kafka 4.0 removed are kept, marked deprecated (a warning), since
3.x clusters still accept them.
"""

from __future__ import annotations

import re
from types import MappingProxyType

from kafkaops.resources.config_types import LONG_MAX, ConfigSpec, ConfigType, suggest

_LONG_MAX = str(LONG_MAX)
_THROTTLED_REPLICA = re.compile(r"^[0-9]+:[0-9]+$")

COMPRESSION_TYPES = frozenset({"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"})
CLEANUP_POLICIES = frozenset({"compact", "delete"})
TIMESTAMP_TYPES = frozenset({"CreateTime", "LogAppendTime"})

_REMOVED_IN_4 = "deprecated since Kafka 3.0 and removed in Kafka 4.0: a 4.x cluster rejects it"


def _throttled_replicas(value: str) -> str | None:
    """Kafka's ThrottledReplicaListValidator: `*` or partition:broker pairs."""
    if value in ("", "*"):
        return None
    for item in value.split(","):
        if not _THROTTLED_REPLICA.match(item.strip()):
            return f"{item.strip()!r} is not partition:brokerId; use a comma list of such pairs, or *"
    return None


def _gzip_level(value: str) -> str | None:
    level = int(value)
    if level == -1 or 1 <= level <= 9:
        return None
    return f"{value} is not a gzip level: use -1 (default) or 1..9"


def _spec(name: str, type_: ConfigType, default: str | None, **kwargs: object) -> ConfigSpec:
    return ConfigSpec(name, type_, default, **kwargs)  # type: ignore[arg-type]


_I, _L, _D, _B, _S, _LIST = (ConfigType.INT, ConfigType.LONG, ConfigType.DOUBLE, ConfigType.BOOLEAN,
                             ConfigType.STRING, ConfigType.LIST)

TOPIC_CONFIGS: MappingProxyType[str, ConfigSpec] = MappingProxyType({
    spec.name: spec
    for spec in (
        _spec("cleanup.policy", _LIST, "delete", choices=CLEANUP_POLICIES),
        _spec("compression.type", _S, "producer", choices=COMPRESSION_TYPES),
        _spec("compression.gzip.level", _I, "-1", validator=_gzip_level),
        _spec("compression.lz4.level", _I, "9", minimum=1, maximum=17),
        _spec("compression.zstd.level", _I, "3", minimum=-131072, maximum=22),
        _spec("delete.retention.ms", _L, "86400000", minimum=0),
        _spec("file.delete.delay.ms", _L, "60000", minimum=0),
        _spec("flush.messages", _L, _LONG_MAX, minimum=1),
        _spec("flush.ms", _L, _LONG_MAX, minimum=0),
        _spec("follower.replication.throttled.replicas", _LIST, "", validator=_throttled_replicas),
        _spec("index.interval.bytes", _I, "4096", minimum=0),
        _spec("leader.replication.throttled.replicas", _LIST, "", validator=_throttled_replicas),
        _spec("local.retention.bytes", _L, "-2", minimum=-2),
        _spec("local.retention.ms", _L, "-2", minimum=-2),
        _spec("max.compaction.lag.ms", _L, _LONG_MAX, minimum=1),
        _spec("max.message.bytes", _I, "1048588", minimum=0),
        _spec("message.downconversion.enable", _B, "true", deprecated=_REMOVED_IN_4),
        _spec("message.format.version", _S, "3.0-IV1", deprecated=_REMOVED_IN_4),
        _spec("message.timestamp.difference.max.ms", _L, _LONG_MAX, minimum=0,
              deprecated="deprecated since Kafka 3.6 (use message.timestamp.before/after.max.ms) and removed in "
                         "Kafka 4.0: a 4.x cluster rejects it"),
        _spec("message.timestamp.before.max.ms", _L, _LONG_MAX, minimum=0),
        _spec("message.timestamp.after.max.ms", _L, _LONG_MAX, minimum=0, kafka4_default="3600000"),
        _spec("message.timestamp.type", _S, "CreateTime", choices=TIMESTAMP_TYPES),
        _spec("min.cleanable.dirty.ratio", _D, "0.5", minimum=0, maximum=1),
        _spec("min.compaction.lag.ms", _L, "0", minimum=0),
        _spec("min.insync.replicas", _I, "1", minimum=1),
        _spec("preallocate", _B, "false"),
        _spec("remote.storage.enable", _B, "false"),
        _spec("remote.log.copy.disable", _B, "false"),
        _spec("remote.log.delete.on.disable", _B, "false"),
        _spec("retention.bytes", _L, "-1", minimum=-1),
        _spec("retention.ms", _L, "604800000", minimum=-1),
        _spec("segment.bytes", _I, "1073741824", minimum=14, kafka4_minimum=1048576),
        _spec("segment.index.bytes", _I, "10485760", minimum=4),
        _spec("segment.jitter.ms", _L, "0", minimum=0),
        _spec("segment.ms", _L, "604800000", minimum=1),
        _spec("unclean.leader.election.enable", _B, "false"),
    )
})

# Broker-level names people put on topics by mistake -> the topic-level key.
BROKER_SYNONYMS: MappingProxyType[str, str] = MappingProxyType({
    "log.cleanup.policy": "cleanup.policy",
    "log.cleaner.delete.retention.ms": "delete.retention.ms",
    "log.cleaner.min.cleanable.ratio": "min.cleanable.dirty.ratio",
    "log.cleaner.min.compaction.lag.ms": "min.compaction.lag.ms",
    "log.cleaner.max.compaction.lag.ms": "max.compaction.lag.ms",
    "log.flush.interval.messages": "flush.messages",
    "log.flush.interval.ms": "flush.ms",
    "log.index.interval.bytes": "index.interval.bytes",
    "log.index.size.max.bytes": "segment.index.bytes",
    "log.local.retention.bytes": "local.retention.bytes",
    "log.local.retention.ms": "local.retention.ms",
    "log.message.timestamp.type": "message.timestamp.type",
    "log.preallocate": "preallocate",
    "log.retention.bytes": "retention.bytes",
    "log.retention.ms": "retention.ms",
    "log.retention.minutes": "retention.ms",
    "log.retention.hours": "retention.ms",
    "log.roll.ms": "segment.ms",
    "log.roll.hours": "segment.ms",
    "log.roll.jitter.ms": "segment.jitter.ms",
    "log.segment.bytes": "segment.bytes",
    "log.segment.delete.delay.ms": "file.delete.delay.ms",
    "message.max.bytes": "max.message.bytes",
    "retention.hours": "retention.ms",
    "retention.minutes": "retention.ms",
})


def topic_config_default(name: str) -> str | None:
    """Kafka's default for a topic config (None when unknown or derived)."""
    spec = TOPIC_CONFIGS.get(name)
    return spec.default if spec else None


def topic_config_defaults() -> dict[str, str]:
    """Every catalogued key with a default -> that default."""
    return {name: spec.default for name, spec in TOPIC_CONFIGS.items() if spec.default is not None}


def suggest_topic_config(name: str) -> str | None:
    """The topic config a mistyped or broker-level `name` most likely means."""
    return BROKER_SYNONYMS.get(name) or suggest(name, TOPIC_CONFIGS)
