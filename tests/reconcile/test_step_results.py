"""One typed StepResult per step, from the admin client's ItemResult to the Outcome: what Kafka
answered (CreateTopics' topic id, partitions, replication factor), or the error that stopped the
resource, or why a step was not sent; on the fake cluster double."""

from __future__ import annotations

from kafkaops.kafka import AdminClient, Batcher, NewTopic
from kafkaops.kafka.apis import Api
from kafkaops.reconcile import Engine, RunOptions, State
from kafkaops.reconcile.actions import CreateAcls, CreateTopic, StepState
from kafkaops.reconcile.settings import EngineSettings
from kafkaops.testing.fake_cluster import FakeClusterDouble

from engine_helpers import desired, kafka_acl, topic


async def _reconcile(cluster: FakeClusterDouble, *docs, **options):
    async with AdminClient.connect(cluster.bootstrap, linger=0.01) as admin:
        engine = Engine(Batcher(admin, linger=0.0), cluster="dev", settings=EngineSettings(wait_poll_min=0.01))
        report = await engine.reconcile(desired(*docs), RunOptions(all_topics=False, **options))
        meta = await admin.metadata(None)
        return {o.name: o for o in report.outcomes}, meta


async def test_create_topic_carries_what_create_topics_answered() -> None:
    async with FakeClusterDouble(brokers=3, tick_interval=None) as cluster:
        outcomes, meta = await _reconcile(cluster, topic("orders", 3, 2))
    outcome = outcomes["orders"]
    assert outcome.state is State.APPLIED
    [result] = outcome.results
    assert isinstance(result.step, CreateTopic) and result.state is StepState.OK and result.problem is None
    created = outcome.created
    assert created is not None and created == result.value
    assert created.topic_id is not None and created.topic_id == meta.topics["orders"].topic_id
    assert (created.partitions, created.replication_factor) == (3, 2)


async def test_create_topics_v6_answer_has_no_topic_id() -> None:
    """Before v7 CreateTopics carries no topic id: the result says so (None), never a made-up one;
    the id is in the Metadata that found the topic led (`led`, what the operator's status takes)."""
    async with FakeClusterDouble(brokers=3, tick_interval=None, max_versions={Api.CREATE_TOPICS: 6}) as cluster:
        outcomes, meta = await _reconcile(cluster, topic("orders", 3, 2))
    created, led = outcomes["orders"].created, outcomes["orders"].led
    assert outcomes["orders"].state is State.APPLIED and meta.topics["orders"].topic_id is not None
    assert created is not None and created.topic_id is None and (created.partitions, created.replication_factor) == (3, 2)
    assert led is not None and led.topic_id == meta.topics["orders"].topic_id and led.all_led
    assert outcomes["orders"].reshaped


async def test_only_steps_that_reshape_a_topic_make_earlier_reads_stale() -> None:
    """`led` is the completion poll's view of a created or grown topic; a config edit has none and
    is not `reshaped` (the read it was planned from still holds the topic's id and partitions)."""
    async with FakeClusterDouble(brokers=3, tick_interval=None) as cluster:
        await _reconcile(cluster, topic("orders", 3, 2), topic("audit", 1, 1))
        outcomes, meta = await _reconcile(cluster, topic("orders", 3, 2, {"retention.ms": "60000"}), topic("audit", 4, 1))
    edited, grown = outcomes["orders"], outcomes["audit"]
    assert edited.state is State.APPLIED and edited.led is None and not edited.reshaped
    assert grown.state is State.APPLIED and grown.reshaped
    assert grown.led is not None and len(grown.led.partitions) == 4 == len(meta.topics["audit"].partitions)


async def test_failed_step_carries_the_kafka_error() -> None:
    async with FakeClusterDouble(brokers=3, tick_interval=None) as cluster:
        async with AdminClient.connect(cluster.bootstrap, linger=0.01) as admin:
            engine = Engine(Batcher(admin, linger=0.0), cluster="dev", settings=EngineSettings(wait_poll_min=0.01))
            planned = await engine.plan(desired(topic("late", 1, 1), topic("fine", 1, 1)), RunOptions(all_topics=False))
            await admin.create_topics([NewTopic("late", 2, 1, {})])  # created behind our back
            report = await engine.apply(planned, RunOptions(all_topics=False))
    outcomes = {o.name: o for o in report.outcomes}
    failed = outcomes["late"]
    [result] = failed.results
    assert failed.state is State.FAILED and result.state is StepState.FAILED
    assert result.error is not None and result.error.name == "TOPIC_ALREADY_EXISTS"
    assert result.problem == failed.problem and failed.problem.reason == "TOPIC_ALREADY_EXISTS"
    assert failed.created is None
    assert outcomes["fine"].state is State.APPLIED, "one bad item never stops the others"


async def test_step_without_validate_only_mode_is_skipped_with_why() -> None:
    entry = {"resource": {"type": "Topic", "name": "orders"}, "operations": ["Read"]}
    async with FakeClusterDouble(brokers=1, tick_interval=None, acls_enabled=True) as cluster:
        outcomes, _ = await _reconcile(cluster, kafka_acl("reader", "User:alice", [entry]), validate_only=True)
    outcome = outcomes["User:alice"]
    [result] = outcome.results
    assert isinstance(result.step, CreateAcls) and result.state is StepState.SKIPPED
    assert result.note == "not validated: CreateAcls has no validate-only mode"
    assert outcome.state is State.VALIDATED and outcome.notes == ("CreateAcls(1 binding(s)): " + result.note,)
