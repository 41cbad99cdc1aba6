"""Running a reassignment: `start` / `run_reassignment` and the `ReassignmentRun` they return
(the executor rounds: preflight, throttle, move, unthrottle, elect); cancelling is in cancel.py."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import replace
from datetime import datetime, timedelta
from types import MappingProxyType
from typing import Any

from kafkaops.kafka import AdminClient, KafkaError, TopicPartition
from kafkaops.kafka.apis import Api, choose_version
from kafkaops.kafka.errors import (
    ErrorCode,
    KafkaOpsError,
    UnsupportedFeature,
)
from kafkaops.reconcile.actions import UNSUPPORTED_FEATURE, Problem, problem_from_exception
from kafkaops.reconcile.placement import replicas_problem
from kafkaops.reconcile.reassign.cancel import cancel, detect_external, in_flight_target
from kafkaops.reconcile.reassign.plan import (
    EXTERNAL_REASSIGNMENT,
    INVALID_REPLICA_ASSIGNMENT,
    REASSIGNMENT_TIMEOUT,
    MoveBudget,
    PartitionMove,
    ReassignmentPlan,
    ReassignmentSettings,
    _call,
    _item_problem,
    _now,
)
from kafkaops.reconcile.reassign.progress import (
    ProgressCallback,
    ReassignmentProgress,
    ReassignmentState,
    _bytes,
    _names,
)
from kafkaops.reconcile.reassign.throttle import (
    PersistThrottle,
    ThrottleRecord,
    cleanup_throttles,
    set_throttles,
)

log = logging.getLogger(__name__)


MAX_FAILED_ROUNDS = 5  # consecutive progress rounds failing (cluster unreachable) before a run gives up


# --- the run ------------------------------------------------------------------------------------


class ReassignmentRun:
    """A reassignment running in its own task: `progress` (latest), `revert()`, `await run`."""

    def __init__(self, executor: _Executor) -> None:
        self._executor = executor
        self.task: asyncio.Task[ReassignmentProgress] = asyncio.create_task(executor.run())

    @property
    def progress(self) -> ReassignmentProgress:
        return self._executor.latest

    def revert(self) -> None:
        """Stop: cancel the partitions in flight (back on their previous replicas), start no more."""
        self._executor.revert_requested.set()

    async def wait(self) -> ReassignmentProgress:
        return await self.task

    def partitions_now(self) -> tuple[frozenset[TopicPartition], frozenset[TopicPartition]]:
        """(moved, still moving in the cluster) right now, also after the task was cancelled (a CLI
        interrupted by Ctrl-C reports them; the moves go on in Kafka, still throttled)."""
        return frozenset(self._executor.done), frozenset(self._executor.in_flight)

    @property
    def throttled(self) -> bool:
        """Whether a replication throttle is in place (it stays while moves go on after a cancel)."""
        return self._executor.throttle is not None

    def __await__(self) -> Any:
        return self.task.__await__()


def start(
    admin: AdminClient,
    plan: ReassignmentPlan,
    settings: ReassignmentSettings = ReassignmentSettings(),
    progress_callback: ProgressCallback | None = None,
    *,
    persist_throttle: PersistThrottle | None = None,
    budget: MoveBudget | None = None,
    clock: Callable[[], datetime] = _now,
    label: str = "",
) -> ReassignmentRun:
    """Start `plan` in a task; see the module docstring for the steps. `label` (the cluster) starts
    the run's log lines."""
    return ReassignmentRun(_Executor(admin, plan, settings, progress_callback, persist_throttle,
                                     budget or MoveBudget(settings.max_partitions_moving), clock, label))


async def run_reassignment(
    admin: AdminClient,
    plan: ReassignmentPlan,
    settings: ReassignmentSettings = ReassignmentSettings(),
    progress_callback: ProgressCallback | None = None,
    *,
    persist_throttle: PersistThrottle | None = None,
    budget: MoveBudget | None = None,
    clock: Callable[[], datetime] = _now,
) -> ReassignmentProgress:
    """Run `plan` to the end and return the final progress (never raises for Kafka errors)."""
    return await start(admin, plan, settings, progress_callback, persist_throttle=persist_throttle, budget=budget,
                       clock=clock).wait()


