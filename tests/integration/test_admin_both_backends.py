"""The admin client against both backends: noida-db (a real, independently
written Kafka-protocol server) and the fake cluster double configured like it
(one broker, no authorizer, no reassignment or election APIs). Running the same
assertions on both keeps the double honest."""

from __future__ import annotations

import asyncio

import pytest

from kafkaops.kafka import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermission,
    AdminClient,
    AlterConfigOp,
    AlterOp,
    Batcher,
    ConfigResource,
    ConfigSource,
    KafkaRequestError,
    NewPartitions,
    NewTopic,
    PatternType,
    ResourceType,
    TopicPartition,
    UnsupportedFeature,
)



@pytest.fixture
async def admin(server):
    async with AdminClient.connect(server[0], linger=0.02) as client:
        yield client


async def test_connect_reads_cluster_metadata(admin, server):
    meta = admin.cached_metadata
    assert meta.cluster_id and meta.controller_id in meta.brokers
    broker = meta.brokers[meta.controller_id]
    assert (broker.host, broker.port) == server[1:]
    described = await admin.describe_cluster()
    assert described.cluster_id == meta.cluster_id and set(described.brokers) == set(meta.brokers)
    versions = await admin.api_versions()
    assert versions[19][1] >= 5


async def test_create_topics_gives_per_item_results(admin, unique):
    results = await admin.create_topics(
        [
            NewTopic(f"{unique}.orders", partitions=3, replication_factor=1, configs={"retention.ms": "60000"}),
            NewTopic(f"{unique} bad!", partitions=1, replication_factor=1),
            NewTopic(f"{unique}.toomany", partitions=1, replication_factor=3),
            NewTopic(f"{unique}.badconfig", partitions=1, replication_factor=1, configs={"no.such.key": "1"}),
        ]
    )
    assert results[f"{unique}.orders"].ok
    assert results[f"{unique}.orders"].value.partitions == 3
    assert results[f"{unique} bad!"].error.name == "INVALID_TOPIC_EXCEPTION"
    assert results[f"{unique}.toomany"].error.name == "INVALID_REPLICATION_FACTOR"
    assert results[f"{unique}.badconfig"].error.name == "INVALID_CONFIG"
    again = await admin.create_topics([NewTopic(f"{unique}.orders", partitions=3, replication_factor=1)])
    assert again[f"{unique}.orders"].error.name == "TOPIC_ALREADY_EXISTS"

    topics = await admin.describe_topics([f"{unique}.orders", f"{unique}.missing"])
    info = topics[f"{unique}.orders"].value
    assert len(info.partitions) == 3 and info.all_led and info.replication_factor == 1
    assert topics[f"{unique}.missing"].error.name == "UNKNOWN_TOPIC_OR_PARTITION"


async def test_duplicates_in_one_call_collapse_to_the_last(admin, unique):
    name = f"{unique}.dup"
    results = await admin.create_topics([NewTopic(name, 1, 1), NewTopic(name, 4, 1)])
    assert list(results) == [name] and results[name].ok
    assert len((await admin.describe_topics([name]))[name].value.partitions) == 4


async def test_validate_only_creates_nothing(admin, unique):
    results = await admin.create_topics([NewTopic(f"{unique}.v", 2, 1)], validate_only=True)
    assert results[f"{unique}.v"].ok
    assert (await admin.describe_topics([f"{unique}.v"]))[f"{unique}.v"].error is not None


async def test_explicit_replica_assignment(admin, unique):
    name = f"{unique}.assigned"
    results = await admin.create_topics([NewTopic(name, replica_assignment=[[1], [1]])])
    assert results[name].ok, results[name].error
    info = (await admin.describe_topics([name]))[name].value
    assert [p.replicas for p in info.partitions] == [(1,), (1,)]


async def test_delete_topics(admin, unique):
    await admin.create_topics([NewTopic(f"{unique}.gone", 1, 1)])
    results = await admin.delete_topics([f"{unique}.gone", f"{unique}.never"])
    assert results[f"{unique}.gone"].ok
    assert results[f"{unique}.never"].error.name == "UNKNOWN_TOPIC_OR_PARTITION"
    meta = await admin.metadata()
    assert f"{unique}.gone" not in meta.topics


async def test_create_partitions(admin, unique):
    name = f"{unique}.grow"
    await admin.create_topics([NewTopic(name, 2, 1)])
    results = await admin.create_partitions(
        [NewPartitions(name, 5), NewPartitions(f"{unique}.none", 3)]
    )
    assert results[name].ok
    assert results[f"{unique}.none"].error.name == "UNKNOWN_TOPIC_OR_PARTITION"
    shrink = await admin.create_partitions([NewPartitions(name, 1)])
    assert shrink[name].error.name == "INVALID_PARTITIONS"
    assert len((await admin.describe_topics([name]))[name].value.partitions) == 5
    check = await admin.create_partitions([NewPartitions(name, 9)], validate_only=True)
    assert check[name].ok
    assert len((await admin.describe_topics([name]))[name].value.partitions) == 5


