"""Against a real Kafka cluster the user supplies; visibly skipped otherwise.

    KAFKAOPS_TEST_BOOTSTRAP=broker:9092 [KAFKAOPS_TEST_COMMAND_CONFIG=client.properties] make test
"""

import os

import pytest

from kafkaops.kafka import AdminClient, ConfigResource, NewPartitions, NewTopic

pytestmark = pytest.mark.real_cluster


async def test_topic_lifecycle_on_a_real_cluster(real_cluster_bootstrap, unique):
    properties = os.environ.get("KAFKAOPS_TEST_COMMAND_CONFIG")
    async with AdminClient.connect(real_cluster_bootstrap, properties=properties) as admin:
        name = f"kafkaops-test-{unique}"
        created = await admin.create_topics([NewTopic(name, 2, 1, {"retention.ms": "60000"})])
        assert created[name].ok, created[name].error
        try:
            grown = await admin.create_partitions([NewPartitions(name, 3)])
            assert grown[name].ok, grown[name].error
            entries = (await admin.describe_configs([ConfigResource.topic(name)]))[ConfigResource.topic(name)].value
            assert entries["retention.ms"].value == "60000"
        finally:
            deleted = await admin.delete_topics([name])
            assert deleted[name].ok, deleted[name].error