class _Executor:
    def __init__(self, admin: AdminClient, plan: ReassignmentPlan, settings: ReassignmentSettings,
                 callback: ProgressCallback | None, persist: PersistThrottle | None, budget: MoveBudget,
                 clock: Callable[[], datetime], label: str = "") -> None:
        self.admin = admin
        self.label = label
        self.plan = plan
        self.settings = settings
        self.callback = callback
        self.persist = persist
        self.budget = budget
        self.clock = clock
        self.revert_requested = asyncio.Event()
        self.started_at = clock()
        self.moves: dict[TopicPartition, PartitionMove] = dict(plan.moves)  # current refreshed in preflight
        self.pending: deque[TopicPartition] = deque()
        self.in_flight: set[TopicPartition] = set()
        self.done: set[TopicPartition] = set()
        self.failed: dict[TopicPartition, Problem] = {}
        self.external: set[TopicPartition] = set()
        self.cancelled: set[TopicPartition] = set()  # cancelled in flight, or never started after a revert
        self.reverted: set[TopicPartition] = set()  # cancelled in flight
        self.leader_size: dict[TopicPartition, int] = {}
        self.copied: dict[TopicPartition, int] = {}
        self.log_dirs = True
        self.bytes_baseline: int | None = None
        self.throttle: ThrottleRecord | None = None
        self.notes: list[str] = []
        self.latest = ReassignmentProgress(ReassignmentState.PENDING, len(plan), started_at=self.started_at,
                                           message="waiting to start")

    # -- the flow --------------------------------------------------------------------------------

    async def run(self) -> ReassignmentProgress:
        try:
            final = await self._run()
        except asyncio.CancelledError:
            if self.throttle is not None and self.persist is None:
                # Nobody holds a record to clean up later: remove the throttle before going.
                cleanup = asyncio.wait_for(asyncio.shield(cleanup_throttles(self.admin, self.throttle)), 30)
                await self._last_unthrottle("the run was cancelled", cleanup)
            raise
        except BaseException as exc:
            if self.throttle is not None:
                await self._last_unthrottle(f"the run failed ({type(exc).__name__}: {exc})", self._unthrottle())
            raise
        return final

    async def _last_unthrottle(self, why: str, cleanup: Awaitable[Problem | None]) -> None:
        """Remove the throttle on the way out of a run that did not end normally; what goes wrong is
        logged, never raised over the reason the run ended."""
        where = f"{self.label + ': ' if self.label else ''}reassignment of {', '.join(self.plan.topics)}"
        try:
            problem = await cleanup
        except Exception as exc:  # noqa: BLE001 - the run is ending with its own exception
            log.warning("%s: %s, and removing its replication throttle failed too (%s: %s); the throttle record "
                        "says what to remove", where, why, type(exc).__name__, exc)
            return
        if problem is not None:
            log.warning("%s: %s, and removing its replication throttle failed: %s", where, why, problem.message)

    async def _run(self) -> ReassignmentProgress:
        problem: Problem | None = None
        state = ReassignmentState.DONE
        try:
            problem = await self._preflight()
            if problem is None:
                await self._emit(ReassignmentState.PENDING)
                problem = await self._throttle()
            if problem is None:
                state, problem = await self._move()
        except KafkaOpsError as exc:
            problem = problem_from_exception(exc, "partition reassignment")
        if self.throttle is not None:
            cleanup = await self._unthrottle()
            if cleanup is not None:
                self.notes.append(str(cleanup))
                problem = problem or cleanup
        await self._elect()
        if state is ReassignmentState.DONE and (problem is not None or self.failed):
            state = ReassignmentState.FAILED
        elif state is ReassignmentState.DONE and self.external:
            state = ReassignmentState.EXTERNAL
        return await self._emit(state, problem)

    async def _preflight(self) -> Problem | None:
        if not self.moves:
            return None
        problem = await self._check_apis()
        if problem is not None:
            return problem
        meta = await self.admin.metadata(self.plan.topics)
        live = {b: info.rack for b, info in meta.brokers.items()}
        for topic in self.plan.topics:
            mine = [tp for tp in self.moves if tp.topic == topic]
            info = meta.topics.get(topic)
            if info is None:
                error = meta.topic_errors.get(topic) or KafkaError.of(ErrorCode.unknown_topic_or_partition)
                self._fail(mine, _item_problem(f"reading topic {topic!r}", error))
                continue
            current = [p.replicas for p in info.partitions]
            outside = [tp for tp in mine if tp.partition >= len(current)]
            if outside:
                self._fail(mine, Problem(INVALID_REPLICA_ASSIGNMENT, f"topic {topic!r} has {len(current)} "
                                         f"partitions, the plan moves {_names(outside)}; nothing was sent"))
                continue
            # Against the live brokers now (a topic with a bad target is not moved at all).
            reasons = [(tp, r) for tp in mine if (r := replicas_problem(self.moves[tp].target, live)) is not None]
            if reasons:
                tp, reason = reasons[0]
                self._fail(mine, Problem(INVALID_REPLICA_ASSIGNMENT, f"topic {topic!r}: {tp} -> "
                                         f"{list(self.moves[tp].target)}: {reason}; nothing was sent"))
                continue
            for tp in mine:
                self.moves[tp] = PartitionMove(tuple(current[tp.partition]), self.moves[tp].target)
        candidates = [tp for tp in self.moves if tp not in self.failed]
        listing = await self.admin.list_partition_reassignments(candidates) if candidates else {}
        external = detect_external({tp: r for tp, r in listing.items() if tp in self.moves},
                                   {tp: self.moves[tp].target for tp in candidates})
        self.external |= external
        for tp in candidates:
            move = self.moves[tp]
            if tp in external:
                continue
            if tp in listing:  # ours, from a run before a restart: adopt it
                reassignment = listing[tp]
                original = tuple(b for b in reassignment.replicas if b not in reassignment.adding)
                self.moves[tp] = PartitionMove(original, move.target)
                self.in_flight.add(tp)
            elif move.current == move.target:
                self.done.add(tp)
            else:
                self.pending.append(tp)
        self.budget.force(len(self.in_flight))
        if self.in_flight:
            self.notes.append(f"{len(self.in_flight)} partition(s) already moving to the target were adopted")
        await self._measure(set(self.pending) | self.in_flight, initial=True)
        self.bytes_baseline = self._bytes()[1]
        return None

    async def _check_apis(self) -> Problem | None:
        try:
            versions = await self.admin.api_versions()
            needed = [Api.ALTER_PARTITION_REASSIGNMENTS, Api.LIST_PARTITION_REASSIGNMENTS, Api.ELECT_LEADERS]
            if self.settings.throttle_bytes_per_second:
                needed += [Api.DESCRIBE_CONFIGS, Api.INCREMENTAL_ALTER_CONFIGS]
            for api in needed:
                choose_version(api, versions)
        except UnsupportedFeature as exc:
            return Problem(UNSUPPORTED_FEATURE, f"changing replicas needs {exc.api} (API key {exc.api_key}), "
                                                f"which this cluster does not offer: {exc}; nothing was changed")
        try:
            choose_version(Api.DESCRIBE_LOG_DIRS, versions)
        except UnsupportedFeature:
            self._no_log_dirs("the cluster does not offer DescribeLogDirs")
        return None

    async def _throttle(self) -> Problem | None:
        rate = self.settings.throttle_bytes_per_second
        mine = {tp: self.moves[tp] for tp in (*self.pending, *self.in_flight)}
        if not rate or not mine:
            return None

        async def remember(record: ThrottleRecord | None) -> None:
            self.throttle = record  # known before anything is written, for the cancel paths
            await _call(self.persist, record)

        record, problem, notes = await set_throttles(self.admin, mine, rate, remember)
        self.throttle = record
        self.notes.extend(notes)
        return problem

    async def _unthrottle(self) -> Problem | None:
        assert self.throttle is not None
        problem = await cleanup_throttles(self.admin, self.throttle)
        if problem is None:
            self.throttle = None
            await _call(self.persist, None)
        return problem

    async def _move(self) -> tuple[ReassignmentState, Problem | None]:
        loop = asyncio.get_running_loop()
        deadline = None if self.settings.timeout is None else loop.time() + self.settings.timeout
        failed_rounds = 0
        try:
            while self.pending or self.in_flight:
                if self.revert_requested.is_set():
                    await self._cancel_in_flight()
                    return ReassignmentState.CANCELLED, None
                if deadline is not None and loop.time() >= deadline:
                    moving, waiting = len(self.in_flight), len(self.pending)
                    await self._cancel_in_flight()
                    return ReassignmentState.FAILED, Problem(
                        REASSIGNMENT_TIMEOUT,
                        f"not finished after {self.settings.timeout:g}s: {len(self.done)} partition(s) moved, "
                        f"{moving} in flight cancelled (back on their previous replicas), {waiting} not started",
                        retriable=True)
                try:
                    await self._poll()
                    await self._submit()
                    await self._measure(self.in_flight)
                except UnsupportedFeature:
                    raise
                except KafkaOpsError as exc:  # the cluster went away for a moment: try the next round
                    failed_rounds += 1
                    if failed_rounds >= MAX_FAILED_ROUNDS:
                        raise
                    log.warning("%sreassignment of %s: a progress round failed (%d/%d), trying the next: %s",
                                f"{self.label}: " if self.label else "", ", ".join(self.plan.topics),
                                failed_rounds, MAX_FAILED_ROUNDS, exc)
                else:
                    failed_rounds = 0
                await self._emit(ReassignmentState.MOVING)
                if self.pending or self.in_flight:
                    await self._pause(self.settings.poll_interval)
        finally:
            self.budget.give(len(self.in_flight))
        return ReassignmentState.DONE, None

    async def _pause(self, seconds: float) -> None:
        if self.revert_requested.is_set():
            return
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self.revert_requested.wait(), timeout=seconds)

    async def _submit(self) -> None:
        granted = self.budget.take(len(self.pending))
        batch = [self.pending.popleft() for _ in range(granted)]
        if not batch:
            return
        self.in_flight.update(batch)
        try:
            results = await self.admin.alter_partition_reassignments({tp: self.moves[tp].target for tp in batch})
        except KafkaOpsError:
            # Maybe started, maybe not: back to pending; the next listing adopts those that did.
            self.in_flight.difference_update(batch)
            self.pending.extendleft(reversed(batch))
            self.budget.give(len(batch))
            raise
        for tp in batch:
            error = results[tp].error
            if error is not None:
                self.in_flight.discard(tp)
                self.budget.give(1)
                self.failed[tp] = _item_problem(f"AlterPartitionReassignments({tp} -> {list(self.moves[tp].target)})",
                                                error)

    async def _poll(self) -> None:
        """One ListPartitionReassignments for every partition not finished: completions free slots."""
        watched = [*sorted(self.in_flight), *self.pending]
        listing = await self.admin.list_partition_reassignments(watched) if watched else {}
        for tp in sorted(self.in_flight):
            found = listing.get(tp)
            if found is None:  # left the list: complete
                self.in_flight.discard(tp)
                self.budget.give(1)
                self.done.add(tp)
                self.copied[tp] = self.leader_size.get(tp, 0) * len(self.moves[tp].adding)
            elif in_flight_target(found) != self.moves[tp].target:
                self.in_flight.discard(tp)
                self.budget.give(1)
                self.external.add(tp)
                self.notes.append(f"{tp} was redirected to {list(in_flight_target(found))} by someone else: left alone")
        for tp in [tp for tp in self.pending if tp in listing]:
            self.pending.remove(tp)
            if in_flight_target(listing[tp]) == self.moves[tp].target:
                self.in_flight.add(tp)  # our own submission whose answer was lost
                self.budget.force(1)
            else:
                self.external.add(tp)  # started outside kafkaops meanwhile

    async def _cancel_in_flight(self) -> None:
        self.cancelled.update(self.pending)  # never started: already on their previous replicas
        self.pending.clear()
        if not self.in_flight:
            return
        moving = sorted(self.in_flight)
        results = await cancel(self.admin, {tp: self.moves[tp].target for tp in moving})
        for tp in moving:
            self.in_flight.discard(tp)
            self.budget.give(1)
            problem = results[tp]
            if problem is None:
                self.cancelled.add(tp)
                self.reverted.add(tp)
            elif problem.reason == EXTERNAL_REASSIGNMENT:
                self.external.add(tp)
            else:
                self.failed[tp] = problem
        # A partition that completed just before the cancel is moved, not cancelled.
        meta = await self.admin.metadata(sorted({tp.topic for tp in moving}))
        for tp in moving:
            info = meta.topics.get(tp.topic)
            if tp in self.reverted and info is not None and tp.partition < len(info.partitions) \
                    and info.partitions[tp.partition].replicas == self.moves[tp].target:
                self.cancelled.discard(tp)
                self.reverted.discard(tp)
                self.done.add(tp)
                self.copied[tp] = self.leader_size.get(tp, 0) * len(self.moves[tp].adding)

    async def _elect(self) -> None:
        """Preferred leaders for the moved partitions and the ones cancelled in flight."""
        partitions = sorted(self.done | self.reverted)
        if not partitions:
            return
        await self._emit(ReassignmentState.ELECTING)
        try:
            results = await self.admin.elect_leaders(partitions)
        except KafkaOpsError as exc:
            self.notes.append(f"preferred leader election not run: {exc}")
            return
        failed = {tp: e for tp, e in results.failed().items() if e.code != ErrorCode.election_not_needed}
        if failed:
            tp, error = next(iter(sorted(failed.items())))
            self.notes.append(f"preferred leader election failed for {len(failed)} partition(s) (first: {tp}: {error}); "
                              "leadership stays where it is until the next election")

    # -- measuring ---------------------------------------------------------------------------------

    def _no_log_dirs(self, why: str) -> None:
        if self.log_dirs:
            self.log_dirs = False
            self.notes.append(f"byte progress unavailable: {why}")

    async def _measure(self, partitions: Iterable[TopicPartition], initial: bool = False) -> None:
        """One DescribeLogDirs per broker involved: leader sizes and bytes on the adding replicas."""
        partitions = sorted(partitions)
        if not self.log_dirs or not partitions:
            return
        brokers = sorted({b for tp in partitions for b in (*self.moves[tp].current, *self.moves[tp].adding)})
        try:
            results = await self.admin.describe_log_dirs(brokers, partitions)
        except KafkaOpsError as exc:
            if isinstance(exc, UnsupportedFeature):
                self._no_log_dirs(str(exc))
            elif initial:
                self._no_log_dirs(f"DescribeLogDirs failed: {exc}")
            return
        sizes: dict[tuple[int, TopicPartition], int] = {}
        for broker, result in results.items():
            for log_dir in result.value or ():
                for replica in log_dir.replicas:
                    key = (broker, replica.partition)
                    sizes[key] = max(sizes.get(key, 0), replica.size)
        for tp in partitions:
            move = self.moves[tp]
            held = [sizes[(b, tp)] for b in move.current if (b, tp) in sizes]
            if held:
                self.leader_size[tp] = max(held)
            leader = self.leader_size.get(tp, 0)
            self.copied[tp] = sum(min(sizes.get((b, tp), 0), leader) for b in move.adding)

    def _bytes(self) -> tuple[int | None, int | None]:
        if not self.log_dirs:
            return None, None
        ours = [tp for tp in self.moves if tp not in self.external and tp not in self.failed]
        total = sum(self.leader_size.get(tp, 0) * len(self.moves[tp].adding) for tp in ours)
        done = sum(self.copied.get(tp, 0) for tp in ours if tp not in self.cancelled)
        return total, min(done, total)

    # -- reporting --------------------------------------------------------------------------------

    async def _emit(self, state: ReassignmentState, problem: Problem | None = None) -> ReassignmentProgress:
        total = len([tp for tp in self.moves if tp not in self.external])
        done = len(self.done)
        bytes_total, bytes_done = self._bytes()
        now = self.clock()
        progress = ReassignmentProgress(
            state=state,
            partitions_total=total,
            partitions_done=done,
            bytes_total=bytes_total,
            bytes_done=bytes_done,
            started_at=self.started_at,
            failed=MappingProxyType(dict(self.failed)),
            external=frozenset(self.external),
            cancelled=frozenset(self.cancelled),
            moving=frozenset(self.in_flight),
            throttle=self.throttle,
            problem=problem,
            notes=tuple(self.notes),
        )
        progress = replace(progress, eta=self._eta(progress, now), message=self._message(progress))
        self.latest = progress
        await _call(self.callback, progress)
        return progress

    def _eta(self, p: ReassignmentProgress, now: datetime) -> datetime | None:
        if p.state is not ReassignmentState.MOVING:
            return now if p.state in (ReassignmentState.ELECTING, ReassignmentState.DONE) else None
        elapsed = (now - self.started_at).total_seconds()
        if elapsed <= 0:
            return None
        if p.bytes_total and p.bytes_done is not None:
            copied = p.bytes_done - (self.bytes_baseline or 0)
            if copied > 0:
                return now + timedelta(seconds=(p.bytes_total - p.bytes_done) * elapsed / copied)
        if p.partitions_done > 0:
            return now + timedelta(seconds=(p.partitions_total - p.partitions_done) * elapsed / p.partitions_done)
        return None

    def _message(self, p: ReassignmentProgress) -> str:
        head = f"{p.partitions_done}/{p.partitions_total} partitions moved ({p.percent}%)"
        parts = [head]
        if p.bytes_total:
            parts.append(f"{_bytes(p.bytes_done or 0)} of {_bytes(p.bytes_total)} copied")
        if p.moving:
            parts.append(f"{len(p.moving)} moving")
        if p.state is ReassignmentState.ELECTING:
            parts.append("electing preferred leaders")
        if p.cancelled:
            parts.append(f"reverted: {len(p.cancelled)} partition(s) cancelled or not started, "
                         "on their previous replicas")
        if p.external:
            parts.append(f"{len(p.external)} partition(s) being reassigned outside kafkaops left alone "
                         f"({_names(p.external)})")
        if p.failed:
            parts.append(f"{len(p.failed)} partition(s) failed ({_names(p.failed)})")
        if p.problem is not None:
            parts.append(str(p.problem))
        return "; ".join(parts)

    def _fail(self, partitions: Iterable[TopicPartition], problem: Problem) -> None:
        for tp in partitions:
            self.failed[tp] = problem