async def test_describe_and_alter_configs(admin, unique):
    name = f"{unique}.cfg"
    await admin.create_topics([NewTopic(name, 1, 1, {"retention.ms": "60000"})])
    resource = ConfigResource.topic(name)
    described = await admin.describe_configs([resource], include_synonyms=True)
    entries = described[resource].value
    assert entries["retention.ms"].value == "60000"
    assert entries["retention.ms"].source is ConfigSource.DYNAMIC_TOPIC_CONFIG
    assert entries["cleanup.policy"].is_default

    results = await admin.incremental_alter_configs(
        {resource: [AlterConfigOp("retention.ms", None, AlterOp.DELETE), AlterConfigOp("segment.ms", "3600000")]}
    )
    assert results[resource].ok
    entries = (await admin.describe_configs([resource], keys=["retention.ms", "segment.ms"]))[resource].value
    assert set(entries) == {"retention.ms", "segment.ms"}
    assert entries["retention.ms"].is_default and entries["segment.ms"].value == "3600000"

    bad = await admin.incremental_alter_configs(
        {resource: [AlterConfigOp("no.such.key", "1")], ConfigResource.topic(f"{unique}.missing"): [AlterConfigOp("segment.ms", "1")]}
    )
    assert bad[resource].error.name == "INVALID_CONFIG"
    assert bad[ConfigResource.topic(f"{unique}.missing")].error is not None


async def test_broker_configs(admin):
    broker = ConfigResource.broker(admin.cached_metadata.controller_id)
    described = await admin.describe_configs([broker])
    assert described[broker].ok and described[broker].value


async def test_describe_log_dirs(admin, unique):
    name = f"{unique}.logs"
    await admin.create_topics([NewTopic(name, 2, 1)])
    dirs = await admin.describe_log_dirs()
    (broker_id,) = dirs
    replicas = {r.partition for d in dirs[broker_id].value for r in d.replicas}
    assert TopicPartition(name, 0) in replicas and TopicPartition(name, 1) in replicas


async def test_acl_calls_report_security_disabled_per_item(admin):
    binding = AclBinding(ResourceType.TOPIC, "x", PatternType.LITERAL, "User:a", "*", AclOperation.READ, AclPermission.ALLOW)
    created = await admin.create_acls([binding])
    assert created[binding].error.name == "SECURITY_DISABLED"
    with pytest.raises(KafkaRequestError) as info:
        await admin.describe_acls(AclBindingFilter())
    assert info.value.error.name == "SECURITY_DISABLED"
    deleted = await admin.delete_acls([AclBindingFilter.exact(binding)])
    assert deleted[AclBindingFilter.exact(binding)].error.name == "SECURITY_DISABLED"


@pytest.mark.parametrize(
    "call",
    [
        lambda a: a.list_partition_reassignments(),
        lambda a: a.alter_partition_reassignments({TopicPartition("x", 0): [1]}),
        lambda a: a.elect_leaders([TopicPartition("x", 0)]),
    ],
    ids=["ListPartitionReassignments", "AlterPartitionReassignments", "ElectLeaders"],
)
async def test_apis_noida_lacks_give_unsupported_feature(admin, call):
    with pytest.raises(UnsupportedFeature) as info:
        await asyncio.wait_for(call(admin), timeout=30)
    assert info.value.broker_range is None and info.value.api in str(info.value)


async def test_batcher_coalesces_concurrent_callers(admin, unique):
    batcher = Batcher(admin)
    before = dict(admin.requests_by_api)
    names = [f"{unique}.b{i}" for i in range(300)]
    results = await asyncio.gather(*(batcher.create_topic(NewTopic(n, 1, 1)) for n in names))
    assert all(r.ok for r in results)
    sent = admin.requests_by_api["CreateTopics"] - before.get("CreateTopics", 0)
    assert sent <= 3
    deleted = await asyncio.gather(*(batcher.delete_topic(n) for n in names))
    assert all(r.ok for r in deleted)
    assert admin.requests_by_api["DeleteTopics"] - before.get("DeleteTopics", 0) <= 3


async def test_batched_describe_configs_asks_each_caller_only_for_its_keys(admin, unique):
    a, b = f"{unique}.keys-a", f"{unique}.keys-b"
    await admin.create_topics([NewTopic(a, 1, 1, {"retention.ms": "1000"}), NewTopic(b, 1, 1)])
    batcher = Batcher(admin, linger=0.05)
    before = admin.requests_by_api.get("DescribeConfigs", 0)
    only_retention, everything, only_segment = await asyncio.gather(
        batcher.describe_configs(ConfigResource.topic(a), frozenset({"retention.ms"})),
        batcher.describe_configs(ConfigResource.topic(a)),
        batcher.describe_configs(ConfigResource.topic(b), frozenset({"segment.ms"})),
    )
    assert admin.requests_by_api["DescribeConfigs"] - before == 1
    assert set(only_retention.value) == {"retention.ms"} and only_retention.value["retention.ms"].value == "1000"
    assert {"retention.ms", "segment.ms", "cleanup.policy"} <= set(everything.value)
    assert set(only_segment.value) == {"segment.ms"}
