"""The engine end to end against both backends (noida-db and the fake cluster double configured
like it), and the fake double alone for what noida does not do (ACLs, several brokers, prune)."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from kafkaops.kafka import (
    AclBindingFilter,
    AdminClient,
    AlterConfigOp,
    AlterOp,
    Batcher,
    ConfigResource,
    ConfigSource,
    NewTopic,
)
from kafkaops.reconcile.actions import CreateTopic
from kafkaops.reconcile.reassign import ReassignmentSettings
from kafkaops.reconcile.settings import EngineSettings
from kafkaops.reconcile import Action, DesiredState, Engine, FileOwnershipStore, RunOptions, State
from kafkaops.testing.fake_cluster import FakeClusterDouble, FaultDouble

from engine_helpers import broker_config, desired, kafka_acl, kafka_cluster, topic

MUTATING = {"CreateTopics", "DeleteTopics", "CreatePartitions", "IncrementalAlterConfigs", "CreateAcls", "DeleteAcls",
            "AlterPartitionReassignments"}

FAST_WAIT = EngineSettings(wait_poll_min=0.01)  # completion polling from 10 ms


@pytest.fixture
async def admin(server):
    async with AdminClient.connect(server[0], linger=0.01) as client:
        yield client


def engine(admin: AdminClient, state=None) -> Engine:
    return Engine(Batcher(admin), ownership=state, cluster="test", settings=FAST_WAIT)


def by_name(report) -> dict:
    return {o.name: o for o in report.outcomes}


async def overrides(admin: AdminClient, name: str) -> dict[str, str]:
    described = (await admin.describe_configs([ConfigResource.topic(name)]))[ConfigResource.topic(name)].value
    return {k: e.value for k, e in described.items() if e.source is ConfigSource.DYNAMIC_TOPIC_CONFIG}


async def test_create_then_second_apply_sends_no_mutating_request(admin, unique) -> None:
    want = desired(topic(f"{unique}.a", 3, 1, {"retention.ms": 86400000, "cleanup.policy": "compact,delete"}),
                   topic(f"{unique}.b", 1, 1))
    report = await engine(admin).reconcile(want, RunOptions(all_topics=False))
    assert [o.state for o in report.outcomes] == [State.APPLIED, State.APPLIED], report.outcomes
    assert report.requests.get("CreateTopics") == 1
    info = (await admin.describe_topics([f"{unique}.a"]))[f"{unique}.a"].value
    assert len(info.partitions) == 3 and info.all_led
    assert (await overrides(admin, f"{unique}.a"))["retention.ms"] == "86400000"

    again = await engine(admin).reconcile(want, RunOptions(all_topics=False))
    assert [o.state for o in again.outcomes] == [State.UNCHANGED, State.UNCHANGED]
    assert not MUTATING & set(again.requests), again.requests


async def test_config_update_and_owned_key_reset(admin, unique, tmp_path) -> None:
    state = FileOwnershipStore(tmp_path / "state.json")
    name = f"{unique}.cfg"
    await engine(admin, state).reconcile(desired(topic(name, config={"retention.ms": 1000000, "segment.ms": 3600000})))
    # someone else sets a key kafkaops does not own
    await admin.incremental_alter_configs({ConfigResource.topic(name): [AlterConfigOp("max.message.bytes", "2000000")]})
    report = await engine(admin, state).reconcile(desired(topic(name, config={"retention.ms": 2000000})))
    outcome = by_name(report)[name]
    assert outcome.state is State.APPLIED and outcome.action is Action.UPDATE
    assert {str(c) for c in outcome.changes} == {"config.retention.ms: 1000000 -> 2000000", "config.segment.ms: - 3600000"}
    assert await overrides(admin, name) == {"retention.ms": "2000000", "max.message.bytes": "2000000"}


async def test_partition_increase_and_refused_decrease(admin, unique) -> None:
    name = f"{unique}.parts"
    await engine(admin).reconcile(desired(topic(name, 2, 1)))
    grown = await engine(admin).reconcile(desired(topic(name, 4, 1)))
    assert by_name(grown)[name].state is State.APPLIED and by_name(grown)[name].action is Action.PARTITION_INCREASE
    assert len((await admin.describe_topics([name]))[name].value.partitions) == 4
    shrink = await engine(admin).reconcile(desired(topic(name, 2, 1, {"retention.ms": 5000000})))
    outcome = by_name(shrink)[name]
    assert outcome.state is State.FAILED and outcome.problem.reason == "PartitionDecrease"
    assert not MUTATING & set(shrink.requests)
    assert len((await admin.describe_topics([name]))[name].value.partitions) == 4
    assert "retention.ms" not in await overrides(admin, name)


async def test_validate_only_changes_nothing(admin, unique) -> None:
    name = f"{unique}.dry"
    report = await engine(admin).reconcile(desired(topic(name, 2, 1)), RunOptions(validate_only=True))
    assert by_name(report)[name].state is State.VALIDATED
    assert not (await admin.describe_topics([name]))[name].ok


async def test_an_item_kafka_refuses_fails_alone_in_its_batch(admin, unique) -> None:
    """Validation cannot foresee every broker-side refusal: here one CreateTopics item asks for zero
    partitions (hand-edited into the plan). It fails with Kafka's error; its batch neighbours apply."""
    eng = engine(admin)
    planned = await eng.plan(desired(topic(f"{unique}.good", 1, 1), topic(f"{unique}.bad", 1, 1), topic(f"{unique}.ok", 2, 1)),
                             RunOptions(all_topics=False))
    resources = tuple(
        replace(r, steps=(CreateTopic(NewTopic(r.name, 0, 1)),)) if r.name.endswith(".bad") else r
        for r in planned.plan.resources
    )
    report = await eng.apply(replace(planned, plan=replace(planned.plan, resources=resources)))
    outcomes = by_name(report)
    assert outcomes[f"{unique}.bad"].state is State.FAILED
    assert outcomes[f"{unique}.bad"].problem.reason == "INVALID_PARTITIONS"
    assert outcomes[f"{unique}.good"].state is State.APPLIED and outcomes[f"{unique}.ok"].state is State.APPLIED
    assert report.requests["CreateTopics"] == 1


