"""Fault tests on the fake cluster double: the client's retry and routing rules."""

from __future__ import annotations

import asyncio

import pytest

from kafkaops.kafka import AdminClient, KafkaConnectionError, NewPartitions, NewTopic, UnsupportedFeature
from kafkaops.testing.fake_cluster import FakeClusterDouble, FaultDouble

CREATE_TOPICS = 19


def fast(bootstrap: str, **overrides) -> AdminClient:
    settings = dict(retry_backoff=0.01, retry_backoff_max=0.1, request_timeout=2.0, connect_timeout=1.0)
    settings.update(overrides)
    return AdminClient.connect(bootstrap, **settings)


@pytest.mark.parametrize("mode", ["zk", "kraft"])
async def test_controller_moves_mid_batch_and_every_topic_is_created_once(mode):
    async with FakeClusterDouble(brokers=3, mode=mode) as cluster, fast(cluster.bootstrap) as admin:
        cluster.inject(FaultDouble.not_controller(count=1, move_controller=True))
        topics = [NewTopic(f"moved.{i}", 2, 2) for i in range(50)]
        results = await admin.create_topics(topics)
        assert results.all_ok, results.failed()
        meta = await admin.metadata()
        assert {t.name for t in topics} <= set(meta.topics)
        creates = [r for r in cluster.requests if r.api_key == CREATE_TOPICS]
        assert len(creates) == 2  # the refused batch, then exactly one resend
        assert creates[1].items == 50


async def test_only_failed_items_are_resent_after_not_controller():
    async with FakeClusterDouble(brokers=3, mode="zk") as cluster, fast(cluster.bootstrap) as admin:
        old = cluster.controller_id
        await admin.create_topics([NewTopic("before", 1, 1)])
        cluster.move_controller()
        assert cluster.controller_id != old
        results = await admin.create_topics([NewTopic("after.1", 1, 1), NewTopic("after.2", 1, 1)])
        assert results.all_ok
        creates = [r for r in cluster.requests if r.api_key == CREATE_TOPICS]
        assert creates[-1].broker_id == cluster.controller_id


async def test_timeout_after_apply_then_already_exists_counts_as_success():
    async with FakeClusterDouble(brokers=3) as cluster, fast(cluster.bootstrap) as admin:
        cluster.inject(FaultDouble.timed_out_after_apply(count=1))
        results = await admin.create_topics([NewTopic("late", 3, 2)])
        assert results["late"].ok, results["late"].error
        assert results["late"].value.partitions == 3
        assert len([r for r in cluster.requests if r.api_key == CREATE_TOPICS]) == 2


async def test_already_exists_with_another_spec_is_still_an_error():
    async with FakeClusterDouble(brokers=3) as cluster, fast(cluster.bootstrap) as admin:
        await admin.create_topics([NewTopic("taken", 1, 1)])
        cluster.inject(FaultDouble.timed_out_after_apply(count=1))
        results = await admin.create_topics([NewTopic("taken", 5, 1)])
        assert results["taken"].error.name == "TOPIC_ALREADY_EXISTS"


async def test_throttling_waits_then_succeeds():
    async with FakeClusterDouble(brokers=3) as cluster, fast(cluster.bootstrap) as admin:
        cluster.inject(FaultDouble.throttled(throttle_ms=200, count=1, allow_items=2))
        loop = asyncio.get_running_loop()
        start = loop.time()
        results = await admin.create_topics([NewTopic(f"thr.{i}", 1, 1) for i in range(5)])
        assert results.all_ok, results.failed()
        assert loop.time() - start >= 0.2  # the broker's throttle time was honoured
        creates = [r for r in cluster.requests if r.api_key == CREATE_TOPICS]
        assert [c.items for c in creates] == [5, 3]  # only the throttled items were resent


async def test_dropped_connection_after_apply_is_retried_to_success():
    async with FakeClusterDouble(brokers=3) as cluster, fast(cluster.bootstrap) as admin:
        cluster.inject(FaultDouble.drop_connection(after_apply=True, api_keys=[CREATE_TOPICS]))
        results = await admin.create_topics([NewTopic("dropped", 2, 1)])
        assert results["dropped"].ok, results["dropped"].error
        cluster.inject(FaultDouble.drop_connection(after_apply=True, api_keys=[37]))
        grown = await admin.create_partitions([NewPartitions("dropped", 4)])
        assert grown["dropped"].ok, grown["dropped"].error


