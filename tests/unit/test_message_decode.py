"""Decoding real kio responses (built, framed and read back by kio, as the client reads them).

Metadata (versions 1, no offline replicas; 5; 12, topic ids): partitions in partition order whatever
order the broker listed them in, broker ids as tuples of ints, errors typed, topics that failed
kept apart. DescribeConfigs (versions 1, 3 with documentation, 4 flexible): each entry's source,
sensitive values and their synonyms' hidden, a source code this client does not know read as
UNKNOWN, a resource's error kept as its result."""

from __future__ import annotations

import datetime
import uuid

import pytest

from kafkaops.kafka import wire
from kafkaops.kafka.apis import Api
from kafkaops.kafka.messages import decode_describe_configs, decode_metadata
from kafkaops.kafka.models import ConfigEntry, ConfigResource, ConfigSource, ConfigSynonym, PartitionInfo

TOPIC_ID = uuid.UUID("6ba7b810-9dad-11d1-80b4-00c04fd430c8")


def partition(index: int, leader: int, replicas: list[int], isr: list[int], error: int = 0) -> dict:
    return {"error_code": error, "partition_index": index, "leader_id": leader, "leader_epoch": 0,
            "replica_nodes": replicas, "isr_nodes": isr, "offline_replicas": [r for r in replicas if r not in isr]}


def response(version: int, topics: list[dict]):
    body = {"throttle_time": datetime.timedelta(0), "cluster_id": "c1", "controller_id": 2,
            "brokers": [{"node_id": n, "host": f"b{n}", "port": 9092 + n, "rack": None} for n in (1, 2, 3)],
            "topics": topics, "cluster_authorized_operations": -2147483648}
    built = wire.build(wire.response_class(Api.METADATA, version), body)
    frame = wire.encode_response(built, 1)
    return wire.decode_response(frame[4:], Api.METADATA, version)  # as the client reads it off the wire


@pytest.mark.parametrize("version", [1, 5, 12])
def test_partitions_come_in_partition_order_with_their_replicas(version: int) -> None:
    listed = [partition(2, 3, [3, 1], [3, 1]), partition(0, 1, [1, 2], [1]), partition(1, -1, [2, 3], [], error=5)]
    meta = decode_metadata(response(version, [
        {"error_code": 0, "name": "orders", "topic_id": TOPIC_ID, "is_internal": False, "partitions": listed,
         "topic_authorized_operations": -2147483648},
        {"error_code": 3, "name": "gone", "topic_id": uuid.UUID(int=0), "is_internal": False, "partitions": [],
         "topic_authorized_operations": -2147483648},
    ]))
    orders = meta.topics["orders"]
    assert [p.partition for p in orders.partitions] == [0, 1, 2]
    first, second, third = orders.partitions
    offline = (2,) if version >= 5 else ()  # v1 has no offline replicas
    assert first == PartitionInfo(0, 1, (1, 2), (1,), offline, None)
    assert (second.leader, second.replicas, second.isr) == (-1, (2, 3), ())
    assert second.error is not None and second.error.name == "LEADER_NOT_AVAILABLE"
    assert third == PartitionInfo(2, 3, (3, 1), (3, 1), (), None)
    assert all(type(p.replicas) is tuple and all(type(r) is int for r in p.replicas) for p in orders.partitions)
    assert not orders.all_led and orders.replication_factor == 2
    assert orders.topic_id == (TOPIC_ID if version >= 10 else None)
    assert "gone" not in meta.topics and meta.topic_errors["gone"].name == "UNKNOWN_TOPIC_OR_PARTITION"
    assert (meta.controller_id, sorted(meta.brokers)) == (2, [1, 2, 3])