async def test_acls_on_a_cluster_without_authorizer_fail_alone(admin, unique) -> None:
    want = desired(topic(f"{unique}.t", 1, 1),
                   kafka_acl("svc", f"User:{unique}", [{"resource": {"type": "Topic", "name": "x"}, "operations": ["Read"]}]))
    outcomes = {o.kind: o for o in (await engine(admin).reconcile(want)).outcomes}
    assert outcomes["KafkaAcl"].state is State.FAILED and outcomes["KafkaAcl"].problem.reason == "SECURITY_DISABLED"
    assert outcomes["KafkaTopic"].state is State.APPLIED


# --- the fake double only: ACLs, brokers, prune -----------------------------------------------------------------


@pytest.fixture
async def fake():
    async with FakeClusterDouble(brokers=3, racks=["a", "b", "c"], acls_enabled=True) as cluster:
        async with AdminClient.connect(cluster.bootstrap, linger=0.01) as client:
            yield cluster, client


async def test_acl_create_then_delete_before_create(fake) -> None:
    _, admin = fake
    entries = [{"resource": {"type": "Topic", "name": "orders"}, "operations": ["Read", "Describe"]},
               {"resource": {"type": "Group", "name": "orders-", "patternType": "Prefixed"}, "operations": ["Read"]}]
    first = await engine(admin).reconcile(desired(kafka_acl("orders", "User:orders", entries)))
    assert by_name(first)["User:orders"].state is State.APPLIED
    assert len(await admin.describe_acls(AclBindingFilter(principal="User:orders"))) == 3

    entries[0]["operations"] = ["Write"]
    second = await engine(admin).reconcile(desired(kafka_acl("orders", "User:orders", entries)))
    outcome = by_name(second)["User:orders"]
    assert outcome.state is State.APPLIED and second.requests.get("DeleteAcls") == 1 and second.requests.get("CreateAcls") == 1
    now = await admin.describe_acls(AclBindingFilter(principal="User:orders"))
    assert sorted((b.resource_name, b.operation.name) for b in now) == [("orders", "WRITE"), ("orders-", "READ")]
    third = await engine(admin).reconcile(desired(kafka_acl("orders", "User:orders", entries)))
    assert not MUTATING & set(third.requests)


