"""What only the fake cluster double offers: several brokers and racks, ACLs,
reassignments with progress, preferred leader election, SASL end to end."""

from __future__ import annotations

import pytest

from kafkaops.kafka import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermission,
    AdminClient,
    AuthenticationFailed,
    ConfigResource,
    NewTopic,
    PatternType,
    ResourceType,
    SecuritySettings,
    TopicPartition,
)
from kafkaops.testing.fake_cluster import FakeClusterDouble
from kafkaops.testing.sasl_double import SaslServerDouble


def binding(name, op=AclOperation.READ, pattern=PatternType.LITERAL, principal="User:orders", rtype=ResourceType.TOPIC):
    return AclBinding(rtype, name, pattern, principal, "*", op, AclPermission.ALLOW)


@pytest.fixture
async def cluster():
    async with FakeClusterDouble(brokers=3, racks=["a", "b", "c"], tick_interval=None) as double:
        yield double


@pytest.fixture
async def admin(cluster):
    async with AdminClient.connect(cluster.bootstrap, retry_backoff=0.01) as client:
        yield client


async def test_brokers_racks_and_controller(admin, cluster):
    described = await admin.describe_cluster()
    assert sorted(described.brokers) == sorted(cluster.brokers)
    assert {b.rack for b in described.brokers.values()} == {"a", "b", "c"}
    assert described.controller_id in described.brokers


async def test_acls_create_describe_match_delete(admin):
    bindings = [
        binding("orders"),
        binding("orders", AclOperation.WRITE),
        binding("orders.", AclOperation.DESCRIBE, PatternType.PREFIXED),
        binding("payments", principal="User:payments"),
    ]
    created = await admin.create_acls(bindings)
    assert created.all_ok, created.failed()

    mine = await admin.describe_acls(AclBindingFilter(principal="User:orders"))
    assert set(mine) == set(bindings[:3])
    # MATCH finds literal and prefixed bindings that apply to a name.
    matching = await admin.describe_acls(
        AclBindingFilter(ResourceType.TOPIC, "orders.eu", PatternType.MATCH)
    )
    assert set(matching) == {bindings[2]}

    bad = AclBinding(ResourceType.TOPIC, "x", PatternType.MATCH, "User:a", "*", AclOperation.READ, AclPermission.ALLOW)
    results = await admin.create_acls([bad, binding("fine")])
    assert results[bad].error is not None and results[binding("fine")].ok

    deleted = await admin.delete_acls([AclBindingFilter.exact(bindings[0]), AclBindingFilter(principal="User:payments")])
    assert deleted[AclBindingFilter.exact(bindings[0])].value == (bindings[0],)
    assert deleted[AclBindingFilter(principal="User:payments")].value == (bindings[3],)
    left = await admin.describe_acls(AclBindingFilter())
    assert bindings[0] not in left and bindings[1] in left


async def test_reassignment_progresses_and_completes(admin, cluster):
    await admin.create_topics([NewTopic("moving", replica_assignment=[[1], [2]])])
    tp = TopicPartition("moving", 0)
    started = await admin.alter_partition_reassignments({tp: [1, 2, 3]})
    assert started[tp].ok, started[tp].error

    listed = await admin.list_partition_reassignments()
    assert listed[tp].adding == (2, 3) and set(listed[tp].replicas) == {1, 2, 3}
    dirs = await admin.describe_log_dirs([2, 3], [tp])
    futures = [r for b in (2, 3) for d in dirs[b].value for r in d.replicas if r.partition == tp]
    assert futures, "target brokers report the replica being copied"

    cluster.complete_reassignments()
    assert await admin.list_partition_reassignments() == {}
    info = (await admin.describe_topics(["moving"]))["moving"].value
    assert info.partitions[0].replicas == (1, 2, 3)

    cancel = await admin.alter_partition_reassignments({TopicPartition("moving", 1): None})
    assert cancel[TopicPartition("moving", 1)].error.name == "NO_REASSIGNMENT_IN_PROGRESS"
    unknown = await admin.alter_partition_reassignments({tp: [1, 99]})
    assert unknown[tp].error.name == "INVALID_REPLICA_ASSIGNMENT"


async def test_preferred_leader_election(admin, cluster):
    await admin.create_topics([NewTopic("elect", replica_assignment=[[1, 2], [2, 3]])])
    results = await admin.elect_leaders([TopicPartition("elect", 0), TopicPartition("elect", 1)])
    assert {r.error.name for r in results.values()} == {"ELECTION_NOT_NEEDED"}
    everything = await admin.elect_leaders()  # all partitions: only elections needed are reported
    assert all(r.ok or r.error.name == "ELECTION_NOT_NEEDED" for r in everything.values())


async def test_broker_configs_go_to_their_broker(admin, cluster):
    broker = ConfigResource.broker(2)
    described = await admin.describe_configs([broker, ConfigResource.broker()])
    assert described[broker].ok and described[ConfigResource.broker()].ok
    assert any(r.broker_id == 2 and r.api_key == 32 for r in cluster.requests)


async def test_sasl_scram_end_to_end_and_wrong_password():
    sasl = SaslServerDouble({"ops": "s3cr3t-P@ss-e2e"})
    async with FakeClusterDouble(brokers=2, sasl=sasl) as cluster:
        good = SecuritySettings(protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-256", sasl_username="ops", sasl_password="s3cr3t-P@ss-e2e")
        async with AdminClient.connect(cluster.bootstrap, security=good) as admin:
            created = await admin.create_topics([NewTopic("secured", 1, 2)])
            assert created["secured"].ok
        bad = SecuritySettings(protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN", sasl_username="ops", sasl_password="wrong-pass-xyz")
        with pytest.raises(AuthenticationFailed) as info:
            await AdminClient.connect(cluster.bootstrap, security=bad, connect_attempts=1)
        assert "wrong-pass-xyz" not in str(info.value)


async def test_append_and_subtract_on_list_configs(admin):
    from kafkaops.kafka import AlterConfigOp, AlterOp

    await admin.create_topics([NewTopic("listy", 1, 1, {"cleanup.policy": "delete"})])
    resource = ConfigResource.topic("listy")
    appended = await admin.incremental_alter_configs({resource: [AlterConfigOp("cleanup.policy", "compact", AlterOp.APPEND)]})
    assert appended[resource].ok, appended[resource].error
    value = (await admin.describe_configs([resource], keys=["cleanup.policy"]))[resource].value["cleanup.policy"].value
    assert set(value.split(",")) == {"delete", "compact"}
    subtracted = await admin.incremental_alter_configs({resource: [AlterConfigOp("cleanup.policy", "delete", AlterOp.SUBTRACT)]})
    assert subtracted[resource].ok, subtracted[resource].error
    value = (await admin.describe_configs([resource], keys=["cleanup.policy"]))[resource].value["cleanup.policy"].value
    assert value == "compact"
