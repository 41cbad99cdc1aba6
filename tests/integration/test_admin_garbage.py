"""The admin client's answers are freed by reference counting: nothing it builds for one call is
left in a reference cycle holding the results (a whole Metadata answer at 10,000 topics), which
would wait for a full collection of the operator's heap (docs/benchmarks.md, the operator at
10,000 KafkaTopics, 2026-11-26 third session)."""

from __future__ import annotations

import gc

import pytest
from garbage_helpers import cyclic_garbage

from kafkaops.kafka import AdminClient, NewTopic
from kafkaops.kafka.models import PartitionInfo, TopicInfo
from kafkaops.testing.fake_cluster import FakeClusterDouble


@pytest.fixture
async def admin():
    async with FakeClusterDouble(brokers=3, tick_interval=None) as double:
        async with AdminClient.connect(double.bootstrap, retry_backoff=0.01) as client:
            yield client


async def test_a_metadata_answer_is_not_left_in_a_cycle(admin) -> None:
    created = await admin.create_topics([NewTopic(f"garbage-{i}", 3, 1) for i in range(20)])
    assert created.all_ok, created.failed()
    gc.collect()
    gc.disable()
    try:
        for _ in range(3):
            described = await admin.describe_topics([f"garbage-{i}" for i in range(20)])
            assert sum(len(r.value.partitions) for r in described.values()) == 60
            del described
        assert cyclic_garbage((TopicInfo, PartitionInfo)) == 0, "the answers wait for the cyclic collector"
    finally:
        gc.enable()
