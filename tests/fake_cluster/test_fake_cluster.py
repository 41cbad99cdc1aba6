"""Tests of the fake multi-broker Kafka cluster (a test double), through a raw wire client."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import ssl
import struct
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from kafkaops.kafka.wire import build, decode_response, encode_request, request_class, response_class
from kafkaops.testing.fake_cluster import (
    MIB,
    SUPPORTED_VERSIONS,
    TOPIC_CONFIGS,
    ConfigSource,
    FakeClusterDouble,
    FaultDouble,
)

METADATA, CREATE_TOPICS, DELETE_TOPICS, API_VERSIONS = 3, 19, 20, 18
DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS = 29, 30, 31
DESCRIBE_CONFIGS, DESCRIBE_LOG_DIRS, CREATE_PARTITIONS = 32, 35, 37
ELECT_LEADERS, ALTER_CONFIGS, ALTER_REASSIGN, LIST_REASSIGN, DESCRIBE_CLUSTER = 43, 44, 45, 46, 60
TOPIC, BROKER = 2, 4
LITERAL, PREFIXED, MATCH, ANY = 3, 4, 2, 1
READ, WRITE, ALLOW = 3, 4, 3


def topic(name: str, partitions: int = 1, rf: int = 1, configs: dict[str, str] | None = None, **extra: Any) -> dict:
    return {
        "name": name,
        "num_partitions": partitions,
        "replication_factor": rf,
        "assignments": extra.pop("assignments", []),
        "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
        **extra,
    }


async def create(client: Any, *topics: dict, version: int = 7, validate_only: bool = False, broker: int | None = None):
    body = {"topics": list(topics), "timeout": timedelta(seconds=5), "validate_only": validate_only}
    response = await client.call(CREATE_TOPICS, version, body, broker)
    return {t.name: t for t in response.topics}


async def metadata(client: Any, names: list[str] | None = None, version: int = 12, broker: int | None = None):
    topics = None if names is None else [{"name": n, "topic_id": None} for n in names]
    return await client.call(
        METADATA,
        version,
        {"topics": topics, "allow_auto_topic_creation": False, "include_topic_authorized_operations": False},
        broker,
    )


async def describe_configs(client: Any, rtype: int, name: str, keys: list[str] | None = None, broker=None, **kw):
    body = {
        "resources": [{"resource_type": rtype, "resource_name": name, "configuration_keys": keys}],
        "include_synonyms": kw.get("synonyms", False),
        "include_documentation": False,
    }
    response = await client.call(DESCRIBE_CONFIGS, 4, body, broker)
    return response.results[0]


async def alter_configs(client: Any, rtype: int, name: str, ops: list[tuple[str, int, str | None]], **kw):
    body = {
        "resources": [
            {
                "resource_type": rtype,
                "resource_name": name,
                "configs": [{"name": k, "config_operation": op, "value": v} for k, op, v in ops],
            }
        ],
        "validate_only": kw.get("validate_only", False),
    }
    response = await client.call(ALTER_CONFIGS, 1, body, kw.get("broker"))
    return response.responses[0]


def acl(name: str, pattern: int = LITERAL, principal: str = "User:alice", op: int = READ, rtype: int = TOPIC) -> dict:
    return {
        "resource_type": rtype,
        "resource_name": name,
        "resource_pattern_type": pattern,
        "principal": principal,
        "host": "*",
        "operation": op,
        "permission_type": ALLOW,
    }


def acl_filter(name: str | None, pattern: int, principal: str | None = None) -> dict:
    return {
        "resource_type_filter": ANY,
        "resource_name_filter": name,
        "pattern_type_filter": pattern,
        "principal_filter": principal,
        "host_filter": None,
        "operation": ANY,
        "permission_type": ANY,
    }


async def reassign(client: Any, name: str, partition: int, replicas: list[int] | None, broker=None):
    body = {
        "timeout": timedelta(seconds=5),
        "topics": [{"name": name, "partitions": [{"partition_index": partition, "replicas": replicas}]}],
    }
    return await client.call(ALTER_REASSIGN, 0, body, broker)


async def list_reassignments(client: Any, broker=None):
    response = await client.call(LIST_REASSIGN, 0, {"timeout": timedelta(seconds=5), "topics": None}, broker)
    return {(t.name, p.partition_index): p for t in response.topics for p in t.partitions}


async def log_dirs(client: Any, broker: int):
    response = await client.call(DESCRIBE_LOG_DIRS, 4, {"topics": None}, broker)
    (result,) = response.results
    return {(t.name, p.partition_index): p for t in result.topics for p in t.partitions}


async def elect(client: Any, partitions: dict[str, list[int]] | None, broker=None):
    tps = None if partitions is None else [{"topic": t, "partitions": ps} for t, ps in partitions.items()]
    body = {"election_type": 0, "topic_partitions": tps, "timeout": timedelta(seconds=5)}
    response = await client.call(ELECT_LEADERS, 2, body, broker)
    return response, {(r.topic, p.partition_id): p.error_code for r in response.replica_election_results
                      for p in r.partition_result}


# ------------------------------------------------------------------ ApiVersions
async def test_api_versions_advertise_exactly_the_served_ranges(client):
    response = await client.call(API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"})
    assert response.error_code == ErrorCode.none
    ranges = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    expected = {k: v for k, v in SUPPORTED_VERSIONS.items() if k not in (17, 36)}  # no SASL configured
    assert ranges == expected
    assert (await client.call(API_VERSIONS, 0, {})).error_code == ErrorCode.none


async def test_api_versions_unsupported_version_answers_v0_with_ranges(client):
    # KIP-511: a newer ApiVersions than the broker knows gets a v0 response with error 35.
    request = build(request_class(API_VERSIONS, 3), {"client_software_name": "t", "client_software_version": "1"})
    frame = bytearray(encode_request(request, 77, "test"))
    struct.pack_into(">h", frame, 6, 99)  # api_version in the request header
    conn = await client.conn()
    conn.send_raw(bytes(frame), API_VERSIONS, 0, 77)
    response = await conn.receive()
    assert response.error_code == ErrorCode.unsupported_version
    assert {k.api_key for k in response.api_keys} >= {3, 19, 20}


async def test_disabled_and_capped_apis(make_client):
    async with FakeClusterDouble(
        brokers=2, tick_interval=None, disabled_apis={ALTER_REASSIGN}, max_versions={CREATE_TOPICS: 4},
        per_broker_max_versions={2: {METADATA: 9}},
    ) as cluster:
        client = make_client(cluster)
        r1 = await client.call(API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"}, 1)
        r2 = await client.call(API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"}, 2)
        ranges1 = {k.api_key: (k.min_version, k.max_version) for k in r1.api_keys}
        ranges2 = {k.api_key: (k.min_version, k.max_version) for k in r2.api_keys}
        assert ALTER_REASSIGN not in ranges1
        assert ranges1[CREATE_TOPICS] == (2, 4)
        assert ranges1[METADATA] == (1, 12) and ranges2[METADATA] == (1, 9)
        cluster.create_topic("t", partitions=1)
        response = await reassign(client, "t", 0, [2], broker=1)
        assert response.error_code == ErrorCode.unsupported_version
        assert "t" in cluster.state.topics and not cluster.state.reassignments
        # A version above the cap answers UNSUPPORTED_VERSION per item, nothing created.
        created = await create(client, topic("u"), version=7, broker=1)
        assert created["u"].error_code == ErrorCode.unsupported_version
        assert "u" not in cluster.state.topics


# ------------------------------------------------------------------ CreateTopics
async def test_create_topic_reports_id_partitions_and_configs(client, cluster):
    result = (await create(client, topic("orders", 3, 2, {"retention.ms": "1000"})))["orders"]
    assert result.error_code == ErrorCode.none
    assert (result.num_partitions, result.replication_factor) == (3, 2)
    assert result.topic_id == cluster.state.topics["orders"].topic_id
    configs = {c.name: c for c in result.configs}
    assert set(configs) == set(TOPIC_CONFIGS)
    assert configs["retention.ms"].value == "1000"
    assert configs["retention.ms"].config_source == ConfigSource.DYNAMIC_TOPIC_CONFIG
    assert configs["cleanup.policy"].config_source == ConfigSource.DEFAULT_CONFIG
    md = await metadata(client, ["orders"])
    (t,) = md.topics
    assert t.error_code == ErrorCode.none and t.topic_id == result.topic_id
    assert [len(p.replica_nodes) for p in t.partitions] == [2, 2, 2]
    assert all(p.leader_id == p.replica_nodes[0] and p.isr_nodes == p.replica_nodes for p in t.partitions)


@pytest.mark.parametrize(
    ("spec", "code", "fragment"),
    [
        (topic("bad name!"), ErrorCode.invalid_topic_exception, "illegal"),
        (topic(".."), ErrorCode.invalid_topic_exception, '"." or ".."'),
        (topic("x" * 250), ErrorCode.invalid_topic_exception, "249"),
        (topic("t", 0), ErrorCode.invalid_partitions, "non-positive"),
        (topic("t", 1, 4), ErrorCode.invalid_replication_factor, "Replication factor: 4 larger than available brokers: 3."),
        (topic("t", 1, 0), ErrorCode.invalid_replication_factor, "larger than 0"),
        (topic("t", 1, 1, {"retention.ms": "soon"}), ErrorCode.invalid_config, "retention.ms"),
        (topic("t", 1, 1, {"cleanup.policy": "compact,shred"}), ErrorCode.invalid_config, "cleanup.policy"),
        (topic("t", 1, 1, {"no.such.key": "1"}), ErrorCode.invalid_config, "no.such.key"),
        (topic("t", 1, 1, {"min.insync.replicas": "0"}), ErrorCode.invalid_config, "at least 1"),
        (
            topic("t", 2, -1, assignments=[{"partition_index": 0, "broker_ids": [1]}]),
            ErrorCode.invalid_request,
            "Both",
        ),
        (
            topic("t", -1, -1, assignments=[{"partition_index": 1, "broker_ids": [1]}]),
            ErrorCode.invalid_replica_assignment,
            "consecutive",
        ),
        (
            topic("t", -1, -1, assignments=[{"partition_index": 0, "broker_ids": [1, 1]}]),
            ErrorCode.invalid_replica_assignment,
            "more than once",
        ),
        (
            topic("t", -1, -1, assignments=[{"partition_index": 0, "broker_ids": [9]}]),
            ErrorCode.invalid_replica_assignment,
            "no such broker",
        ),
        (
            topic(
                "t", -1, -1,
                assignments=[{"partition_index": 0, "broker_ids": [1]}, {"partition_index": 1, "broker_ids": [1, 2]}],
            ),
            ErrorCode.invalid_replica_assignment,
            "consistent",
        ),
    ],
)
async def test_create_topic_validation(client, cluster, spec, code, fragment):
    result = next(iter((await create(client, spec)).values()))
    assert result.error_code == code
    assert fragment in result.error_message
    assert result.num_partitions == -1
    assert not cluster.state.topics


async def test_create_topic_defaults_duplicates_existing_and_validate_only(client, cluster):
    results = await create(client, topic("a", -1, -1), topic("dup"), topic("dup"))
    assert results["a"].error_code == ErrorCode.none
    assert (results["a"].num_partitions, results["a"].replication_factor) == (1, 1)
    assert results["dup"].error_code == ErrorCode.invalid_request
    assert "dup" not in cluster.state.topics
    again = await create(client, topic("a"))
    assert again["a"].error_code == ErrorCode.topic_already_exists
    collide = await create(client, topic("a.b")), await create(client, topic("a_b"))
    assert collide[1]["a_b"].error_code == ErrorCode.invalid_topic_exception
    dry = await create(client, topic("dry", 4, 3), validate_only=True)
    assert dry["dry"].error_code == ErrorCode.none and dry["dry"].num_partitions == 4
    assert "dry" not in cluster.state.topics


async def test_create_topic_explicit_assignment_and_old_version(client, cluster):
    spec = topic("m", -1, -1, assignments=[{"partition_index": 0, "broker_ids": [3, 1]},
                                          {"partition_index": 1, "broker_ids": [2, 3]}])
    result = (await create(client, spec, version=2))["m"]
    assert result.error_code == ErrorCode.none
    assert [p.replicas for p in cluster.state.topics["m"].partitions] == [[3, 1], [2, 3]]


async def test_rack_aware_placement_spreads_replicas_over_racks():
    async with FakeClusterDouble(brokers=6, racks=["a", "b", "c"], tick_interval=None) as cluster:
        cluster.create_topic("spread", partitions=12, replication_factor=3)
        racks = {b.node_id: b.rack for b in cluster.state.brokers.values()}
        assert racks == {1: "a", 2: "b", 3: "c", 4: "a", 5: "b", 6: "c"}
        for p in cluster.state.topics["spread"].partitions:
            assert len({racks[b] for b in p.replicas}) == 3
        leaders = [p.leader for p in cluster.state.topics["spread"].partitions]
        assert len(set(leaders)) == 6  # round-robin leaders


async def test_leader_delay_until_ticks_pass(make_client):
    async with FakeClusterDouble(brokers=3, tick_interval=None, leader_delay_ticks=2) as cluster:
        client = make_client(cluster)
        await create(client, topic("slow", 2, 2))
        (t,) = (await metadata(client, ["slow"])).topics
        assert [p.error_code for p in t.partitions] == [ErrorCode.leader_not_available] * 2
        assert all(p.leader_id == -1 for p in t.partitions)
        cluster.advance(1)
        assert all(p.leader == -1 for p in cluster.state.topics["slow"].partitions)
        cluster.advance(1)
        (t,) = (await metadata(client, ["slow"])).topics
        assert all(p.error_code == ErrorCode.none and p.leader_id == p.replica_nodes[0] for p in t.partitions)


# ------------------------------------------------------- Delete / CreatePartitions
async def test_delete_topics_by_name_and_id(client, cluster):
    cluster.create_topic("a")
    b_id = cluster.create_topic("b")
    r = await client.call(DELETE_TOPICS, 6, {"topics": [{"name": "a", "topic_id": None},
                                                        {"name": None, "topic_id": b_id},
                                                        {"name": "ghost", "topic_id": None}],
                                             "timeout": timedelta(seconds=5)})
    codes = {(x.name, x.error_code) for x in r.responses}
    assert codes == {("a", ErrorCode.none), ("b", ErrorCode.none), ("ghost", ErrorCode.unknown_topic_or_partition)}
    assert not cluster.state.topics
    old = await client.call(DELETE_TOPICS, 1, {"topic_names": ["a"], "timeout": timedelta(seconds=5)})
    assert old.responses[0].error_code == ErrorCode.unknown_topic_or_partition


async def test_create_partitions(client, cluster):
    cluster.create_topic("p", partitions=2, replication_factor=2)

    async def grow(count: int, assignments=None, validate_only=False):
        body = {"topics": [{"name": "p", "count": count, "assignments": assignments}],
                "timeout": timedelta(seconds=5), "validate_only": validate_only}
        return (await client.call(CREATE_PARTITIONS, 3, body)).results[0]

    assert (await grow(2)).error_code == ErrorCode.invalid_partitions
    assert (await grow(1)).error_code == ErrorCode.invalid_partitions
    assert (await grow(3, [{"broker_ids": [1]}])).error_code == ErrorCode.invalid_replica_assignment
    assert (await grow(4, [{"broker_ids": [1, 2]}])).error_code == ErrorCode.invalid_replica_assignment
    assert (await grow(5, validate_only=True)).error_code == ErrorCode.none
    assert len(cluster.state.topics["p"].partitions) == 2
    assert (await grow(3, [{"broker_ids": [3, 1]}])).error_code == ErrorCode.none
    assert cluster.partition("p", 2).replicas == [3, 1]
    assert (await grow(5)).error_code == ErrorCode.none
    assert len(cluster.state.topics["p"].partitions) == 5


# ------------------------------------------------------------ controller modes
async def test_zk_mode_only_the_controller_accepts_writes(zk_client, zk_cluster):
    controller = zk_cluster.controller_id
    other = next(b for b in zk_cluster.brokers if b != controller)
    md = await metadata(zk_client, [], broker=other)
    assert md.controller_id == controller
    refused = await create(zk_client, topic("z"), broker=other)
    assert refused["z"].error_code == ErrorCode.not_controller
    assert "z" not in zk_cluster.state.topics
    accepted = await create(zk_client, topic("z"), broker=controller)
    assert accepted["z"].error_code == ErrorCode.none
    r = await reassign(zk_client, "z", 0, [other], broker=other)
    assert r.error_code == ErrorCode.not_controller and r.responses == ()
    acl_result = await zk_client.call(CREATE_ACLS, 3, {"creations": [acl("z")]}, other)
    assert acl_result.results[0].error_code == ErrorCode.not_controller
    # Broker configs may be altered anywhere; topic configs only at the controller.
    assert (await alter_configs(zk_client, BROKER, "", [("log.cleaner.threads", 0, "2")], broker=other)).error_code == 0
    refused = await alter_configs(zk_client, TOPIC, "z", [("retention.ms", 0, "1")], broker=other)
    assert refused.error_code == ErrorCode.not_controller


async def test_zk_move_controller(zk_client, zk_cluster):
    old = zk_cluster.controller_id
    new = zk_cluster.move_controller()
    assert new != old
    assert (await metadata(zk_client, [], broker=old)).controller_id == new
    assert (await create(zk_client, topic("m"), broker=old))["m"].error_code == ErrorCode.not_controller
    assert (await create(zk_client, topic("m"), broker=new))["m"].error_code == ErrorCode.none
    zk_cluster.move_controller(to=old)
    cluster_info = await zk_client.call(DESCRIBE_CLUSTER, 1, {"include_cluster_authorized_operations": False,
                                                               "endpoint_type": 1})
    assert cluster_info.controller_id == old
    assert cluster_info.cluster_id == zk_cluster.cluster_id
    assert sorted(b.broker_id for b in cluster_info.brokers) == [1, 2, 3]


async def test_kraft_any_broker_accepts_writes_and_reports_a_live_controller(client, cluster):
    for broker in cluster.brokers:
        assert (await create(client, topic(f"k{broker}"), broker=broker))[f"k{broker}"].error_code == ErrorCode.none
    seen = {(await metadata(client, [], broker=1)).controller_id for _ in range(20)}
    assert seen <= set(cluster.brokers) and len(seen) > 1
    md = await metadata(client, None, version=1)
    assert {t.name for t in md.topics} == {"k1", "k2", "k3"}
    assert sorted((b.node_id, b.host, b.port) for b in md.brokers) == sorted(
        (b, *cluster.address(b)) for b in cluster.brokers
    )


async def test_metadata_unknown_topic(client):
    md = await metadata(client, ["nope", "bad name"])
    assert [t.error_code for t in md.topics] == [ErrorCode.unknown_topic_or_partition, ErrorCode.invalid_topic_exception]


# ---------------------------------------------------------------------- configs
async def test_describe_topic_configs(client, cluster):
    cluster.create_topic("c", configs={"retention.ms": "5000"})
    await alter_configs(client, BROKER, "", [("log.cleanup.policy", 0, "compact")])
    result = await describe_configs(client, TOPIC, "c", synonyms=True)
    assert result.error_code == ErrorCode.none
    configs = {c.name: c for c in result.configs}
    retention = configs["retention.ms"]
    assert (retention.value, retention.config_source, retention.read_only) == ("5000", 1, False)
    assert [(s.name, s.source) for s in retention.synonyms] == [("retention.ms", 1), ("log.retention.ms", 5)]
    assert retention.config_type == 5  # LONG
    cleanup = configs["cleanup.policy"]
    assert (cleanup.value, cleanup.config_source) == ("compact", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
    only = await describe_configs(client, TOPIC, "c", keys=["segment.bytes"])
    assert [(c.name, c.value, c.config_source) for c in only.configs] == [("segment.bytes", "1073741824", 5)]
    missing = await describe_configs(client, TOPIC, "ghost")
    assert missing.error_code == ErrorCode.unknown_topic_or_partition


async def test_describe_broker_configs(client, cluster):
    result = await describe_configs(client, BROKER, "1", broker=1)
    configs = {c.name: c for c in result.configs}
    assert configs["broker.id"].value == "1" and configs["broker.id"].read_only
    assert configs["broker.id"].config_source == ConfigSource.STATIC_BROKER_CONFIG
    assert configs["num.io.threads"].config_source == ConfigSource.DEFAULT_CONFIG
    assert configs["sasl.jaas.config"].is_sensitive and configs["sasl.jaas.config"].value is None
    # A broker describes only itself, as Kafka does.
    wrong = await describe_configs(client, BROKER, "2", broker=1)
    assert wrong.error_code == ErrorCode.invalid_request
    # The cluster default lists only what is set dynamically.
    assert (await describe_configs(client, BROKER, "")).configs == ()
    await alter_configs(client, BROKER, "", [("num.io.threads", 0, "16")])
    await alter_configs(client, BROKER, "2", [("ssl.keystore.password", 0, "secret")])
    default = await describe_configs(client, BROKER, "")
    assert [(c.name, c.value, c.config_source) for c in default.configs] == [("num.io.threads", "16", 3)]
    two = {c.name: c for c in (await describe_configs(client, BROKER, "2", broker=2, synonyms=True)).configs}
    assert two["num.io.threads"].config_source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
    password = two["ssl.keystore.password"]
    assert password.value is None and password.is_sensitive and password.config_source == 2
    assert all(s.value is None for s in password.synonyms)


async def test_incremental_alter_configs(client, cluster):
    cluster.create_topic("t")
    ok = await alter_configs(client, TOPIC, "t", [("retention.ms", 0, "100"), ("cleanup.policy", 2, "compact")])
    assert ok.error_code == ErrorCode.none
    assert cluster.state.topics["t"].configs == {"retention.ms": "100", "cleanup.policy": "delete,compact"}
    await alter_configs(client, TOPIC, "t", [("cleanup.policy", 3, "delete"), ("retention.ms", 1, None)])
    assert cluster.state.topics["t"].configs == {"cleanup.policy": "compact"}
    bad = [
        ([("retention.ms", 0, "x")], ErrorCode.invalid_config, "retention.ms"),
        ([("nope", 0, "1")], ErrorCode.invalid_config, "nope"),
        ([("retention.ms", 2, "1")], ErrorCode.invalid_config, "append"),
        ([("retention.ms", 0, "1"), ("retention.ms", 1, None)], ErrorCode.invalid_request, "duplicate"),
        ([("retention.ms", 7, "1")], ErrorCode.invalid_request, "operation"),
    ]
    for ops, code, fragment in bad:
        result = await alter_configs(client, TOPIC, "t", ops)
        assert (result.error_code, fragment in result.error_message) == (code, True), ops
    assert cluster.state.topics["t"].configs == {"cleanup.policy": "compact"}
    dry = await alter_configs(client, TOPIC, "t", [("retention.ms", 0, "7")], validate_only=True)
    assert dry.error_code == ErrorCode.none and "retention.ms" not in cluster.state.topics["t"].configs
    ghost = await alter_configs(client, TOPIC, "ghost", [("retention.ms", 0, "7")])
    assert ghost.error_code == ErrorCode.unknown_topic_or_partition
    ro = await alter_configs(client, BROKER, "1", [("broker.id", 0, "7")])
    assert ro.error_code == ErrorCode.invalid_config
    throttle = await alter_configs(client, BROKER, "1", [("leader.replication.throttled.rate", 0, "1000")])
    assert throttle.error_code == ErrorCode.none
    assert cluster.state.broker_configs[1] == {"leader.replication.throttled.rate": "1000"}
    replicas = await alter_configs(client, TOPIC, "t", [("leader.replication.throttled.replicas", 0, "0:1,0:2")])
    assert replicas.error_code == ErrorCode.none


# ------------------------------------------------------------------------- ACLs
async def test_acls_create_describe_match_and_delete(client, cluster):
    created = await client.call(CREATE_ACLS, 3, {"creations": [
        acl("orders"), acl("ord", PREFIXED, "User:bob"), acl("*", LITERAL, "User:carol"), acl("other"),
        acl("x", MATCH), acl("x", op=1), acl("x", principal="alice"),
    ]})
    assert [r.error_code for r in created.results] == [0, 0, 0, 0, 42, 42, 42]
    assert len(cluster.acls) == 4

    async def describe(name, pattern, principal=None):
        r = await client.call(DESCRIBE_ACLS, 3, acl_filter(name, pattern, principal))
        assert r.error_code == ErrorCode.none
        return {(res.resource_name, res.pattern_type, a.principal) for res in r.resources for a in res.acls}

    assert await describe("orders", MATCH) == {
        ("orders", LITERAL, "User:alice"), ("ord", PREFIXED, "User:bob"), ("*", LITERAL, "User:carol")
    }
    assert await describe("ord", PREFIXED) == {("ord", PREFIXED, "User:bob")}
    assert await describe("orders", LITERAL) == {("orders", LITERAL, "User:alice")}
    assert await describe("orders", ANY) == {("orders", LITERAL, "User:alice")}
    assert len(await describe(None, ANY)) == 4
    assert await describe(None, ANY, "User:carol") == {("*", LITERAL, "User:carol")}

    deleted = await client.call(DELETE_ACLS, 3, {"filters": [acl_filter("orders", MATCH), acl_filter("zzz", LITERAL)]})
    first, second = deleted.filter_results
    assert first.error_code == 0 and len(first.matching_acls) == 3
    assert second.error_code == 0 and second.matching_acls == ()
    assert [(b.resource_name) for b in cluster.acls] == ["other"]


async def test_acls_disabled_answer_security_disabled(make_client):
    async with FakeClusterDouble(brokers=1, tick_interval=None, acls_enabled=False) as cluster:
        client = make_client(cluster)
        d = await client.call(DESCRIBE_ACLS, 1, acl_filter(None, ANY))
        c = await client.call(CREATE_ACLS, 1, {"creations": [acl("t")]})
        x = await client.call(DELETE_ACLS, 1, {"filters": [acl_filter(None, ANY)]})
        assert d.error_code == c.results[0].error_code == x.filter_results[0].error_code == ErrorCode.security_disabled


# ---------------------------------------------------------------- reassignments
async def test_reassignment_progresses_with_virtual_time(client, cluster):
    cluster.create_topic("r", partitions=1, assignments=[[1, 2]])
    cluster.set_partition_size("r", 10 * MIB)
    r = await reassign(client, "r", 0, [2, 3])
    assert r.error_code == ErrorCode.none and r.responses[0].partitions[0].error_code == ErrorCode.none
    moving = (await list_reassignments(client))[("r", 0)]
    assert (list(moving.replicas), list(moving.adding_replicas), list(moving.removing_replicas)) == ([2, 3, 1], [3], [1])
    md = (await metadata(client, ["r"])).topics[0].partitions[0]
    assert list(md.replica_nodes) == [2, 3, 1] and md.leader_id == 1 and 3 not in md.isr_nodes

    cluster.advance(1)  # 4 MiB of 10 copied
    copy = (await log_dirs(client, 3))[("r", 0)]
    assert (copy.partition_size, copy.is_future_key, copy.offset_lag) == (4 * MIB, True, 6 * MIB)
    assert (await log_dirs(client, 1))[("r", 0)].partition_size == 10 * MIB
    cluster.advance(1)
    assert (await log_dirs(client, 3))[("r", 0)].partition_size == 8 * MIB
    assert ("r", 0) in await list_reassignments(client)

    cluster.advance(1)  # done: replicas = target, leader 1 removed -> first target replica
    assert await list_reassignments(client) == {}
    md = (await metadata(client, ["r"])).topics[0].partitions[0]
    assert (list(md.replica_nodes), list(md.isr_nodes), md.leader_id) == ([2, 3], [2, 3], 2)
    done = (await log_dirs(client, 3))[("r", 0)]
    assert (done.partition_size, done.is_future_key) == (10 * MIB, False)
    assert ("r", 0) not in await log_dirs(client, 1)


async def test_reassignment_cancel_validation_and_complete(client, cluster):
    cluster.create_topic("r", partitions=2, assignments=[[1], [1]])
    none = await reassign(client, "r", 0, None)
    assert none.responses[0].partitions[0].error_code == ErrorCode.no_reassignment_in_progress
    bad_broker = await reassign(client, "r", 0, [1, 9])
    assert bad_broker.responses[0].partitions[0].error_code == ErrorCode.invalid_replica_assignment
    bad_partition = await reassign(client, "r", 5, [2])
    assert bad_partition.responses[0].partitions[0].error_code == ErrorCode.unknown_topic_or_partition
    bad_topic = await reassign(client, "ghost", 0, [2])
    assert bad_topic.responses[0].partitions[0].error_code == ErrorCode.unknown_topic_or_partition

    await reassign(client, "r", 0, [2])
    cancel = await reassign(client, "r", 0, None)
    assert cancel.responses[0].partitions[0].error_code == ErrorCode.none
    assert cluster.partition("r", 0).replicas == [1] and not cluster.state.reassignments

    await reassign(client, "r", 1, [3])
    assert cluster.complete_reassignments() == 1
    assert (cluster.partition("r", 1).replicas, cluster.partition("r", 1).leader) == ([3], 3)
    reorder = await reassign(client, "r", 1, [3])  # already there: completes at once
    assert reorder.responses[0].partitions[0].error_code == ErrorCode.none and not cluster.state.reassignments


async def test_background_ticker_finishes_reassignments():
    async with FakeClusterDouble(brokers=2, tick_interval=0.01, reassignment_step_bytes=5 * MIB) as cluster:
        cluster.create_topic("r", assignments=[[1]])
        cluster.state.reassign(cluster.state.topics["r"], cluster.partition("r", 0), [2])
        for _ in range(500):
            if not cluster.state.reassignments:
                break
            await asyncio.sleep(0.01)
        assert cluster.partition("r", 0).replicas == [2]


# ------------------------------------------------------- elections and brokers
async def test_broker_down_moves_leaders_and_elect_restores_preferred(client, cluster):
    cluster.create_topic("e", partitions=2, assignments=[[1, 2], [2, 1]])
    cluster.create_topic("solo", partitions=1, assignments=[[1]])
    await cluster.stop_broker(1)
    client.forget(1)
    md = await metadata(client, ["e", "solo"], broker=2)
    assert sorted(b.node_id for b in md.brokers) == [2, 3]
    e, solo = md.topics
    assert [p.leader_id for p in e.partitions] == [2, 2]
    assert [list(p.offline_replicas) for p in e.partitions] == [[1], [1]]
    assert [list(p.isr_nodes) for p in e.partitions] == [[2], [2]]
    assert solo.partitions[0].leader_id == -1 and solo.partitions[0].error_code == ErrorCode.leader_not_available
    with pytest.raises(OSError):
        await asyncio.open_connection(*cluster.address(1))

    _, codes = await elect(client, {"e": [0]}, broker=2)
    assert codes == {("e", 0): ErrorCode.preferred_leader_not_available}

    await cluster.start_broker(1)
    assert cluster.partition("solo", 0).leader == 1
    assert sorted(cluster.partition("e", 0).isr) == [1, 2]
    response, codes = await elect(client, {"e": [0, 1, 7], "ghost": [0]})
    assert codes == {
        ("e", 0): ErrorCode.none,
        ("e", 1): ErrorCode.election_not_needed,
        ("e", 7): ErrorCode.unknown_topic_or_partition,
        ("ghost", 0): ErrorCode.unknown_topic_or_partition,
    }
    assert cluster.partition("e", 0).leader == 1
    response, codes = await elect(client, None)
    assert codes == {}  # every leader is preferred: no partition reported (KRaft)...
    assert {r.topic for r in response.replica_election_results} == {"e", "solo"}  # ...but every topic is
    await cluster.stop_broker(2)
    await cluster.start_broker(2)
    _, codes = await elect(client, None)
    assert codes == {("e", 1): ErrorCode.none}


async def test_zk_controller_moves_when_its_broker_stops(zk_cluster):
    assert zk_cluster.controller_id == 1
    await zk_cluster.stop_broker(1)
    assert zk_cluster.controller_id == 2
    await zk_cluster.start_broker(1)
    assert zk_cluster.controller_id == 2 and zk_cluster.live_brokers == (1, 2, 3)


# ---------------------------------------------------------------------- faults
async def test_fault_not_controller_then_recovers(client, cluster):
    cluster.inject(FaultDouble.not_controller(count=2))
    for _ in range(2):
        assert (await create(client, topic("f")))["f"].error_code == ErrorCode.not_controller
    assert "f" not in cluster.state.topics
    assert (await create(client, topic("f")))["f"].error_code == ErrorCode.none
    assert len(cluster.fired_faults) == 2 and cluster.pending_faults == []


async def test_fault_not_controller_moves_the_zk_controller(zk_client, zk_cluster):
    zk_cluster.inject(FaultDouble.not_controller(move_controller=True))
    assert (await create(zk_client, topic("f"), broker=1))["f"].error_code == ErrorCode.not_controller
    assert zk_cluster.controller_id == 2
    assert (await metadata(zk_client, [], broker=1)).controller_id == 2
    assert (await create(zk_client, topic("f"), broker=2))["f"].error_code == ErrorCode.none


async def test_fault_timed_out_after_apply(client, cluster):
    cluster.inject(FaultDouble.timed_out_after_apply(api_keys=[CREATE_TOPICS]))
    assert (await create(client, topic("t")))["t"].error_code == ErrorCode.request_timed_out
    assert "t" in cluster.state.topics
    assert (await create(client, topic("t")))["t"].error_code == ErrorCode.topic_already_exists


async def test_fault_throttled_new_and_old_versions(client, cluster):
    cluster.inject(FaultDouble.throttled(throttle_ms=5, allow_items=1))
    body = {"topics": [topic("a"), topic("b")], "timeout": timedelta(seconds=5), "validate_only": False}
    response = await client.call(CREATE_TOPICS, 7, body)
    assert response.throttle_time == timedelta(milliseconds=5)
    assert [t.error_code for t in response.topics] == [ErrorCode.none, ErrorCode.throttling_quota_exceeded]
    assert set(cluster.state.topics) == {"a"}
    cluster.inject(FaultDouble.throttled(throttle_ms=5))
    old = await client.call(CREATE_TOPICS, 5, {**body, "topics": [topic("b")]})
    assert old.topics[0].error_code == ErrorCode.none and old.throttle_time == timedelta(milliseconds=5)
    cluster.inject(FaultDouble.throttled(throttle_ms=5))
    deleted = await client.call(DELETE_TOPICS, 6, {"topics": [{"name": "a", "topic_id": None}],
                                                   "timeout": timedelta(seconds=5)})
    assert deleted.responses[0].error_code == ErrorCode.throttling_quota_exceeded


@pytest.mark.parametrize("after_apply", [False, True])
async def test_fault_drop_connection(client, cluster, after_apply):
    cluster.inject(FaultDouble.drop_connection(after_apply=after_apply, api_keys=[CREATE_TOPICS]))
    conn = await client.fresh()
    conn.send(CREATE_TOPICS, 7, {"topics": [topic("d")], "timeout": timedelta(seconds=5), "validate_only": False})
    assert await conn.closed_by_server()
    await conn.close()
    assert ("d" in cluster.state.topics) is after_apply
    assert cluster.count(CREATE_TOPICS) == 1


async def test_fault_slow_keeps_pipelined_order(client, cluster):
    cluster.inject(FaultDouble.slow(0.05, api_keys=[CREATE_TOPICS]))
    conn = await client.conn()
    conn.send(CREATE_TOPICS, 7, {"topics": [topic("s")], "timeout": timedelta(seconds=5), "validate_only": False})
    conn.send(METADATA, 12, {"topics": [{"name": "s", "topic_id": None}], "allow_auto_topic_creation": False,
                             "include_topic_authorized_operations": False})
    created, md = await conn.receive(), await conn.receive()
    assert created.topics[0].error_code == ErrorCode.none
    assert md.topics[0].error_code == ErrorCode.none  # processed after the slow create
    assert [f.kind.value for f, _, _ in cluster.fired_faults] == ["slow"]


async def test_fault_filters_by_broker(client, cluster):
    cluster.inject(FaultDouble.not_controller(count=None, broker_id=2))
    assert (await create(client, topic("a"), broker=2))["a"].error_code == ErrorCode.not_controller
    assert (await create(client, topic("a"), broker=1))["a"].error_code == ErrorCode.none
    cluster.clear_faults()
    assert (await create(client, topic("b"), broker=2))["b"].error_code == ErrorCode.none


async def test_record_limit_policy_violation(client, cluster):
    huge = await create(client, topic("big", 10_000), topic("small"))  # 10,001 + 2 records
    assert {t.error_code for t in huge.values()} == {ErrorCode.policy_violation}
    assert not cluster.state.topics
    exact = await create(client, topic("big", 9_999))  # exactly 10,000 records
    assert exact["big"].error_code == ErrorCode.none


async def test_record_limit_is_configurable_and_counts_configs(make_client):
    async with FakeClusterDouble(brokers=1, tick_interval=None, record_limit=3) as cluster:
        client = make_client(cluster)
        configs = await create(client, topic("c", 1, 1, {"retention.ms": "1", "segment.ms": "1"}))  # 4 records
        assert configs["c"].error_code == ErrorCode.policy_violation
        assert (await create(client, topic("c", 1, 1, {"retention.ms": "1"})))["c"].error_code == ErrorCode.none
        keys = ("retention.ms", "segment.ms", "flush.ms", "retention.bytes")
        alter = await alter_configs(client, TOPIC, "c", [(k, 0, "1") for k in keys])
        assert alter.error_code == ErrorCode.policy_violation
        assert cluster.state.topics["c"].configs == {"retention.ms": "1"}


async def test_create_response_without_configs(make_client):
    async with FakeClusterDouble(brokers=1, tick_interval=None, configs_in_create_response=False) as cluster:
        result = (await create(make_client(cluster), topic("q", 2)))["q"]
        assert (result.error_code, result.num_partitions, result.configs) == (ErrorCode.none, 2, None)
        assert result.topic_config_error_code == ErrorCode.topic_authorization_failed


# ---------------------------------------------------------------- log dirs etc.
async def test_describe_log_dirs_reports_sizes_for_the_answering_broker(client, cluster):
    cluster.create_topic("l", partitions=2, assignments=[[1, 2], [2, 3]])
    cluster.set_partition_size("l", 123, partition=1)
    on2 = await log_dirs(client, 2)
    assert {k: v.partition_size for k, v in on2.items()} == {("l", 0): 10 * MIB, ("l", 1): 123}
    assert set(await log_dirs(client, 1)) == {("l", 0)}
    response = await client.call(DESCRIBE_LOG_DIRS, 1, {"topics": [{"topic": "l", "partitions": [1]}]}, 3)
    assert response.results[0].log_dir == "/var/lib/kafka/data"
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in response.results[0].topics] == [("l", [1])]


async def test_request_log_counts_batches(client, cluster):
    await create(client, topic("a"), topic("b"), topic("c"))
    await metadata(client, ["a"])
    assert cluster.count(CREATE_TOPICS) == 1 and cluster.items(CREATE_TOPICS) == 3
    assert cluster.count(METADATA, broker_id=1) == 1 and cluster.count(METADATA, broker_id=2) == 0
    record = next(r for r in cluster.requests if r.api_key == CREATE_TOPICS)
    assert (record.api_version, record.broker_id, record.client_id) == (7, 1, "test")


async def test_ten_thousand_topics_in_batches_with_pipelining(client, cluster):
    conn = await client.conn()
    names = [f"topic-{i:05d}" for i in range(10_000)]
    batches = [names[i : i + 1000] for i in range(0, len(names), 1000)]
    for batch in batches:  # pipelined: all sent before any response is read
        conn.send(CREATE_TOPICS, 7, {"topics": [topic(n, 3, 2) for n in batch], "timeout": timedelta(seconds=30),
                                     "validate_only": False})
    for _ in batches:
        response = await conn.receive()
        assert {t.error_code for t in response.topics} == {ErrorCode.none}
    md = await metadata(client, None)
    assert len(md.topics) == 10_000 and all(p.leader_id > 0 for t in md.topics for p in t.partitions)
    for batch in batches:
        conn.send(DELETE_TOPICS, 6, {"topics": [{"name": n, "topic_id": None} for n in batch],
                                     "timeout": timedelta(seconds=30)})
    for _ in batches:
        assert {r.error_code for r in (await conn.receive()).responses} == {ErrorCode.none}
    assert not cluster.state.topics
    assert cluster.count(CREATE_TOPICS) == 10 and cluster.items(DELETE_TOPICS) == 10_000


# ------------------------------------------------------------------------ SASL
class _Session:
    def __init__(self) -> None:
        self.authenticated = False

    def handle(self, api_key: int, version: int, body: Any) -> Any:
        if api_key == 17:
            return build(response_class(17, version), {"error_code": ErrorCode.none, "mechanisms": ["PLAIN"]})
        ok = body.auth_bytes == b"\0alice\0secret"
        self.authenticated = ok
        return build(
            response_class(36, version),
            {"error_code": ErrorCode.none if ok else ErrorCode.sasl_authentication_failed,
             "error_message": None if ok else "Authentication failed", "auth_bytes": b"",
             "session_lifetime": timedelta(0)},
        )


class _Sasl:
    def new_session(self) -> _Session:
        return _Session()


async def test_sasl_gates_requests_until_authenticated(make_client):
    async with FakeClusterDouble(brokers=1, tick_interval=None, sasl=_Sasl()) as cluster:
        client = make_client(cluster)
        versions = await client.call(API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"})
        assert {17, 36} <= {k.api_key for k in versions.api_keys}
        early = await client.fresh()
        early.send(METADATA, 12, {"topics": [], "allow_auto_topic_creation": False,
                                  "include_topic_authorized_operations": False})
        assert await early.closed_by_server()
        await early.close()
        bad = await client.fresh()
        await bad.call(17, 1, {"mechanism": "PLAIN"})
        failed = await bad.call(36, 2, {"auth_bytes": b"\0alice\0wrong"})
        assert failed.error_code == ErrorCode.sasl_authentication_failed
        assert await bad.closed_by_server()
        await bad.close()
        conn = await client.conn()
        assert (await conn.call(17, 1, {"mechanism": "PLAIN"})).mechanisms == ("PLAIN",)
        assert (await conn.call(36, 2, {"auth_bytes": b"\0alice\0secret"})).error_code == ErrorCode.none
        assert (await metadata(client, [])).cluster_id == cluster.cluster_id


# ------------------------------------------------------------------------- TLS
@pytest.mark.skipif(not shutil.which("openssl"), reason="needs the openssl command to make a certificate")
async def test_tls_listener(tmp_path):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(cert, key)
    client_ctx = ssl.create_default_context(cafile=str(cert))
    async with FakeClusterDouble(brokers=1, tick_interval=None, ssl_context=server_ctx) as cluster:
        reader, writer = await asyncio.open_connection(*cluster.address(1), ssl=client_ctx)
        request = build(request_class(API_VERSIONS, 3), {"client_software_name": "t", "client_software_version": "1"})
        writer.write(encode_request(request, 1, "test"))
        size = int.from_bytes(await reader.readexactly(4), "big")
        assert decode_response(await reader.readexactly(size), API_VERSIONS, 3).error_code == ErrorCode.none
        writer.close()


# ------------------------------------------------------------------ dev-cluster
def _kafkaops() -> list[str]:
    script = Path(sys.executable).with_name("kafkaops")
    return [str(script)] if script.exists() else [sys.executable, "-m", "kafkaops.cli.main"]


async def test_dev_cluster_command_runs_and_stops_on_sigterm():
    proc = subprocess.Popen(
        [*_kafkaops(), "dev-cluster", "--brokers", "2", "--port", "0", "--racks", "a,b", "--mode", "zk"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = await asyncio.wait_for(asyncio.to_thread(proc.stdout.readline), timeout=20)
        addresses = line.strip().split(",")
        assert len(addresses) == 2 and all(a.startswith("127.0.0.1:") for a in addresses)
        host, port = addresses[1].split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        request = build(request_class(METADATA, 12), {"topics": [], "allow_auto_topic_creation": False,
                                                      "include_topic_authorized_operations": False})
        writer.write(encode_request(request, 1, "test"))
        size = int.from_bytes(await reader.readexactly(4), "big")
        md = decode_response(await reader.readexactly(size), METADATA, 12)
        assert sorted(b.rack for b in md.brokers) == ["a", "b"] and md.controller_id == 1
        writer.close()
        os.kill(proc.pid, signal.SIGTERM)
        assert await asyncio.wait_for(asyncio.to_thread(proc.wait), timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
