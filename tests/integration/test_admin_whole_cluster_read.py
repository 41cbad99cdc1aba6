"""describe_topics names its topics, or asks for every topic when they are most of the cluster.

Naming 5,000 topics costs more to encode than the answer for the whole cluster costs beyond them (a
first apply's wait): the admin client counts the cluster's topics when an answer lists all
of them, keeps the count with its own creates and deletes, and asks for every topic when the names
are at least WHOLE_CLUSTER_SHARE of it. The answers must be the same either way.
"""

from __future__ import annotations

import pytest

from kafkaops.kafka import AdminClient, NewTopic
from kafkaops.kafka.admin import WHOLE_CLUSTER_SHARE
from kafkaops.kafka.apis import Api
from kafkaops.testing.fake_cluster import FakeClusterDouble

METADATA = int(Api.METADATA)


@pytest.fixture
async def cluster():
    async with FakeClusterDouble(brokers=1, tick_interval=None) as double:
        yield double


def metadata_items(cluster: FakeClusterDouble) -> list[int]:
    """The topics named in each Metadata request served since the last clear (0: every topic)."""
    return [r.items for r in cluster.requests if r.api_key == METADATA]


async def create(admin: AdminClient, names: list[str]) -> None:
    created = await admin.create_topics([NewTopic(n, 2, 1) for n in names])
    assert created.all_ok, created.failed()


async def test_most_of_the_cluster_is_one_request_for_every_topic_with_the_same_answers(cluster):
    names = [f"t{i}" for i in range(10)]
    async with AdminClient.connect(cluster.bootstrap) as admin:
        await create(admin, names)
        await admin.metadata(None)  # counted: 10 topics
        cluster.clear_requests()
        asked = [*names[:9], "missing"]
        results = await admin.describe_topics(asked)
        assert metadata_items(cluster) == [0]

    async with AdminClient.connect(cluster.bootstrap) as named:  # never counted: names them
        cluster.clear_requests()
        reference = await named.describe_topics(asked)
        assert metadata_items(cluster) == [len(asked)]

    assert list(results) == asked
    for name in names[:9]:
        info = results[name].value
        assert info is not None and info == reference[name].value and len(info.partitions) == 2
    assert results["missing"].error is not None and results["missing"].error.name == "UNKNOWN_TOPIC_OR_PARTITION"
    assert results["missing"].error.name == reference["missing"].error.name


async def test_a_few_topics_of_a_large_cluster_are_named(cluster):
    names = [f"t{i}" for i in range(20)]
    async with AdminClient.connect(cluster.bootstrap) as admin:
        await create(admin, names)
        await admin.metadata(None)
        few = names[: int(WHOLE_CLUSTER_SHARE * len(names)) - 1]
        cluster.clear_requests()
        results = await admin.describe_topics(few)
        assert metadata_items(cluster) == [len(few)]
        assert all(results[n].ok for n in few)


async def test_the_count_follows_this_clients_creates_and_deletes(cluster):
    async with AdminClient.connect(cluster.bootstrap) as admin:
        await admin.metadata(None)  # an empty cluster: 0 topics
        names = [f"t{i}" for i in range(10)]
        await create(admin, names)  # 10 now: two of them are a few
        cluster.clear_requests()
        assert all(r.ok for r in (await admin.describe_topics(names[:2])).values())
        assert metadata_items(cluster) == [2]

        deleted = await admin.delete_topics(names[1:])  # 1 left: it is the whole cluster
        assert deleted.all_ok
        cluster.clear_requests()
        results = await admin.describe_topics([names[0]])
        assert metadata_items(cluster) == [0]
        assert results[names[0]].ok


async def test_a_stale_count_costs_a_larger_answer_never_a_wrong_one(cluster):
    async with AdminClient.connect(cluster.bootstrap) as admin, AdminClient.connect(cluster.bootstrap) as other:
        await create(admin, ["a", "b"])
        await admin.metadata(None)  # counted: 2
        late = [f"late{i}" for i in range(30)]
        await create(other, late)  # this client does not know of them
        cluster.clear_requests()
        results = await admin.describe_topics(["a", "late7"])  # 2 names >= the count: every topic
        assert metadata_items(cluster) == [0]
        assert results["a"].ok and results["late7"].ok and len(results["late7"].value.partitions) == 2
        await admin.metadata(None)  # counted again: 32
        cluster.clear_requests()
        await admin.describe_topics(["a", "late7"])
        assert metadata_items(cluster) == [2]
