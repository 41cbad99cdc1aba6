"""The ReassignmentManager against the fake cluster double: planning, following by name, letting go
(the moves and the throttle record survive), cleaning up leftovers after a restart, and saying so
when that fails. Virtual time as in test_reassign.py: one tick per progress report."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from kafkaops.reconcile.actions import ChangeReplicas
from kafkaops.reconcile.ownership import MemoryOwnershipStore
from kafkaops.reconcile.reassign import (
    THROTTLE_OWNER,
    ReassignmentManager,
    ReassignmentState,
    ThrottleRecord,
    run_reassignment,
    throttle_owner,
)
from kafkaops.testing.fake import FaultDouble
from test_reassign import FAST, MIB, RATE, THROTTLED, Driver, admin, assignment, three, throttle_overrides

__all__ = ["admin", "three"]  # fixtures

KEY = "cluster-id"


async def test_plan_reads_fresh_metadata_and_names_what_cannot_move(three, admin):
    three.create_topic("orders", assignments=[[1], [2], [3]])
    three.create_topic("settled", assignments=[[1, 2], [2, 3]])
    manager = ReassignmentManager(admin, MemoryOwnershipStore(), FAST)
    plans, problems = await manager.plan([("a", ChangeReplicas("orders", None, 2)),
                                          ("b", ChangeReplicas("gone", None, 2)),
                                          ("c", ChangeReplicas("settled", ((1, 2), (2, 3)), 2)),
                                          ("d", ChangeReplicas("orders", None, 4))])
    assert set(plans) == {"a"} and len(plans["a"]) == 3
    assert all(len(move.target) == 2 for move in plans["a"].moves.values())
    assert problems["b"].reason == "UNKNOWN_TOPIC_OR_PARTITION" and "gone" in problems["b"].message
    assert problems["c"] is None, "nothing to move"
    assert problems["d"].reason == "InvalidReplicationFactor"


async def test_a_followed_run_let_go_keeps_its_throttle_for_the_next_process(three, admin):
    three.create_topic("orders", assignments=[[1], [2], [3], [1]])
    three.set_partition_size("orders", 5 * MIB)
    store = MemoryOwnershipStore()
    moving = asyncio.Event()
    manager = ReassignmentManager(admin, store, THROTTLED, cluster="dev", on_progress=Driver(
        three, lambda p: p.state is ReassignmentState.MOVING and p.bytes_done and moving.set()))
    plans, _ = await manager.plan([("orders", ChangeReplicas("orders", None, 3))])
    run = manager.start(KEY, plans["orders"], follow="orders")
    assert manager.active("orders").run is run and set(manager.active("orders").targets) == set(plans["orders"].moves)
    await moving.wait()

    await manager.clean_leftovers(KEY)  # its own run's throttle is in use: not a leftover
    assert (await throttle_overrides(admin, three, "orders"))[("1", "leader.replication.throttled.rate")] == str(RATE)

    manager.abandon()  # the operator stops: Kafka goes on moving, still throttled, the record stays
    with contextlib.suppress(asyncio.CancelledError):
        await run.task
    assert manager.active("orders") is None and manager.followed == {}
    assert three.state.reassignments, "Kafka goes on moving"
    entry = store.load(KEY).owners[throttle_owner(("orders",))]
    assert ThrottleRecord.from_entry(entry).brokers == (1, 2, 3)

    restarted = ReassignmentManager(admin, store, FAST, on_progress=Driver(three))  # the next process
    await restarted.clean_leftovers(KEY)
    assert await throttle_overrides(admin, three, "orders") == {}
    assert not [o for o in store.load(KEY).owners if o.startswith(THROTTLE_OWNER)], "record forgotten once removed"

    # planning again from the replicas before the moves in flight: they are adopted and finish
    plans, _ = await restarted.plan([("orders", ChangeReplicas("orders", None, 3))])
    results = await restarted.run_to_end(KEY, plans)
    assert results == {"orders": None}
    assert all(len(replicas) == 3 for replicas in (await assignment(admin, "orders"))[0])


async def test_a_leftover_that_cannot_be_removed_is_kept_and_logged(three, admin, caplog):
    three.create_topic("orders", assignments=[[1]])
    store = MemoryOwnershipStore()
    owner = throttle_owner(("orders",))
    store.update(KEY, {owner: ThrottleRecord(RATE, (1, 99)).to_entry()})  # broker 99 cannot be read
    manager = ReassignmentManager(admin, store, FAST, cluster="dev")
    with caplog.at_level(logging.WARNING, logger="kafkaops.reconcile.reassign.manager"):
        await manager.clean_leftovers(KEY)
    assert owner in store.load(KEY).owners, "kept to retry at the next apply"
    [record] = [r for r in caplog.records if r.name == "kafkaops.reconcile.reassign.manager"]
    assert "cluster dev" in record.getMessage() and "orders" in record.getMessage()
    assert "broker 99" in record.getMessage()


async def test_a_cancelled_run_that_cannot_remove_its_throttle_says_so(three, admin, caplog):
    """No record kept anywhere (no store entry is read back, no persist): the run removes its throttle
    itself on the way out; when Kafka refuses, the log says which cluster, which topics and why."""
    three.create_topic("orders", assignments=[[1], [2], [3]])
    three.set_partition_size("orders", 5 * MIB)
    moving = asyncio.Event()
    plans, _ = await ReassignmentManager(admin, MemoryOwnershipStore(), FAST).plan(
        [("orders", ChangeReplicas("orders", None, 2))])
    task = asyncio.create_task(run_reassignment(admin, plans["orders"], THROTTLED, Driver(
        three, lambda p: p.state is ReassignmentState.MOVING and moving.set())))
    await moving.wait()
    three.inject(FaultDouble.not_controller(count=None, api_keys=[44]))  # IncrementalAlterConfigs refused
    with caplog.at_level(logging.WARNING, logger="kafkaops.reconcile.reassign.run"):
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    [record] = [r for r in caplog.records if r.name == "kafkaops.reconcile.reassign.run"]
    message = record.getMessage()
    assert "reassignment of orders" in message and "cancelled" in message and "NOT_CONTROLLER" in message, message
    three.clear_faults()
    assert (await throttle_overrides(admin, three, "orders"))[("orders", "leader.replication.throttled.replicas")]


async def test_revert_cancels_a_followed_run_by_name(three, admin):
    three.create_topic("orders", assignments=[[1], [2], [3], [1]])
    three.set_partition_size("orders", 5 * MIB)
    moving = asyncio.Event()
    manager = ReassignmentManager(admin, MemoryOwnershipStore(), THROTTLED, on_progress=Driver(
        three, lambda p: p.state is ReassignmentState.MOVING and p.moving and moving.set()))
    plans, _ = await manager.plan([("orders", ChangeReplicas("orders", None, 3))])
    run = manager.start(KEY, plans["orders"], follow="orders")
    await moving.wait()
    assert not manager.revert("payments"), "no run of that name"
    assert manager.revert("orders")
    final = await run.wait()
    assert final.state is ReassignmentState.CANCELLED and final.cancelled, final.message
    assert not three.state.reassignments, "the partitions in flight went back"
    assert await throttle_overrides(admin, three, "orders") == {}
    assert manager.active("orders").run is run, "followed until the caller forgets it"
