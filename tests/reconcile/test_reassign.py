"""reconcile/reassign/ against the fake cluster double: batches, progress, throttles, revert, external
reassignments, restart cleanup, unsupported APIs. Virtual time (tick_interval=None) advances one
tick per progress report, so every run is deterministic."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re

import pytest

from kafkaops.kafka import AdminClient, AlterConfigOp, ConfigResource, ConfigSource, NewTopic, Reassignment, TopicPartition
from kafkaops.reconcile.actions import Problem
from kafkaops.reconcile.reassign import (
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    LEADER_REPLICAS,
    MoveBudget,
    PartitionMove,
    ReassignmentPlan,
    ReassignmentSettings,
    ReassignmentState,
    ThrottleRecord,
    cancel,
    cleanup_throttles,
    detect_external,
    plan_change,
    run_reassignment,
    start,
)
from kafkaops.testing.fake_cluster import FakeClusterDouble

MIB = 1024 * 1024
RATE = 10 * MIB
FAST = ReassignmentSettings(max_partitions_moving=2, poll_interval=0)
THROTTLED = ReassignmentSettings(max_partitions_moving=2, poll_interval=0, throttle_bytes_per_second=RATE)
THROTTLE_KEYS = [LEADER_REPLICAS, FOLLOWER_REPLICAS, LEADER_RATE, FOLLOWER_RATE]


@pytest.fixture(params=[(3, ["a", "b", "c"]), (6, ["a", "b", "c"])], ids=["3-brokers", "6-brokers"])
async def cluster(request):
    brokers, racks = request.param
    async with FakeClusterDouble(brokers=brokers, racks=racks, tick_interval=None,
                                 reassignment_step_bytes=1 * MIB) as double:
        yield double


@pytest.fixture
async def three():
    async with FakeClusterDouble(brokers=3, racks=["a", "b", "c"], tick_interval=None,
                                 reassignment_step_bytes=1 * MIB) as double:
        yield double


async def connect(cluster):
    return await AdminClient.connect(cluster.bootstrap, retry_backoff=0.01, retry_attempts=3)


@pytest.fixture
async def admin(request):
    double = request.getfixturevalue("cluster" if "cluster" in request.fixturenames else "three")
    client = await connect(double)
    yield client
    await client.close()


async def assignment(admin, topic):
    info = (await admin.describe_topics([topic]))[topic].value
    return [p.replicas for p in info.partitions], [p.leader for p in info.partitions]


async def change(admin, topic, rf=None, target=None):
    meta = await admin.metadata([topic])
    brokers = {b: info.rack for b, info in meta.brokers.items()}
    current = [p.replicas for p in meta.topics[topic].partitions]
    plan = plan_change(topic, current, rf or len(target[0]), brokers, target)
    assert isinstance(plan, ReassignmentPlan), plan
    return plan


def broker_rates(cluster):
    return {b: {k: v for k, v in c.items() if k in (LEADER_RATE, FOLLOWER_RATE)}
            for b, c in cluster.state.broker_configs.items() if any(k in c for k in (LEADER_RATE, FOLLOWER_RATE))}


async def throttle_overrides(admin, cluster, topic):
    """Throttle keys still set as overrides, read through DescribeConfigs."""
    resources = [ConfigResource.topic(topic)] + [ConfigResource.broker(b) for b in cluster.brokers]
    described = await admin.describe_configs(resources, keys=THROTTLE_KEYS)
    left = {}
    for resource, result in described.items():
        for key, entry in (result.value or {}).items():
            if entry.source in (ConfigSource.DYNAMIC_TOPIC_CONFIG, ConfigSource.DYNAMIC_BROKER_CONFIG):
                left[(resource.name, key)] = entry.value
    return left


class Driver:
    """A progress callback: records every report and moves virtual time one tick."""

    def __init__(self, cluster, on_report=None):
        self.cluster = cluster
        self.reports = []
        self.in_flight = []
        self.snapshots = []
        self.on_report = on_report

    def __call__(self, progress):
        self.reports.append(progress)
        self.in_flight.append(len(self.cluster.state.reassignments))
        if progress.state is ReassignmentState.MOVING:
            self.snapshots.append((progress, topic_configs_all(self.cluster), broker_rates(self.cluster)))
        if self.on_report is not None:
            self.on_report(progress)
        self.cluster.advance(1)


def topic_configs_all(cluster):
    return {name: dict(t.configs) for name, t in cluster.state.topics.items()}


# --- the happy paths ----------------------------------------------------------------------------


async def test_rf_1_to_3_in_batches_with_progress_throttle_and_election(cluster, admin):
    brokers = cluster.brokers
    cluster.create_topic("orders", assignments=[[brokers[i % len(brokers)]] for i in range(6)])
    cluster.set_partition_size("orders", 3 * MIB)
    plan = await change(admin, "orders", rf=3)
    assert len(plan) == 6 and all(len(m.adding) == 2 for m in plan.moves.values())

    driver = Driver(cluster)
    read_back = []

    async def report(progress):  # callbacks may be coroutines: read the configs through Kafka
        if progress.state is ReassignmentState.MOVING and not read_back:
            read_back.append(await throttle_overrides(admin, cluster, "orders"))
        driver(progress)

    final = await run_reassignment(admin, plan, THROTTLED, report)

    assert final.state is ReassignmentState.DONE, final.message
    assert final.problem is None and not final.failed and not final.external
    assert (final.partitions_done, final.partitions_total) == (6, 6)
    assert final.bytes_total == final.bytes_done == 6 * 2 * 3 * MIB
    assert final.message.startswith("6/6 partitions moved (100%)")
    replicas, leaders = await assignment(admin, "orders")
    assert replicas == [m.target for m in plan.moves.values()]
    assert leaders == [r[0] for r in replicas], "preferred leaders elected"

    # Batches: never more than max_partitions_moving in flight.
    assert max(driver.in_flight) == 2
    # Progress at intermediate points: partitions and bytes advance.
    moving = [r for r in driver.reports if r.state is ReassignmentState.MOVING]
    assert any(0 < r.partitions_done < r.partitions_total for r in moving)
    done_bytes = [r.bytes_done for r in moving]
    assert done_bytes == sorted(done_bytes) and len(set(done_bytes)) > 3
    assert all(r.started_at == final.started_at for r in driver.reports)
    assert any(r.eta is not None and r.eta >= r.started_at for r in moving)
    assert all(re.match(r"^\d+/6 partitions moved \(\d+%\)", r.message) for r in driver.reports)
    assert [r.state for r in driver.reports][:1] == [ReassignmentState.PENDING]
    assert ReassignmentState.ELECTING in [r.state for r in driver.reports]

    # Throttles while moving: rates on the brokers involved, leader/follower replica lists.
    _, configs, rates = driver.snapshots[0]
    leader_list = configs["orders"][LEADER_REPLICAS].split(",")
    follower_list = configs["orders"][FOLLOWER_REPLICAS].split(",")
    assert sorted(leader_list) == sorted(f"{p}:{b}" for p, m in enumerate(plan.moves.values()) for b in m.current)
    assert sorted(follower_list) == sorted(f"{p}:{b}" for p, m in enumerate(plan.moves.values()) for b in m.adding)
    assert set(rates) == set(plan.brokers)
    assert all(r == {LEADER_RATE: str(RATE), FOLLOWER_RATE: str(RATE)} for r in rates.values())
    assert driver.snapshots[0][0].throttle is not None
    assert {key for _, key in read_back[0]} == set(THROTTLE_KEYS)
    assert {name for name, key in read_back[0] if key == LEADER_RATE} == {str(b) for b in plan.brokers}
    # ... and gone afterwards.
    assert await throttle_overrides(admin, cluster, "orders") == {}
    assert final.throttle is None


async def test_rf_3_to_2_removes_replicas_without_copying(cluster, admin):
    await admin.create_topics([NewTopic("events", 12, 3)])
    plan = await change(admin, "events", rf=2)
    assert all(not m.adding and len(m.removing) == 1 for m in plan.moves.values())

    final = await run_reassignment(admin, plan, FAST, Driver(cluster))

    assert final.state is ReassignmentState.DONE, final.message
    assert final.partitions_done == final.partitions_total == 12
    assert final.bytes_total == 0
    replicas, leaders = await assignment(admin, "events")
    assert replicas == [m.target for m in plan.moves.values()]
    assert leaders == [r[0] for r in replicas]
    racks = {b: info.rack for b, info in (await admin.metadata([])).brokers.items()}
    assert all(len({racks[b] for b in r}) == 2 for r in replicas)


async def test_explicit_assignment_moves_data_and_leadership(three, admin):
    three.create_topic("pay", assignments=[[1, 2], [2, 3], [3, 1]])
    plan = await change(admin, "pay", target=[[3, 1], [2, 3], [1, 2]])
    assert list(plan.moves) == [TopicPartition("pay", 0), TopicPartition("pay", 2)], "only partitions that change"

    final = await run_reassignment(admin, plan, FAST, Driver(three))

    assert final.state is ReassignmentState.DONE, final.message
    replicas, leaders = await assignment(admin, "pay")
    assert replicas == [(3, 1), (2, 3), (1, 2)]
    assert leaders == [3, 2, 1], "the preferred leader election moved leadership to the first replica"
    assert three.count(43) >= 1


async def test_a_budget_shared_by_runs_bounds_the_cluster(three, admin):
    for name in ("left", "right"):
        three.create_topic(name, assignments=[[1]] * 4)
    plans = [await change(admin, name, rf=2) for name in ("left", "right")]
    budget = MoveBudget(3)
    peak = []

    def watch(progress):
        peak.append(len(three.state.reassignments))
        three.advance(1)

    results = await asyncio.gather(*(run_reassignment(admin, p, FAST, watch, budget=budget) for p in plans))
    assert all(r.state is ReassignmentState.DONE for r in results)
    assert max(peak) <= 3 and budget.in_use == 0


# --- revert, external, cancel -------------------------------------------------------------------------


async def test_revert_mid_flight_cancels_what_is_moving(three, admin):
    three.create_topic("orders", assignments=[[1], [2], [3], [1], [2], [3]])
    three.set_partition_size("orders", 4 * MIB)
    original, _ = await assignment(admin, "orders")
    plan = await change(admin, "orders", rf=3)
    holder = {}

    def maybe_revert(progress):
        # After the first batch completed and the second is half way: the manifest was reverted.
        if progress.partitions_done >= 2 and progress.moving and progress.bytes_done > 10 * MIB:
            holder["moving"] = set(progress.moving)
            holder["run"].revert()

    run = start(admin, plan, THROTTLED, Driver(three, maybe_revert))
    holder["run"] = run
    final = await run

    assert final.state is ReassignmentState.CANCELLED, final.message
    assert final.partitions_done == 2
    in_flight = holder["moving"]
    assert in_flight and in_flight <= final.cancelled
    replicas, _ = await assignment(admin, "orders")
    for tp, move in plan.moves.items():
        if tp in final.cancelled:
            assert replicas[tp.partition] == original[tp.partition], f"{tp} back on its original replicas"
        else:
            assert replicas[tp.partition] == move.target
    assert not three.state.reassignments
    assert await throttle_overrides(admin, three, "orders") == {}
    assert final.problem_for("orders").reason == "ReassignmentCancelled"
    assert "reverted" in final.message


async def test_a_reassignment_started_outside_kafkaops_is_reported_and_left_alone(three, admin):
    three.create_topic("orders", assignments=[[1], [2], [3], [1]])
    three.set_partition_size("orders", 100 * MIB, partition=0)  # the outside move stays in flight
    plan = await change(admin, "orders", rf=3)
    outside = TopicPartition("orders", 0)
    assert plan.moves[outside].target != (1, 3)
    started = await admin.alter_partition_reassignments({outside: [1, 3]})
    assert started[outside].ok

    final = await run_reassignment(admin, plan, FAST, Driver(three))

    assert final.state is ReassignmentState.EXTERNAL, final.message
    assert final.external == {outside}
    assert final.partitions_total == 3 and final.partitions_done == 3
    assert final.problem is None, "nothing stopped the run"
    problem = final.problem_for("orders")
    assert problem.reason == "ExternalReassignment" and problem.retriable and "orders-0" in problem.message
    moving = three.state.reassignments[("orders", 0)]
    assert moving.target == (1, 3), "not cancelled, not redirected"
    replicas, _ = await assignment(admin, "orders")
    assert replicas[1:] == [m.target for tp, m in plan.moves.items() if tp != outside]


async def test_an_outside_reassignment_started_while_running_is_not_fought(three, admin):
    three.create_topic("orders", assignments=[[1], [2], [3], [1]])
    three.set_partition_size("orders", 3 * MIB)
    three.set_partition_size("orders", 100 * MIB, partition=3)
    plan = await change(admin, "orders", rf=2)
    late = TopicPartition("orders", 3)
    theirs = (1, 2) if plan.moves[late].target != (1, 2) else (1, 3)

    def another_tool(progress):
        if progress.state is ReassignmentState.MOVING and ("orders", 3) not in three.state.reassignments:
            topic = three.state.topics["orders"]
            three.state.reassign(topic, topic.partitions[3], list(theirs))  # straight into the cluster

    final = await run_reassignment(admin, plan, ReassignmentSettings(max_partitions_moving=1, poll_interval=0),
                                   Driver(three, another_tool))
    assert final.state is ReassignmentState.EXTERNAL, final.message
    assert final.external == {late} and final.partitions_done == 3
    assert three.state.reassignments[("orders", 3)].target == theirs, "left alone"


def test_detect_external():
    ours = {TopicPartition("t", 0): (1, 2, 3), TopicPartition("t", 1): (2, 3)}
    assert detect_external({TopicPartition("t", 0), TopicPartition("t", 9)}, ours) == {TopicPartition("t", 9)}
    listed = {
        TopicPartition("t", 0): Reassignment(TopicPartition("t", 0), (1, 2, 3), (2, 3), ()),  # ours
        TopicPartition("t", 1): Reassignment(TopicPartition("t", 1), (1, 3, 2), (1,), (2,)),  # elsewhere
    }
    assert detect_external(listed, ours) == {TopicPartition("t", 1)}


async def test_cancel_only_cancels_our_reassignments(three, admin):
    three.create_topic("t", assignments=[[1], [2], [3]])
    three.set_partition_size("t", 100 * MIB)
    tps = [TopicPartition("t", p) for p in range(3)]
    await admin.alter_partition_reassignments({tps[0]: [1, 2], tps[1]: [2, 3]})

    results = await cancel(admin, {tps[0]: (1, 2), tps[1]: (2, 1), tps[2]: (3, 1)})
    assert results[tps[0]] is None, "ours: cancelled"
    assert results[tps[1]].reason == "ExternalReassignment", "moving elsewhere: someone else's"
    assert results[tps[2]] is None, "not moving: nothing to cancel"
    assert set(three.state.reassignments) == {("t", 1)}
    replicas, _ = await assignment(admin, "t")
    assert replicas[0] == (1,)

    assert await cancel(admin, [tps[1]]) == {tps[1]: None}, "without targets: unconditional"
    assert not three.state.reassignments


# --- throttles across a restart ------------------------------------------------------------------


async def test_a_crash_leaves_the_throttle_to_the_persisted_record(three, admin):
    three.create_topic("orders", assignments=[[1], [2], [3], [1]], configs={FOLLOWER_REPLICAS: "9:3"})
    three.set_partition_size("orders", 5 * MIB)
    plan = await change(admin, "orders", rf=3)
    store = {}  # what a caller persists (a state file, a ConfigMap), as JSON
    moving = asyncio.Event()

    def persist(record):
        store["record"] = None if record is None else json.dumps(record.to_json())

    def report(progress):
        if progress.state is ReassignmentState.MOVING and progress.bytes_done:
            moving.set()

    task = asyncio.create_task(run_reassignment(admin, plan, THROTTLED, Driver(three, report), persist_throttle=persist))
    await moving.wait()
    task.cancel()  # the process dies mid-way
    with contextlib.suppress(asyncio.CancelledError):
        await task

    assert three.state.reassignments, "Kafka goes on moving"
    left = await throttle_overrides(admin, three, "orders")
    assert left[("orders", LEADER_REPLICAS)] and left[("1", LEADER_RATE)] == str(RATE), "still throttled"
    assert store["record"] is not None
    record = ThrottleRecord.from_json(json.loads(store["record"]))
    assert record.brokers == (1, 2, 3) and record.topics == ("orders",)
    assert "9:3" not in record.follower_replicas["orders"], "an entry that was there is not kafkaops'"

    # After the restart: the record says what to remove, and only that.
    assert await cleanup_throttles(admin, record) is None
    assert await throttle_overrides(admin, three, "orders") == {("orders", FOLLOWER_REPLICAS): "9:3"}
    assert await cleanup_throttles(admin, record) is None, "idempotent"

    # Running the plan again adopts the moves still in flight and finishes them.
    final = await run_reassignment(admin, plan, FAST, Driver(three))
    assert final.state is ReassignmentState.DONE, final.message
    assert any("adopted" in note for note in final.notes)
    assert (await assignment(admin, "orders"))[0] == [m.target for m in plan.moves.values()]


async def test_a_cancelled_task_without_a_record_removes_the_throttle_itself(three, admin):
    three.create_topic("orders", assignments=[[1], [2], [3]])
    three.set_partition_size("orders", 5 * MIB)
    plan = await change(admin, "orders", rf=2)
    moving = asyncio.Event()
    task = asyncio.create_task(run_reassignment(admin, plan, THROTTLED, Driver(
        three, lambda p: p.state is ReassignmentState.MOVING and moving.set())))
    await moving.wait()
    assert broker_rates(three)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert await throttle_overrides(admin, three, "orders") == {}


async def test_a_rate_someone_else_set_is_left_alone(three, admin):
    three.create_topic("orders", assignments=[[1], [2]])
    other = await admin.incremental_alter_configs(
        {ConfigResource.broker(1): [AlterConfigOp(LEADER_RATE, "123")]})
    assert other.all_ok
    plan = await change(admin, "orders", rf=2)
    final = await run_reassignment(admin, plan, THROTTLED, Driver(three))
    assert final.state is ReassignmentState.DONE
    assert any("someone else" in note for note in final.notes)
    assert await throttle_overrides(admin, three, "orders") == {("1", LEADER_RATE): "123"}


# --- refusals ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("disabled", "named"), [({45, 46, 43}, "AlterPartitionReassignments"),
                                                 ({43}, "ElectLeaders")])
async def test_clusters_without_the_apis_get_an_unsupported_feature_problem(disabled, named):
    async with FakeClusterDouble(brokers=3, tick_interval=None, disabled_apis=disabled) as double:
        async with AdminClient.connect(double.bootstrap, retry_backoff=0.01) as admin:
            double.create_topic("t", assignments=[[1], [2]])
            plan = await change(admin, "t", rf=2)
            final = await run_reassignment(admin, plan, THROTTLED)
            assert final.state is ReassignmentState.FAILED
            assert final.problem.reason == "UnsupportedFeature" and named in final.problem.message
            assert final.problem_for("t") == final.problem
            assert double.count(44) == 0 and double.count(45) == 0, "nothing was changed"
            assert (await assignment(admin, "t"))[0] == [(1,), (2,)]

            results = await cancel(admin, [TopicPartition("t", 0)])
            if 45 in disabled:
                assert results[TopicPartition("t", 0)].reason == "UnsupportedFeature"


async def test_a_target_that_does_not_fit_the_live_brokers_is_refused_before_sending(three, admin):
    three.create_topic("t", assignments=[[1], [2]])
    three.create_topic("fine", assignments=[[1]])
    plan = ReassignmentPlan.merge(
        ReassignmentPlan({TopicPartition("t", 0): PartitionMove((1,), (1, 9))}),
        ReassignmentPlan.of("fine", [(1,)], [(1, 2)]),
    )
    final = await run_reassignment(admin, plan, FAST, Driver(three))
    assert final.state is ReassignmentState.FAILED and final.problem is None
    assert set(final.failed) == {TopicPartition("t", 0)}
    problem = final.problem_for("t")
    assert problem.reason == "InvalidReplicaAssignment" and "[9]" in problem.message
    assert final.problem_for("fine") is None, "one topic's problem never stops the others"
    assert (await assignment(admin, "t"))[0] == [(1,), (2,)]
    assert (await assignment(admin, "fine"))[0] == [(1, 2)]


def test_plan_change_problems_and_noop():
    brokers = {1: "a", 2: "b", 3: "c"}
    assert plan_change("t", [(1, 2)], 4, brokers) == Problem(
        "InvalidReplicationFactor", "topic 't': replication factor 4 needs at least that many live brokers "
                                    "(live: [1, 2, 3])", retriable=True)  # a broker that is down comes back
    assert plan_change("t", [(1, 2)], 2, brokers, target=[(1, 7)]).reason == "InvalidReplicaAssignment"
    assert not plan_change("t", [(1, 2), (2, 3)], 2, brokers), "nothing changes: an empty plan"
    partial = plan_change("t", [(1, 2), (2, 3)], 2, brokers, target=[(2, 1)])
    assert dict(partial.moves) == {TopicPartition("t", 0): PartitionMove((1, 2), (2, 1))}


async def test_timeout_cancels_what_is_in_flight(three, admin):
    three.create_topic("t", assignments=[[1], [2], [3]])
    plan = await change(admin, "t", rf=2)
    final = await run_reassignment(admin, plan, ReassignmentSettings(max_partitions_moving=2, poll_interval=0.01,
                                                                     timeout=0.1, throttle_bytes_per_second=RATE))
    assert final.state is ReassignmentState.FAILED
    assert final.problem.reason == "ReassignmentTimeout" and final.problem.retriable
    assert (await assignment(admin, "t"))[0] == [(1,), (2,), (3,)]
    assert not three.state.reassignments
    assert await throttle_overrides(admin, three, "t") == {}


def test_throttle_record_round_trips_and_settings_validate():
    record = ThrottleRecord(5, (3, 1), {"t": ("0:1", "1:2")}, {"t": ("0:2",), "u": ()})
    assert ThrottleRecord.from_json(json.loads(json.dumps(record.to_json()))) == record
    assert ThrottleRecord.from_entry(record.to_entry()) == record
    assert record.to_entry() == {"rate": "5", "brokers": "1,3", "leader/t": "0:1,1:2", "follower/t": "0:2"}
    assert record.brokers == (1, 3) and record.topics == ("t",)
    with pytest.raises(ValueError):
        ReassignmentSettings(max_partitions_moving=0)
    with pytest.raises(ValueError):
        ReassignmentSettings(throttle_bytes_per_second=0)