async def test_broker_configs_per_broker_and_cluster_default(fake, tmp_path) -> None:
    _, admin = fake
    state = FileOwnershipStore(tmp_path / "s.json")
    want = desired(broker_config("defaults", {"log.cleaner.threads": 2}), broker_config("b2", {"num.io.threads": 16}, 2))
    report = await engine(admin, state).reconcile(want)
    assert all(o.state is State.APPLIED for o in report.outcomes), report.outcomes
    configs = await admin.describe_configs([ConfigResource.broker(None), ConfigResource.broker(2)])
    assert configs[ConfigResource.broker(None)].value["log.cleaner.threads"].value == "2"
    assert configs[ConfigResource.broker(2)].value["num.io.threads"].value == "16"
    again = await engine(admin, state).reconcile(want)
    assert not MUTATING & set(again.requests)
    reset = await engine(admin, state).reconcile(desired(broker_config("defaults", {}), broker_config("b2", {"num.io.threads": 16}, 2)))
    assert by_name(reset)["brokers/default"].state is State.APPLIED
    entry = (await admin.describe_configs([ConfigResource.broker(None)]))[ConfigResource.broker(None)].value.get("log.cleaner.threads")
    assert entry is None or entry.source is not ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG


async def test_prune_deletes_undeclared_topics_within_the_cap_only(fake) -> None:
    _, admin = fake
    await admin.create_topics([NewTopic(n, 1, 1) for n in ("keep", "old1", "old2")])
    capped = await engine(admin).reconcile(desired(kafka_cluster(policy="Delete", cap=1), topic("keep", 1, 1)),
                                           RunOptions(prune=True))
    assert {o.name: o.problem.reason for o in capped.failed} == {"old1": "DeletionCapExceeded", "old2": "DeletionCapExceeded"}
    assert "DeleteTopics" not in capped.requests
    pruned = await engine(admin).reconcile(desired(kafka_cluster(policy="Delete", cap=5), topic("keep", 1, 1)),
                                           RunOptions(prune=True))
    assert {o.name for o in pruned.outcomes if o.action is Action.DELETE and o.state is State.APPLIED} == {"old1", "old2"}
    assert sorted((await admin.metadata(None)).topics) == ["keep"]


async def test_replication_factor_change_runs_as_a_throttled_reassignment_with_progress(fake, tmp_path) -> None:
    cluster, admin = fake
    await admin.create_topics([NewTopic("moving", 4, 1)])
    for p in range(4):
        cluster.set_partition_size("moving", 64 * 1024 * 1024, partition=p)
    seen = []
    state = FileOwnershipStore(tmp_path / "s.json")
    eng = Engine(Batcher(admin, linger=0.01), ownership=state, cluster="test", on_reassignment=seen.append, settings=FAST_WAIT,
                 reassignment=ReassignmentSettings(max_partitions_moving=2, poll_interval=0.02))
    want = desired(kafka_cluster(), topic("moving", 4, 3, {"retention.ms": 7200000}))
    want = replace(want, cluster=replace(want.cluster, spec=replace(want.cluster.spec, replication_throttle=10_000_000)))
    report = await eng.reconcile(want)
    outcome = by_name(report)["moving"]
    assert outcome.state is State.APPLIED and outcome.action is Action.REPLICA_CHANGE, outcome
    info = (await admin.describe_topics(["moving"]))["moving"].value
    assert all(len(p.replicas) == 3 and len(set(p.replicas)) == 3 for p in info.partitions)
    assert len({p.leader for p in info.partitions}) == 3  # preferred leaders spread, then elected
    assert any(0 < s.partitions_done < s.partitions_total for s in seen), [s.message for s in seen]
    assert any(s.throttle is not None for s in seen), [(s.state, s.throttle, s.notes) for s in seen]  # throttled while moving...
    configs = (await admin.describe_configs([ConfigResource.topic("moving")]))[ConfigResource.topic("moving")].value
    assert "leader.replication.throttled.replicas" not in {k for k, e in configs.items()
                                                           if e.source is ConfigSource.DYNAMIC_TOPIC_CONFIG}  # ...not after
    assert (await overrides(admin, "moving")) == {"retention.ms": "7200000"}
    assert not [o for o in state.load(report.plan.cluster_id or "").owners if o.startswith("reassignment/throttle")]
    again = await eng.reconcile(want)
    assert by_name(again)["moving"].state is State.UNCHANGED


