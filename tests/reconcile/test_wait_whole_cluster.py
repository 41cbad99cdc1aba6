"""A first apply's wait asks one Metadata for every topic (its topics are most of the cluster), as the
admin client decides (`AdminClient.describe_topics`); a wait for a few topics of a counted cluster,
or on a client that never counted, names them. The outcomes are the same."""

from __future__ import annotations

from kafkaops.kafka import AdminClient, Batcher, NewTopic
from kafkaops.kafka.apis import Api
from kafkaops.reconcile import Engine, RunOptions, State
from kafkaops.reconcile.settings import EngineSettings
from kafkaops.testing.fake_cluster import FakeClusterDouble

from engine_helpers import desired, topic

METADATA = int(Api.METADATA)


async def apply_new_topics(count: int, existing: int, options: RunOptions) -> tuple[list[int], list]:
    """Apply `count` new topics on a cluster holding `existing` others: the topics named by each
    Metadata the apply sent (0: every topic), and the outcomes."""
    async with FakeClusterDouble(brokers=1, tick_interval=None) as cluster:
        async with AdminClient.connect(cluster.bootstrap) as admin:
            if existing:
                await admin.create_topics([NewTopic(f"other-{i}", 1, 1, {}) for i in range(existing)])
            engine = Engine(Batcher(admin, linger=0.0), cluster="dev", settings=EngineSettings(wait_poll_min=0.01))
            planned = await engine.plan(desired(*(topic(f"new-{i}", 2, 1) for i in range(count))), options)
            cluster.clear_requests()
            report = await engine.apply(planned, options)
            return [r.items for r in cluster.requests if r.api_key == METADATA], list(report.outcomes)


def led_partitions(outcomes) -> dict[str, int]:
    assert all(o.state is State.APPLIED for o in outcomes), [(o.name, o.state, o.problem) for o in outcomes]
    return {o.name: len(o.led.partitions) for o in outcomes}


async def test_a_first_apply_waits_with_one_metadata_for_every_topic():
    # the CLI's run reads every topic (RunOptions' default), so the client has counted the cluster
    asked, outcomes = await apply_new_topics(20, existing=2, options=RunOptions())
    assert asked and set(asked) == {0}, asked
    assert led_partitions(outcomes) == {f"new-{i}": 2 for i in range(20)}


async def test_a_wait_for_a_few_topics_of_a_counted_cluster_names_them():
    asked, outcomes = await apply_new_topics(3, existing=30, options=RunOptions())
    assert asked and set(asked) == {3}, asked
    assert led_partitions(outcomes) == {f"new-{i}": 2 for i in range(3)}


async def test_a_client_that_never_counted_names_them():
    # the operator's reconciles read only their own topics: nothing counted the cluster
    asked, outcomes = await apply_new_topics(20, existing=2, options=RunOptions(all_topics=False))
    assert asked and set(asked) == {20}, asked
    assert led_partitions(outcomes) == {f"new-{i}": 2 for i in range(20)}