async def test_slow_response_times_out_and_is_retried():
    async with FakeClusterDouble(brokers=3) as cluster, fast(cluster.bootstrap, request_timeout=0.3) as admin:
        cluster.inject(FaultDouble.slow(delay_s=1.0, after_apply=True, api_keys=[CREATE_TOPICS]))
        results = await admin.create_topics([NewTopic("slow", 1, 1)])
        assert results["slow"].ok, results["slow"].error


async def test_down_broker_gives_a_typed_error_after_bounded_retries():
    async with FakeClusterDouble(brokers=1) as cluster:
        admin = await fast(cluster.bootstrap, retry_attempts=3, connect_attempts=2)
        try:
            await cluster.stop_broker(cluster.brokers[0])
            results = await asyncio.wait_for(admin.create_topics([NewTopic("nowhere", 1, 1)]), timeout=30)
            assert results["nowhere"].error.name == "NETWORK_EXCEPTION"
            assert results["nowhere"].error.retriable
            await cluster.start_broker(cluster.brokers[0])
            again = await asyncio.wait_for(admin.create_topics([NewTopic("nowhere", 1, 1)]), timeout=30)
            assert again["nowhere"].ok, again["nowhere"].error
        finally:
            await admin.close()


async def test_unreachable_bootstrap_raises_connection_error():
    async with FakeClusterDouble(brokers=1) as cluster:
        bootstrap = cluster.bootstrap
    with pytest.raises(KafkaConnectionError):
        await asyncio.wait_for(fast(bootstrap, retry_attempts=2, connect_attempts=1), timeout=30)


async def test_record_limit_splits_requests_so_none_is_refused():
    async with FakeClusterDouble(brokers=3) as cluster, fast(cluster.bootstrap) as admin:
        topics = [NewTopic(f"big.{i}", 50, 1) for i in range(400)]  # 52 records each: 20,800 in all
        results = await admin.create_topics(topics)
        assert results.all_ok, list(results.failed().items())[:3]
        assert len([r for r in cluster.requests if r.api_key == CREATE_TOPICS]) == 3


async def test_the_double_refuses_an_oversized_request_like_kraft():
    async with FakeClusterDouble(brokers=3) as cluster, fast(cluster.bootstrap, max_records_per_request=100_000) as admin:
        results = await admin.create_topics([NewTopic(f"huge.{i}", 50, 1) for i in range(400)])
        assert {e.name for e in results.failed().values()} == {"POLICY_VIOLATION"}
        assert not any(n.startswith("huge.") for n in (await admin.metadata()).topics)


async def test_unsupported_api_is_a_typed_error():
    async with FakeClusterDouble(brokers=3, disabled_apis={45, 46}) as cluster, fast(cluster.bootstrap) as admin:
        with pytest.raises(UnsupportedFeature) as info:
            await admin.list_partition_reassignments()
        assert info.value.api == "ListPartitionReassignments" and info.value.broker_range is None


async def test_not_controller_on_a_reassignment_or_an_election_is_retried_not_lost():
    """Soak: Kafka answers AlterPartitionReassignments and ElectLeaders with NOT_CONTROLLER at the
    top level and lists no partition; the client read that as "no result" (UNKNOWN_SERVER_ERROR, not
    retried) for a reassignment, and as "nothing to elect" for an election of every partition."""
    from kafkaops.kafka import TopicPartition

    async with FakeClusterDouble(brokers=3, mode="zk", tick_interval=None) as cluster, fast(cluster.bootstrap) as admin:
        await admin.create_topics([NewTopic("moving", 1, 1)])
        current = (await admin.metadata(["moving"])).topics["moving"].partitions[0].replicas
        target = tuple(b for b in cluster.brokers if b not in current)[:1] + tuple(current)
        cluster.inject(FaultDouble.not_controller(count=1, api_keys=[45], move_controller=True))
        results = await admin.alter_partition_reassignments({TopicPartition("moving", 0): target})
        assert results.all_ok, results.failed()
        assert TopicPartition("moving", 0) in await admin.list_partition_reassignments()
        cluster.inject(FaultDouble.not_controller(count=1, api_keys=[43], move_controller=True))
        elected = await admin.elect_leaders()
        assert sum(1 for r in cluster.requests if r.api_key == 43) == 2, "the refused election was sent again"
        # the partition's own answer (its new preferred replica is still catching up), not the refusal
        assert {r.error.name for r in elected.values() if r.error}.isdisjoint({"NOT_CONTROLLER", "UNKNOWN_SERVER_ERROR"})