async def test_partitions_and_replication_factor_changed_together_reach_both(fake) -> None:
    """Soak: partitions up and a new replication factor in one edit made CreatePartitions send the
    new partitions at the new factor, which Kafka refuses (INVALID_REPLICA_ASSIGNMENT) while the
    existing partitions still have the old one; the resource stayed Stalled."""
    cluster, admin = fake
    await admin.create_topics([NewTopic("both", 2, 1)])
    eng = Engine(Batcher(admin, linger=0.01), cluster="test", settings=FAST_WAIT,
                 reassignment=ReassignmentSettings(poll_interval=0.02))
    report = await eng.reconcile(desired(kafka_cluster(), topic("both", 4, 2)))
    outcome = by_name(report)["both"]
    assert outcome.state is State.APPLIED and outcome.problem is None, outcome
    info = (await admin.describe_topics(["both"]))["both"].value
    assert len(info.partitions) == 4 and all(len(set(p.replicas)) == 2 for p in info.partitions), info.partitions
    assert by_name(await eng.reconcile(desired(kafka_cluster(), topic("both", 4, 2))))["both"].state is State.UNCHANGED


async def test_replica_change_without_reassignment_apis_is_unsupported_and_the_rest_applies() -> None:
    async with FakeClusterDouble(brokers=3, disabled_apis={45, 46}) as cluster:
        async with AdminClient.connect(cluster.bootstrap, linger=0.01) as admin:
            await admin.create_topics([NewTopic("old-cluster", 1, 1)])
            report = await engine(admin).reconcile(desired(topic("old-cluster", 1, 2, {"retention.ms": 7200000})))
            outcome = by_name(report)["old-cluster"]
            assert outcome.state is State.FAILED and outcome.problem.reason == "UnsupportedFeature"
            assert "PartitionReassignments (API key 4" in outcome.problem.message and not outcome.problem.retriable
            assert (await overrides(admin, "old-cluster")) == {"retention.ms": "7200000"}
            assert "AlterPartitionReassignments" not in report.requests


async def test_creates_from_many_resources_share_one_request(fake) -> None:
    _, admin = fake
    want = desired(*(topic(f"bulk-{i}", 2, 3) for i in range(300)))
    report = await engine(admin).reconcile(want)
    assert all(o.state is State.APPLIED for o in report.outcomes)
    assert report.requests["CreateTopics"] == 1
    assert report.requests["Metadata"] <= 4  # observe + a few completion rounds, never one per topic


async def test_not_controller_during_apply_is_retried(fake) -> None:
    cluster, admin = fake

    cluster.inject(FaultDouble.not_controller(count=1, api_keys=[19], move_controller=True))
    report = await engine(admin).reconcile(desired(topic("nc", 1, 1)))
    assert by_name(report)["nc"].state is State.APPLIED
    assert report.requests["CreateTopics"] == 2  # answered NOT_CONTROLLER once, resent to the new controller


def test_desired_state_of_splits_kinds() -> None:
    want = desired(topic("a"), kafka_acl("x", "User:x", [{"resource": {"type": "Topic", "name": "a"}, "operations": ["Read"]}]),
                   broker_config("b", {"log.cleaner.threads": 1}))
    assert (len(want.topics), len(want.acls), len(want.broker_configs)) == (1, 1, 1)
    assert isinstance(want, DesiredState) and len(want) == 3


