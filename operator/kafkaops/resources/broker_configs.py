"""A small catalog of common dynamic broker configs (settable with IncrementalAlterConfigs).

Not exhaustive: a KafkaBrokerConfig key outside it is a warning, not an
error, as long as it looks like a config name. Keys under the listener- and
security-specific families (`listener.name.*`, `ssl.*`, `sasl.*`) are accepted
without a check.
"""

from __future__ import annotations

import re
from types import MappingProxyType

from kafkaops.resources.config_types import ConfigSpec, ConfigType, suggest
from kafkaops.resources.topic_configs import CLEANUP_POLICIES, COMPRESSION_TYPES, TIMESTAMP_TYPES

BROKER_CONFIG_NAME = re.compile(r"^[a-z0-9]+([._-][a-z0-9]+)*$")
FAMILY_PREFIXES = ("listener.name.", "ssl.", "sasl.")

_I, _L, _D, _B, _S, _LIST = (ConfigType.INT, ConfigType.LONG, ConfigType.DOUBLE, ConfigType.BOOLEAN,
                             ConfigType.STRING, ConfigType.LIST)


def _spec(name: str, type_: ConfigType, **kwargs: object) -> ConfigSpec:
    return ConfigSpec(name, type_, None, **kwargs)  # type: ignore[arg-type]


BROKER_CONFIGS: MappingProxyType[str, ConfigSpec] = MappingProxyType({
    spec.name: spec
    for spec in (
        # log defaults for topics without overrides (cluster-wide or per broker)
        _spec("log.cleanup.policy", _LIST, choices=CLEANUP_POLICIES),
        _spec("log.retention.ms", _L, minimum=-1),
        _spec("log.retention.bytes", _L, minimum=-1),
        _spec("log.segment.bytes", _I, minimum=14, kafka4_minimum=1048576),
        _spec("log.roll.ms", _L, minimum=1),
        _spec("log.roll.jitter.ms", _L, minimum=0),
        _spec("log.index.size.max.bytes", _I, minimum=4),
        _spec("log.index.interval.bytes", _I, minimum=0),
        _spec("log.flush.interval.messages", _L, minimum=1),
        _spec("log.flush.interval.ms", _L, minimum=0),
        _spec("log.segment.delete.delay.ms", _L, minimum=0),
        _spec("log.preallocate", _B),
        _spec("log.message.timestamp.type", _S, choices=TIMESTAMP_TYPES),
        _spec("log.message.timestamp.before.max.ms", _L, minimum=0),
        _spec("log.message.timestamp.after.max.ms", _L, minimum=0),
        _spec("log.local.retention.ms", _L, minimum=-2),
        _spec("log.local.retention.bytes", _L, minimum=-2),
        _spec("log.cleaner.threads", _I, minimum=0),
        _spec("log.cleaner.io.max.bytes.per.second", _D),
        _spec("log.cleaner.dedupe.buffer.size", _L),
        _spec("log.cleaner.io.buffer.size", _I, minimum=0),
        _spec("log.cleaner.io.buffer.load.factor", _D),
        _spec("log.cleaner.backoff.ms", _L, minimum=0),
        _spec("log.cleaner.delete.retention.ms", _L, minimum=0),
        _spec("log.cleaner.min.compaction.lag.ms", _L, minimum=0),
        _spec("log.cleaner.max.compaction.lag.ms", _L, minimum=1),
        _spec("log.cleaner.min.cleanable.ratio", _D, minimum=0, maximum=1),
        _spec("min.insync.replicas", _I, minimum=1),
        _spec("unclean.leader.election.enable", _B),
        _spec("compression.type", _S, choices=COMPRESSION_TYPES),
        _spec("compression.gzip.level", _I, minimum=-1, maximum=9),
        _spec("compression.lz4.level", _I, minimum=1, maximum=17),
        _spec("compression.zstd.level", _I, minimum=-131072, maximum=22),
        _spec("message.max.bytes", _I, minimum=0),
        # threads and connections
        _spec("num.io.threads", _I, minimum=1),
        _spec("num.network.threads", _I, minimum=1),
        _spec("num.replica.fetchers", _I, minimum=1),
        _spec("num.recovery.threads.per.data.dir", _I, minimum=1),
        _spec("background.threads", _I, minimum=1),
        _spec("max.connections", _I, minimum=0),
        _spec("max.connections.per.ip", _I, minimum=0),
        _spec("max.connections.per.ip.overrides", _S),
        _spec("max.connection.creation.rate", _I, minimum=0),
        # replication quotas (reassignment throttles)
        _spec("leader.replication.throttled.rate", _L, minimum=0),
        _spec("follower.replication.throttled.rate", _L, minimum=0),
        _spec("replica.alter.log.dirs.io.max.bytes.per.second", _L, minimum=0),
        # tiered storage
        _spec("remote.log.manager.copy.max.bytes.per.second", _L, minimum=1),
        _spec("remote.log.manager.fetch.max.bytes.per.second", _L, minimum=1),
        _spec("remote.log.index.file.cache.total.size.bytes", _L, minimum=1),
        # misc
        _spec("metric.reporters", _LIST),
        _spec("producer.id.expiration.ms", _I, minimum=1),
        _spec("transaction.partition.verification.enable", _B),
    )
})


def is_broker_config_name(name: str) -> bool:
    """Looks like a Kafka config name: dotted lowercase words."""
    return bool(BROKER_CONFIG_NAME.match(name))


def is_known_broker_config(name: str) -> bool:
    return name in BROKER_CONFIGS or name.startswith(FAMILY_PREFIXES)


def suggest_broker_config(name: str) -> str | None:
    return suggest(name, BROKER_CONFIGS)
