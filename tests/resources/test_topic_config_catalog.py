"""The catalog of Kafka topic configs: coverage, types, ranges, defaults."""

from __future__ import annotations

import pytest

from kafkaops.resources import TOPIC_CONFIGS, topic_config_default, topic_config_defaults
from kafkaops.resources.broker_configs import BROKER_CONFIGS, is_broker_config_name
from kafkaops.resources.config_types import ConfigType
from kafkaops.resources.topic_configs import BROKER_SYNONYMS, suggest_topic_config

KAFKA_TOPIC_CONFIGS = """
cleanup.policy compression.type delete.retention.ms file.delete.delay.ms flush.messages flush.ms
follower.replication.throttled.replicas index.interval.bytes leader.replication.throttled.replicas
local.retention.bytes local.retention.ms max.compaction.lag.ms max.message.bytes message.downconversion.enable
message.format.version message.timestamp.difference.max.ms message.timestamp.before.max.ms
message.timestamp.after.max.ms message.timestamp.type min.cleanable.dirty.ratio min.compaction.lag.ms
min.insync.replicas preallocate remote.storage.enable retention.bytes retention.ms segment.bytes
segment.index.bytes segment.jitter.ms segment.ms unclean.leader.election.enable compression.gzip.level
compression.lz4.level compression.zstd.level remote.log.copy.disable remote.log.delete.on.disable
""".split()


def test_catalog_holds_every_kafka_topic_config() -> None:
    assert set(TOPIC_CONFIGS) == set(KAFKA_TOPIC_CONFIGS)


@pytest.mark.parametrize("name", sorted(TOPIC_CONFIGS))
def test_each_default_is_valid_for_its_own_spec(name: str) -> None:
    spec = TOPIC_CONFIGS[name]
    assert spec.default is not None
    errors = [f for f in spec.check(spec.default, "p") if f.severity == "error"]
    assert errors == []


def test_kafka_defaults_and_types() -> None:
    assert topic_config_default("retention.ms") == "604800000"
    assert topic_config_default("cleanup.policy") == "delete"
    assert topic_config_default("min.insync.replicas") == "1"
    assert topic_config_default("segment.bytes") == "1073741824"
    assert topic_config_default("max.message.bytes") == "1048588"
    assert topic_config_default("compression.type") == "producer"
    assert topic_config_default("nope") is None
    assert topic_config_defaults()["local.retention.ms"] == "-2"
    assert TOPIC_CONFIGS["min.cleanable.dirty.ratio"].type == ConfigType.DOUBLE
    assert TOPIC_CONFIGS["segment.bytes"].type == ConfigType.INT
    assert TOPIC_CONFIGS["retention.ms"].type == ConfigType.LONG
    assert TOPIC_CONFIGS["cleanup.policy"].type == ConfigType.LIST
    assert TOPIC_CONFIGS["preallocate"].type == ConfigType.BOOLEAN
    assert TOPIC_CONFIGS["message.timestamp.after.max.ms"].kafka4_default == "3600000"


@pytest.mark.parametrize(("name", "value", "rule"), [
    ("min.insync.replicas", "0", "ConfigValueOutOfRange"),
    ("retention.ms", "-2", "ConfigValueOutOfRange"),
    ("segment.bytes", "13", "ConfigValueOutOfRange"),
    ("max.message.bytes", "-1", "ConfigValueOutOfRange"),
    ("min.cleanable.dirty.ratio", "1.01", "ConfigValueOutOfRange"),
    ("compression.lz4.level", "0", "ConfigValueOutOfRange"),
    ("retention.ms", "9223372036854775808", "InvalidConfigValue"),
    ("segment.bytes", "2147483648", "InvalidConfigValue"),
    ("segment.ms", "1.5", "InvalidConfigValue"),
    ("min.cleanable.dirty.ratio", "NaN", "InvalidConfigValue"),
    ("preallocate", "1", "InvalidConfigValue"),
    ("cleanup.policy", "delete;compact", "InvalidConfigValue"),
    ("compression.type", "none", "InvalidConfigValue"),
    ("message.timestamp.type", "logAppendTime", "InvalidConfigValue"),
])
def test_bad_values(name: str, value: str, rule: str) -> None:
    assert [f.rule for f in TOPIC_CONFIGS[name].check(value, "p")] == [rule]


@pytest.mark.parametrize(("name", "value"), [
    ("min.insync.replicas", "1"), ("retention.ms", "-1"), ("segment.bytes", "14"), ("max.message.bytes", "0"),
    ("min.cleanable.dirty.ratio", "0"), ("min.cleanable.dirty.ratio", "1e-1"), ("retention.ms", "+5"),
    ("cleanup.policy", "compact,delete"), ("cleanup.policy", ""), ("compression.type", "uncompressed"),
    ("compression.zstd.level", "-131072"), ("unclean.leader.election.enable", "True"),
    ("leader.replication.throttled.replicas", "*"),
])
def test_good_values(name: str, value: str) -> None:
    assert [f for f in TOPIC_CONFIGS[name].check(value, "p") if f.severity == "error"] == []


def test_suggestions() -> None:
    assert suggest_topic_config("retention.msec") == "retention.ms"
    assert suggest_topic_config("log.retention.hours") == "retention.ms"
    assert suggest_topic_config("cleanup.polcy") == "cleanup.policy"
    assert all(target in TOPIC_CONFIGS for target in BROKER_SYNONYMS.values())


def test_broker_catalog_names_are_config_names() -> None:
    assert all(is_broker_config_name(name) for name in BROKER_CONFIGS)
    assert not is_broker_config_name("Log.Retention") and not is_broker_config_name("log..x")
    assert not is_broker_config_name("")
