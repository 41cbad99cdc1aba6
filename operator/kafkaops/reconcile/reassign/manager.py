"""`ReassignmentManager`: the one owner of a cluster's partition reassignments.

One per cluster, shared by everything that changes replicas there: the CLI's Engine (runs a
change to the end, or until Ctrl-C) and the operator's cluster context (starts a run per
KafkaTopic in the background and follows it from later reconciles). It plans the moves from
fresh metadata, starts runs under one `MoveBudget`, writes each run's throttle record ahead to
the ownership store, follows runs by name, reverts them, and removes throttles left by runs that
never finished (a crash, a Ctrl-C, an operator restart). Nothing outside `reconcile/reassign/`
calls Alter/ListPartitionReassignments (checked by `tests/unit/test_reassignment_home.py`).

    manager = ReassignmentManager(admin, store, cluster="prod")
    await manager.clean_leftovers(state_key)                  # before changing anything
    plans, problems = await manager.plan(steps)               # [(key, ChangeReplicas)] -> plans
    results = await manager.run_to_end(state_key, plans, throttle, stop)   # the CLI
    manager.start(state_key, plan, throttle, follow="orders")              # the operator
    manager.active("orders")                                  # later reconciles: follow or revert
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from kafkaops.kafka import AdminClient, TopicPartition
from kafkaops.kafka.errors import KafkaOpsError
from kafkaops.reconcile.actions import ChangeReplicas, Problem, problem_from_exception
from kafkaops.reconcile.apply import INTERRUPTED
from kafkaops.reconcile.ownership import OwnershipStore
from kafkaops.reconcile.reassign.plan import MoveBudget, ReassignmentPlan, ReassignmentSettings, plan_change
from kafkaops.reconcile.reassign.progress import ProgressCallback, ReassignmentProgress
from kafkaops.reconcile.reassign.run import ReassignmentRun, cancel, start
from kafkaops.reconcile.reassign.throttle import PersistThrottle, ThrottleRecord, cleanup_throttles
from kafkaops.reconcile.stopping import unless_stopped

log = logging.getLogger(__name__)

THROTTLE_OWNER = "reassignment/throttle"  # the ownership entries holding the replication-throttle records

K = TypeVar("K", bound=Hashable)


@dataclass
class ActiveRun:
    """A run followed by name (the operator: one per KafkaTopic): the run and its targets."""

    run: ReassignmentRun
    targets: Mapping[TopicPartition, tuple[int, ...]]


def throttle_owner(topics: Sequence[str]) -> str:
    """The ownership entry holding the throttle record of a run moving `topics`."""
    return f"{THROTTLE_OWNER}/{','.join(topics)}"


class ReassignmentManager:
    """Starting, following, cancelling and cleaning up one cluster's partition reassignments."""

    def __init__(self, admin: AdminClient, store: OwnershipStore, settings: ReassignmentSettings | None = None,
                 *, cluster: str = "", on_progress: ProgressCallback | None = None) -> None:
        self.admin = admin
        self.store = store
        self.cluster = cluster
        # the Engine passes EngineSettings.reassignment_settings: progress polled like completion
        self.settings = settings or ReassignmentSettings()
        self.on_progress = on_progress
        # one bound on partitions moving at once, shared by every run of this cluster
        self.budget = MoveBudget(self.settings.max_partitions_moving)
        self._running: set[str] = set()  # throttle owners of runs going on in this process
        self._active: dict[str, ActiveRun] = {}

    # --- planning -----------------------------------------------------------------------------------

    async def plan(self, steps: Sequence[tuple[K, ChangeReplicas]]
                   ) -> tuple[dict[K, ReassignmentPlan], dict[K, Problem | None]]:
        """Reassignment plans for ChangeReplicas steps, from fresh metadata (partitions may just have
        been added) and the replicas before any move in flight; problems for those that cannot run
        (None: nothing to move)."""
        try:
            meta = await self.admin.metadata(sorted({step.topic for _, step in steps}))
            moving = await self.admin.list_partition_reassignments()
        except KafkaOpsError as exc:
            problem = problem_from_exception(exc, "preparing the partition reassignment")
            return {}, {key: problem for key, _ in steps}
        brokers = {b.node_id: b.rack for b in meta.brokers.values()}
        results: dict[K, Problem | None] = {}
        plans: dict[K, ReassignmentPlan] = {}
        for key, step in steps:
            info = meta.topics.get(step.topic)
            if info is None:
                results[key] = Problem("UNKNOWN_TOPIC_OR_PARTITION", f"topic {step.topic!r} is gone")
                continue
            current = [
                tuple(b for b in p.replicas if b not in moving[tp].adding) if (tp := TopicPartition(step.topic, p.partition)) in moving
                else p.replicas
                for p in sorted(info.partitions, key=lambda p: p.partition)
            ]
            made = plan_change(step.topic, current, step.replication_factor, brokers, step.target)
            if isinstance(made, Problem):
                results[key] = made
            elif made:
                plans[key] = made
            else:
                results[key] = None
        return plans, results

    # --- running ------------------------------------------------------------------------------------

    def start(self, state_key: str, plan: ReassignmentPlan, throttle: int | None = None, *,
              on_progress: ProgressCallback | None = None, persist: PersistThrottle | None = None,
              follow: str | None = None) -> ReassignmentRun:
        """Start `plan` in the background. The throttle record goes to the ownership store first
        (write-ahead), and to `persist` too when given (the operator's status). `throttle`: the
        KafkaCluster's bytes/s, unless the settings fix one. `follow`: a name to find the run by
        later (`active`)."""
        settings = self.settings
        if throttle and settings.throttle_bytes_per_second is None:
            settings = replace(settings, throttle_bytes_per_second=throttle)
        owner = throttle_owner(plan.topics)

        async def remember(record: ThrottleRecord | None) -> None:
            self.store.update(state_key, {owner: None if record is None else record.to_entry()})
            if persist is not None:
                result = persist(record)
                if asyncio.iscoroutine(result):
                    await result

        run = start(self.admin, plan, settings, on_progress or self.on_progress, persist_throttle=remember,
                    budget=self.budget, label=f"cluster {self.cluster}" if self.cluster else "")
        self._running.add(owner)  # its throttle is in use: never "leftover" while it runs
        run.task.add_done_callback(lambda _task: self._running.discard(owner))
        if follow is not None:
            self._active[follow] = ActiveRun(run, plan.targets())
        return run

    async def run_to_end(self, state_key: str, plans: Mapping[K, ReassignmentPlan], throttle: int | None = None,
                         stop: asyncio.Event | None = None) -> dict[K, Problem | None]:
        """Run `plans` as ONE reassignment (batches of partitions, throttled when asked, leaders
        elected after) and wait for it: each key's problem, None for moved. Once `stop` is set (the
        CLI's Ctrl-C) the run is left: moves in flight go on in Kafka, throttled, the throttle
        recorded in the store for `clean_leftovers`."""
        if not plans:
            return {}
        run = self.start(state_key, ReassignmentPlan.merge(*plans.values()), throttle)
        final = await unless_stopped(run.wait(), stop)
        if final is None:
            with contextlib.suppress(asyncio.CancelledError):
                await run.task
            moved, moving = run.partitions_now()
            return {key: interrupted_moves(made, moved, moving, run.throttled) for key, made in plans.items()}
        return {key: problem_of(final, made) for key, made in plans.items()}

    # --- following (by name) -------------------------------------------------------------------------

    def active(self, name: str) -> ActiveRun | None:
        return self._active.get(name)

    def forget(self, name: str) -> None:
        """Stop following a finished run."""
        self._active.pop(name, None)

    def revert(self, name: str) -> bool:
        """Cancel the followed run `name` (its partitions in flight go back, nothing more starts);
        False when no run of that name is followed. Follow it on to its end (`active`)."""
        active = self._active.get(name)
        if active is not None:
            active.run.revert()
        return active is not None

    @property
    def followed(self) -> dict[str, ActiveRun]:
        return dict(self._active)

    # --- cancelling, cleaning up -----------------------------------------------------------------------

    async def cancel(self, partitions: Mapping[TopicPartition, Sequence[int]] | Sequence[TopicPartition]
                     ) -> dict[TopicPartition, Problem | None]:
        """Cancel reassignments in flight (see `run.cancel`)."""
        return await cancel(self.admin, partitions)

    async def clean_leftovers(self, state_key: str) -> None:
        """Remove the throttles recorded by runs that never finished (crash, Ctrl-C, restart) and not
        running here now; a record whose removal failed is kept for the next call, and logged."""
        ownership = self.store.load(state_key)
        for owner in sorted(ownership.named_like(THROTTLE_OWNER)):
            entry = ownership.owners.get(owner)
            if not entry or owner in self._running:
                continue
            problem = await cleanup_throttles(self.admin, ThrottleRecord.from_entry(entry))
            if problem is None:
                self.store.update(state_key, {owner: None})
            else:
                log.warning("cluster %s: removing the replication throttle left by an earlier run (%s) failed, "
                            "retried at the next apply: %s", self.cluster or state_key,
                            owner.removeprefix(THROTTLE_OWNER + "/"), problem.message)

    def adopt_throttle(self, state_key: str, topic: str, record: Mapping[str, Any]) -> None:
        """A throttle record kept elsewhere (the operator's status) with no run for `topic` in this
        process: an earlier process died while moving. Into the store it goes, so that
        `clean_leftovers` removes that throttle before anything else."""
        if topic in self._active:
            return
        owner = throttle_owner((topic,))
        if owner not in self.store.load(state_key).owners:
            self.store.update(state_key, {owner: {str(k): (None if v is None else str(v)) for k, v in record.items()}})

    def abandon(self) -> None:
        """The process lets go of this cluster (shutdown, a changed KafkaCluster): the runs' tasks
        end, the moves go on in Kafka, their throttle records stay (persisted) for the next start."""
        for active in self._active.values():
            active.run.task.cancel()
        self._active.clear()


def problem_of(final: ReassignmentProgress, plan: ReassignmentPlan) -> Problem | None:
    """The first problem of `plan`'s topics in a finished run; None: all moved."""
    return next((p for t in plan.topics if (p := final.problem_for(t)) is not None), None)


def interrupted_moves(plan: ReassignmentPlan, moved: frozenset[TopicPartition],
                      moving: frozenset[TopicPartition], throttled: bool) -> Problem:
    """What an interrupted reassignment left behind for one topic, and how to follow it."""
    mine = set(plan.moves)
    done, going = len(mine & moved), len(mine & moving)
    throttle = (" (throttled; the throttle is recorded in the state file)", " (it also removes the throttle)") \
        if throttled else ("", "")
    return Problem(INTERRUPTED, f"interrupted while moving partitions: {done}/{len(mine)} moved, {going} still moving "
                                f"in the cluster{throttle[0]}, {len(mine) - done - going} not started; run the same "
                                f"`kafkaops apply` again to finish{throttle[1]}", True)