def test_a_topic_listed_in_order_keeps_its_order() -> None:
    listed = [partition(i, 1, [1], [1]) for i in range(5)]
    meta = decode_metadata(response(12, [{"error_code": 0, "name": "t", "topic_id": TOPIC_ID, "is_internal": True,
                                          "partitions": listed, "topic_authorized_operations": -2147483648}]))
    assert [p.partition for p in meta.topics["t"].partitions] == [0, 1, 2, 3, 4]
    assert meta.topics["t"].internal and meta.topics["t"].all_led


def configs_response(version: int, results: list[dict]):
    built = wire.build(wire.response_class(Api.DESCRIBE_CONFIGS, version),
                       {"throttle_time": datetime.timedelta(0), "results": results})
    return wire.decode_response(wire.encode_response(built, 1)[4:], Api.DESCRIBE_CONFIGS, version)


def entry(name: str, value: str | None, source: int, sensitive: bool = False, synonyms: list[dict] | None = None) -> dict:
    return {"name": name, "value": value, "read_only": False, "config_source": source, "is_sensitive": sensitive,
            "synonyms": synonyms or [], "config_type": 0, "documentation": f"about {name}"}


@pytest.mark.parametrize("version", [1, 3, 4])
def test_config_entries_with_their_sources_and_secrets_hidden(version: int) -> None:
    synonyms = [{"name": "log.retention.ms", "value": "1000", "source": 4},
                {"name": "retention.ms", "value": "5", "source": 1}]
    decoded = decode_describe_configs(configs_response(version, [
        {"error_code": 0, "error_message": None, "resource_type": 2, "resource_name": "orders", "configs": [
            entry("retention.ms", "5", 1, synonyms=synonyms),
            entry("sasl.jaas.config", "secret-value", 1, sensitive=True,
                  synonyms=[{"name": "sasl.jaas.config", "value": "secret-value", "source": 1}]),
            entry("cleanup.policy", "delete", 5),
            entry("from.a.newer.broker", "x", 42, synonyms=[{"name": "from.a.newer.broker", "value": "x", "source": 42}]),
            entry("no.source", "y", -1),
        ]},
        {"error_code": 29, "error_message": "denied", "resource_type": 2, "resource_name": "secret-topic", "configs": []},
        {"error_code": 0, "error_message": None, "resource_type": 4, "resource_name": "1", "configs": [
            entry("log.retention.ms", "1000", 4)]},
    ]))
    orders = decoded[ConfigResource.topic("orders")].value
    assert orders is not None and list(orders) == ["retention.ms", "sasl.jaas.config", "cleanup.policy",
                                                    "from.a.newer.broker", "no.source"]
    documentation = "about retention.ms" if version >= 3 else None
    assert orders["retention.ms"] == ConfigEntry(
        "retention.ms", "5", ConfigSource.DYNAMIC_TOPIC_CONFIG, False, False,
        (ConfigSynonym("log.retention.ms", "1000", ConfigSource.STATIC_BROKER_CONFIG),
         ConfigSynonym("retention.ms", "5", ConfigSource.DYNAMIC_TOPIC_CONFIG)), documentation)
    secret = orders["sasl.jaas.config"]
    assert secret.sensitive and secret.value is None and secret.synonyms[0].value is None
    assert "secret-value" not in repr(decoded)
    assert orders["cleanup.policy"].source is ConfigSource.DEFAULT_CONFIG and orders["cleanup.policy"].is_default
    newer = orders["from.a.newer.broker"]  # a source code this client does not know: UNKNOWN, not a failed read
    assert newer.source is ConfigSource.UNKNOWN and newer.synonyms[0].source is ConfigSource.UNKNOWN
    assert orders["no.source"].source is ConfigSource.UNKNOWN
    denied = decoded[ConfigResource.topic("secret-topic")]
    assert denied.value is None and denied.error is not None and denied.error.name == "TOPIC_AUTHORIZATION_FAILED"
    assert denied.error.message == "denied"
    broker = decoded[ConfigResource.broker(1)].value
    assert broker is not None and broker["log.retention.ms"].source is ConfigSource.STATIC_BROKER_CONFIG
