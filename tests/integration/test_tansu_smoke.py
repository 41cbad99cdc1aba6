"""Smoke tests against Tansu, a second independent Kafka-protocol server.

Tansu validates little (no CreatePartitions, loose CreateTopics checks), so
only the basic path is checked here; noida-db carries the detailed tests.
"""

import pytest

from kafkaops.kafka import AdminClient, NewTopic

pytestmark = pytest.mark.tansu


async def test_connect_create_describe_delete(tansu, unique):
    async with AdminClient.connect(tansu.bootstrap) as admin:
        meta = admin.cached_metadata
        assert meta.brokers and meta.controller_id in meta.brokers
        name = f"{unique}.smoke"
        created = await admin.create_topics([NewTopic(name, partitions=2, replication_factor=1)])
        assert created[name].ok, created[name].error
        info = (await admin.describe_topics([name]))[name].value
        assert info is not None and len(info.partitions) == 2
        deleted = await admin.delete_topics([name])
        assert deleted[name].ok, deleted[name].error