async def test_concurrent_per_resource_reconciles_share_their_reads_and_writes(fake) -> None:
    """The operator's shape: one engine per cluster, one reconcile per resource, all at once."""
    _, admin = fake
    shared = Engine(Batcher(admin, linger=0.05), cluster="test", settings=FAST_WAIT)
    topics = [desired(topic(f"one-{i}", 1, 1, {"retention.ms": 3600000})) for i in range(50)]
    acls = [desired(kafka_acl(f"svc{i}", f"User:svc{i}", [{"resource": {"type": "Topic", "name": f"one-{i}"},
                                                            "operations": ["Read"]}])) for i in range(50)]
    before = dict(admin.requests_by_api)
    reports = await asyncio.gather(*(shared.reconcile(d, RunOptions(all_topics=False)) for d in topics + acls))
    assert all(r.ok for r in reports)
    sent = {api: n - before.get(api, 0) for api, n in admin.requests_by_api.items() if n != before.get(api, 0)}
    assert sent["CreateTopics"] == 1 and sent["CreateAcls"] == 1 and sent["DescribeAcls"] == 1, sent
    assert sent["Metadata"] <= 4 and sent.get("ListPartitionReassignments", 0) <= 2, sent


async def test_an_unchanged_topic_adopts_its_declared_keys(admin, unique, tmp_path) -> None:
    """A topic already as declared (created by hand, or by a run that died before recording
    ownership) is owned afterwards: dropping a key from the manifest then resets it."""
    name = f"{unique}.adopt"
    await admin.create_topics([NewTopic(name, 1, 1, {"retention.ms": "3600000"})])
    state = FileOwnershipStore(tmp_path / "s.json")
    first = await engine(admin, state).reconcile(desired(topic(name, 1, 1, {"retention.ms": 3600000})))
    assert by_name(first)[name].state is State.UNCHANGED
    dropped = await engine(admin, state).reconcile(desired(topic(name, 1, 1)))
    assert [str(c) for c in by_name(dropped)[name].changes] == ["config.retention.ms: - 3600000"]


@pytest.mark.parametrize("change", ["rf-3-to-2", "explicit"])
async def test_replica_changes_through_apply_on_six_brokers_with_racks(change) -> None:
    racks = ["a", "a", "b", "b", "c", "c"]
    async with FakeClusterDouble(brokers=6, racks=racks, tick_interval=0.01) as cluster:
        async with AdminClient.connect(cluster.bootstrap, linger=0.01) as admin:
            await admin.create_topics([NewTopic("six", 6, 3)])
            seen = []
            eng = Engine(Batcher(admin), cluster="six", on_reassignment=seen.append, settings=FAST_WAIT,
                         reassignment=ReassignmentSettings(max_partitions_moving=2, poll_interval=0.02))
            if change == "rf-3-to-2":
                want = desired(topic("six", 6, 2))
            else:
                want = desired(topic("six", None, None, replicaAssignment=[[1, 3], [3, 5], [5, 1], [2, 4], [4, 6], [6, 2]]))
            report = await eng.reconcile(want)
            assert by_name(report)["six"].state is State.APPLIED, by_name(report)["six"]
            info = (await admin.describe_topics(["six"]))["six"].value
            rack = {i + 1: r for i, r in enumerate(racks)}
            assert all(len(p.replicas) == 2 and len({rack[b] for b in p.replicas}) == 2 for p in info.partitions)
            if change == "explicit":
                assert [list(p.replicas) for p in sorted(info.partitions, key=lambda p: p.partition)] == \
                    [[1, 3], [3, 5], [5, 1], [2, 4], [4, 6], [6, 2]]
            load = [sum(b in p.replicas for p in info.partitions) for b in range(1, 7)]
            assert max(load) - min(load) <= 1  # balanced
            assert seen and seen[-1].finished
            again = await eng.reconcile(want)
            assert by_name(again)["six"].state is State.UNCHANGED
