"""Partition reassignment: run a replica change (replication factor, assignment) through Kafka.

    plan = plan_change("orders", observed.assignment, 3, brokers)          # pure; placement.py
    progress = await run_reassignment(admin, plan, ReassignmentSettings(throttle_bytes_per_second=50_000_000),
                                      progress_callback=report, persist_throttle=store)

What a run does, in order (one `ReassignmentRun`, `start()` returns it):

1. **Preflight**: the cluster must offer AlterPartitionReassignments (45),
   ListPartitionReassignments (46) and ElectLeaders (43) (IncrementalAlterConfigs
   (44) too with a throttle): otherwise an `UnsupportedFeature` problem names
   the API and nothing is sent. One Metadata request gives the live brokers and
   current replicas; every target is validated against the live brokers
   (`replicas_problem`): a topic with a bad target is not moved, the others are.
   One ListPartitionReassignments: a partition already moving to our target (a
   previous run, before a restart) is adopted; one moving elsewhere was started
   outside kafkaops: reported as `external` and never touched. Partitions whose
   replicas already are the target count as done.
2. **Throttle** (optional, `throttle_bytes_per_second`): the two
   `*.replication.throttled.rate` broker configs on every broker involved
   (current and target replicas), and the topic configs
   `leader.replication.throttled.replicas` (`partition:broker` for the current
   replicas) and `follower.replication.throttled.replicas` (the adding
   replicas), appended to what is there. What kafkaops adds is described by a
   `ThrottleRecord`, handed to `persist_throttle` *before* anything is written.
3. **Move** in batches: never more than `max_partitions_moving` partitions of
   this run (or of a shared `MoveBudget`, per cluster) in flight. Each round:
   one ListPartitionReassignments for every unfinished partition (completion =
   the partition left the list; one now moving elsewhere, or a pending one
   that started moving, was taken over from outside: left alone), then what
   fits in the free slots is submitted (one AlterPartitionReassignments), then
   one DescribeLogDirs per broker involved gives the bytes (size of the adding
   replicas vs the largest current replica, i.e. the leader's). Progress is
   reported after every round, rounds are `poll_interval` apart.
4. **Unthrottle**: the record's entries and rates are removed (`cleanup_throttles`),
   then `persist_throttle(None)`.
5. **Elect**: one preferred leader election for the moved (and cancelled)
   partitions; ELECTION_NOT_NEEDED is success, other failures are notes.

`run.revert()` (a changed desired state while moving) cancels the partitions in
flight (Kafka puts them back on their previous replicas), submits nothing more,
removes the throttle: state `cancelled`. `timeout` does the same with a retriable
`ReassignmentTimeout` problem.

Throttles are never left behind: every exit of a run removes them (try/finally),
except a *cancelled task* (shutdown, crash) when the caller persists the record:
the moves then go on in Kafka, still throttled, and the next start calls
`cleanup_throttles(admin, record)` first, then forgets the record (it may then
run the plan again: moves still in flight to the same targets are adopted).
Without `persist_throttle`, a cancelled task removes the throttle before it ends.

Errors come back as `Problem`s (`ReassignmentProgress.problem`, `.failed`); only
programming errors raise.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from enum import StrEnum
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from kafkaops.kafka import (
    AdminClient,
    AlterConfigOp,
    AlterOp,
    ConfigResource,
    ConfigResourceType,
    ConfigSource,
    KafkaError,
    Reassignment,
    TopicPartition,
)
from kafkaops.kafka.apis import Api, choose_version
from kafkaops.kafka.errors import (
    ErrorCode,
    KafkaOpsError,
    UnsupportedFeature,
)
from kafkaops.reconcile.actions import UNSUPPORTED_FEATURE, Problem, problem_from_exception
from kafkaops.reconcile.placement import placement_problem, plan_placement, replicas_problem

log = logging.getLogger(__name__)

LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
THROTTLE_RATES = (LEADER_RATE, FOLLOWER_RATE)
THROTTLE_REPLICAS = (LEADER_REPLICAS, FOLLOWER_REPLICAS)

# Problem reasons (rule names; Kafka error names are used as they come).
INVALID_REPLICA_ASSIGNMENT = "InvalidReplicaAssignment"
INVALID_REPLICATION_FACTOR = "InvalidReplicationFactor"
EXTERNAL_REASSIGNMENT = "ExternalReassignment"
REASSIGNMENT_TIMEOUT = "ReassignmentTimeout"
REASSIGNMENT_CANCELLED = "ReassignmentCancelled"
THROTTLE_FAILED = "ThrottleFailed"
THROTTLE_CLEANUP_FAILED = "ThrottleCleanupFailed"

_EMPTY: Mapping[Any, Any] = MappingProxyType({})
MAX_FAILED_ROUNDS = 5  # consecutive progress rounds failing (cluster unreachable) before a run gives up
if TYPE_CHECKING:
    from collections.abc import Awaitable

ProgressCallback = Callable[["ReassignmentProgress"], "Awaitable[None] | None"]
PersistThrottle = Callable[["ThrottleRecord | None"], "Awaitable[None] | None"]


def _now() -> datetime:
    return datetime.now(timezone.utc)


# --- settings, plan -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReassignmentSettings:
    """`max_partitions_moving`: partitions in flight at once (per run, or per `MoveBudget` shared
    by a cluster's runs). `throttle_bytes_per_second`: replication throttle while moving (None:
    none). `poll_interval`: seconds between progress rounds. `timeout`: seconds before the moves
    still in flight are cancelled (None: no limit)."""

    max_partitions_moving: int = 10
    throttle_bytes_per_second: int | None = None
    poll_interval: float = 5.0
    timeout: float | None = None

    def __post_init__(self) -> None:
        if self.max_partitions_moving < 1:
            raise ValueError("max_partitions_moving must be at least 1")
        if self.throttle_bytes_per_second is not None and self.throttle_bytes_per_second < 1:
            raise ValueError("throttle_bytes_per_second must be positive (or None for no throttle)")
        if self.poll_interval < 0:
            raise ValueError("poll_interval cannot be negative")
        if self.timeout is not None and self.timeout <= 0:
            raise ValueError("timeout must be positive (or None)")


@dataclass(frozen=True, slots=True)
class PartitionMove:
    current: tuple[int, ...]
    target: tuple[int, ...]

    @property
    def adding(self) -> tuple[int, ...]:
        return tuple(b for b in self.target if b not in self.current)

    @property
    def removing(self) -> tuple[int, ...]:
        return tuple(b for b in self.current if b not in self.target)


@dataclass(frozen=True, slots=True)
class ReassignmentPlan:
    """Partitions to move (only those that change), with current and target replicas. May span
    topics: an engine merges its topics' plans into one run per cluster."""

    moves: Mapping[TopicPartition, PartitionMove] = field(default_factory=lambda: _EMPTY)

    def __post_init__(self) -> None:
        object.__setattr__(self, "moves", MappingProxyType(dict(sorted(self.moves.items()))))

    @classmethod
    def of(cls, topic: str, current: Sequence[Sequence[int]], target: Sequence[Sequence[int]]) -> ReassignmentPlan:
        """The partitions of `topic` whose replica list differs (partitions beyond `target` stay)."""
        moves = {
            TopicPartition(topic, p): PartitionMove(tuple(current[p]) if p < len(current) else (), tuple(wanted))
            for p, wanted in enumerate(target)
            if p >= len(current) or tuple(current[p]) != tuple(wanted)
        }
        return cls(moves)

    @classmethod
    def merge(cls, *plans: ReassignmentPlan) -> ReassignmentPlan:
        moves: dict[TopicPartition, PartitionMove] = {}
        for plan in plans:
            moves.update(plan.moves)
        return cls(moves)

    @property
    def topics(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(tp.topic for tp in self.moves))

    @property
    def brokers(self) -> frozenset[int]:
        return frozenset(b for m in self.moves.values() for b in (*m.current, *m.target))

    def targets(self) -> dict[TopicPartition, tuple[int, ...]]:
        return {tp: m.target for tp, m in self.moves.items()}

    def for_topic(self, topic: str) -> ReassignmentPlan:
        return ReassignmentPlan({tp: m for tp, m in self.moves.items() if tp.topic == topic})

    def __len__(self) -> int:
        return len(self.moves)

    def __bool__(self) -> bool:
        return bool(self.moves)


def plan_change(
    topic: str,
    current: Sequence[Sequence[int]],
    replication_factor: int,
    brokers: Mapping[int, str | None],
    target: Sequence[Sequence[int]] | None = None,
    load: Mapping[int, int] | None = None,
) -> ReassignmentPlan | Problem:
    """The plan for a `ChangeReplicas(topic, target, replication_factor)` step, given the topic's
    current assignment and the live brokers (id -> rack). Pure. `target` None: computed by
    `plan_placement`; given: it covers the first partitions, the others stay."""
    if target is None:
        if not 1 <= replication_factor <= len(brokers):
            return Problem(INVALID_REPLICATION_FACTOR, f"topic {topic!r}: replication factor {replication_factor} "
                                                       f"needs at least that many live brokers (live: {sorted(brokers)})")
        final = plan_placement(current, replication_factor, brokers, load)
    else:
        final = tuple(tuple(r) for r in target) + tuple(tuple(r) for r in current[len(target):])
    problem = placement_problem(final, brokers)
    if problem is not None:
        return Problem(INVALID_REPLICA_ASSIGNMENT, f"topic {topic!r}: {problem}")
    return ReassignmentPlan.of(topic, current, final)


class MoveBudget:
    """How many partitions may move at once; share one per cluster between concurrent runs."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError("a move budget needs at least one slot")
        self.limit = limit
        self.in_use = 0

    def take(self, wanted: int) -> int:
        granted = max(0, min(wanted, self.limit - self.in_use))
        self.in_use += granted
        return granted

    def force(self, count: int) -> None:
        """Count moves already in flight (adopted after a restart), even above the limit."""
        self.in_use += count

    def give(self, count: int) -> None:
        self.in_use = max(0, self.in_use - count)


# --- progress ---------------------------------------------------------------------------------


class ReassignmentState(StrEnum):
    PENDING = "pending"
    MOVING = "moving"
    ELECTING = "electing"
    DONE = "done"
    CANCELLED = "cancelled"
    FAILED = "failed"
    EXTERNAL = "external"  # done, except partitions someone else is moving (left alone)


@dataclass(frozen=True, slots=True)
class ThrottleRecord:
    """What kafkaops added to throttle a reassignment, for removing exactly that, also after a
    restart. Small and JSON-friendly (`to_json`/`from_json`, or `to_entry`/`from_entry` for an
    ownership-store entry): the rate, the brokers whose two rate keys kafkaops set, and per topic
    the `partition:broker` entries it appended to the two throttled-replica lists (entries that
    were already there are not kafkaops')."""

    rate: int
    brokers: tuple[int, ...] = ()
    leader_replicas: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: _EMPTY)
    follower_replicas: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: _EMPTY)

    def __post_init__(self) -> None:
        object.__setattr__(self, "brokers", tuple(sorted(set(self.brokers))))
        for name in ("leader_replicas", "follower_replicas"):
            value = {t: tuple(e) for t, e in sorted(getattr(self, name).items()) if e}
            object.__setattr__(self, name, MappingProxyType(value))

    @property
    def topics(self) -> tuple[str, ...]:
        return tuple(sorted({*self.leader_replicas, *self.follower_replicas}))

    @property
    def empty(self) -> bool:
        return not self.brokers and not self.leader_replicas and not self.follower_replicas

    def to_json(self) -> dict[str, Any]:
        return {"rate": self.rate, "brokers": list(self.brokers),
                "leaderReplicas": {t: ",".join(e) for t, e in self.leader_replicas.items()},
                "followerReplicas": {t: ",".join(e) for t, e in self.follower_replicas.items()}}

    def to_entry(self) -> dict[str, str]:
        """The record as a flat str -> str map: an ownership-store entry (`OwnershipStore.update`)."""
        entry = {"rate": str(self.rate), "brokers": ",".join(map(str, self.brokers))}
        entry.update({f"leader/{t}": ",".join(e) for t, e in self.leader_replicas.items()})
        entry.update({f"follower/{t}": ",".join(e) for t, e in self.follower_replicas.items()})
        return entry

    @classmethod
    def from_entry(cls, entry: Mapping[str, str | None]) -> ThrottleRecord:
        def pick(prefix: str) -> dict[str, tuple[str, ...]]:
            return {k[len(prefix):]: tuple(e for e in (v or "").split(",") if e)
                    for k, v in entry.items() if k.startswith(prefix)}

        brokers = tuple(int(b) for b in (entry.get("brokers") or "").split(",") if b)
        return cls(int(entry["rate"] or 0), brokers, pick("leader/"), pick("follower/"))

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ThrottleRecord:
        def entries(raw: Mapping[str, str]) -> dict[str, tuple[str, ...]]:
            return {t: tuple(e for e in v.split(",") if e) for t, v in raw.items()}

        return cls(int(data["rate"]), tuple(int(b) for b in data.get("brokers", ())),
                   entries(data.get("leaderReplicas", {})), entries(data.get("followerReplicas", {})))


@dataclass(frozen=True, slots=True)
class ReassignmentProgress:
    """Where a run stands. Counts cover kafkaops' partitions (external ones are not counted);
    bytes are None when DescribeLogDirs could not be read."""

    state: ReassignmentState
    partitions_total: int
    partitions_done: int = 0
    bytes_total: int | None = None
    bytes_done: int | None = None
    started_at: datetime | None = None
    eta: datetime | None = None
    message: str = ""
    problem: Problem | None = None  # what stopped the whole run; partitions' own problems are in `failed`
    failed: Mapping[TopicPartition, Problem] = field(default_factory=lambda: _EMPTY)
    external: frozenset[TopicPartition] = frozenset()
    cancelled: frozenset[TopicPartition] = frozenset()
    moving: frozenset[TopicPartition] = frozenset()
    throttle: ThrottleRecord | None = None  # set while a throttle is in place
    notes: tuple[str, ...] = ()

    @property
    def percent(self) -> int:
        if self.bytes_total:
            return min(100, int(100 * (self.bytes_done or 0) / self.bytes_total))
        if self.partitions_total:
            return int(100 * self.partitions_done / self.partitions_total)
        return 100

    @property
    def finished(self) -> bool:
        return self.state in (ReassignmentState.DONE, ReassignmentState.CANCELLED,
                              ReassignmentState.FAILED, ReassignmentState.EXTERNAL)

    def problem_for(self, topic: str) -> Problem | None:
        """One topic's problem in a (multi-topic) run: its failed partitions, else what stopped the
        run, else its partitions moved by someone else, else its cancelled ones; None: all moved."""
        failed = [(tp, p) for tp, p in self.failed.items() if tp.topic == topic]
        if failed:
            tp, first = failed[0]
            more = f" (and {len(failed) - 1} more partition(s))" if len(failed) > 1 else ""
            return Problem(first.reason, f"{first.message}{more}", first.retriable)
        if self.state is ReassignmentState.FAILED and self.problem is not None:
            return self.problem
        external = sorted(tp for tp in self.external if tp.topic == topic)
        if external:
            return Problem(EXTERNAL_REASSIGNMENT, f"partition(s) {_names(external)} are being reassigned by "
                                                  "someone else (not kafkaops): left alone, retried later", True)
        cancelled = sorted(tp for tp in self.cancelled if tp.topic == topic)
        if self.state is ReassignmentState.CANCELLED and cancelled:
            return Problem(REASSIGNMENT_CANCELLED, f"reassignment of {_names(cancelled)} cancelled "
                                                   "(back on their previous replicas)", True)
        return None


def _names(partitions: Iterable[TopicPartition], limit: int = 5) -> str:
    items = sorted(partitions)
    shown = ", ".join(map(str, items[:limit]))
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def _bytes(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover


# --- errors ------------------------------------------------------------------------------------


def _item_problem(what: str, error: KafkaError) -> Problem:
    return Problem(error.name, f"{what} failed with {error}", error.retriable)


async def _call(callback: Callable[[Any], Any] | None, value: Any) -> None:
    if callback is None:
        return
    result = callback(value)
    if inspect.isawaitable(result):
        await result


# --- external reassignments, cancel -------------------------------------------------------------


def in_flight_target(reassignment: Reassignment) -> tuple[int, ...]:
    """Where a listed reassignment goes: its replicas without the ones being removed."""
    return tuple(b for b in reassignment.replicas if b not in reassignment.removing)


def detect_external(
    reassigning: Mapping[TopicPartition, Reassignment] | AbstractSet[TopicPartition],
    ours: Mapping[TopicPartition, Sequence[int]] | AbstractSet[TopicPartition],
) -> frozenset[TopicPartition]:
    """Partitions being reassigned that kafkaops did not start: not among `ours`, or (when both
    sides carry targets) moving somewhere other than our target. Pass what concerns you (a topic's
    partitions): everything else moving in the cluster is "not ours" too."""
    external: set[TopicPartition] = set()
    for tp in reassigning:
        if tp not in ours:
            external.add(tp)
        elif isinstance(reassigning, Mapping) and isinstance(ours, Mapping):
            if in_flight_target(reassigning[tp]) != tuple(ours[tp]):
                external.add(tp)
    return frozenset(external)


async def cancel(
    admin: AdminClient, partitions: Mapping[TopicPartition, Sequence[int]] | Iterable[TopicPartition]
) -> dict[TopicPartition, Problem | None]:
    """Cancel reassignments in flight (Kafka puts the partitions back on their previous replicas).

    With a mapping partition -> kafkaops' target, only reassignments still moving to that target
    are cancelled; one moving elsewhere is someone else's: left alone, with an
    ExternalReassignment problem. None for a partition cancelled or not moving any more."""
    targets = dict(partitions) if isinstance(partitions, Mapping) else None
    wanted = list(dict.fromkeys(targets if targets is not None else partitions))
    results: dict[TopicPartition, Problem | None] = {tp: None for tp in wanted}
    if not wanted:
        return results
    try:
        if targets is not None:
            listing = await admin.list_partition_reassignments(wanted)
            external = detect_external({tp: r for tp, r in listing.items() if tp in targets},
                                       {tp: tuple(t) for tp, t in targets.items()})
            for tp in external:
                results[tp] = Problem(EXTERNAL_REASSIGNMENT, f"{tp} is being reassigned by someone else to "
                                      f"{list(in_flight_target(listing[tp]))}: not cancelled", True)
            wanted = [tp for tp in wanted if tp in listing and tp not in external]
        if not wanted:
            return results
        answered = await admin.alter_partition_reassignments({tp: None for tp in wanted})
    except KafkaOpsError as exc:
        problem = problem_from_exception(exc, "cancelling partition reassignments")
        return {tp: (problem if tp in wanted else p) for tp, p in results.items()}
    for tp in wanted:
        error = answered[tp].error
        if error is not None and error.code != ErrorCode.no_reassignment_in_progress:
            results[tp] = _item_problem(f"cancelling the reassignment of {tp}", error)
    return results


# --- throttles ----------------------------------------------------------------------------------


def _split(value: str | None) -> list[str]:
    return [item.strip() for item in (value or "").split(",") if item.strip()]


def throttle_entries(
    moves: Mapping[TopicPartition, PartitionMove],
) -> tuple[dict[str, list[str]], dict[str, list[str]], frozenset[int]]:
    """Throttled-replica entries per topic (leader: the current replicas; follower: the adding
    ones) and the brokers involved (current and target replicas)."""
    leader: dict[str, list[str]] = {}
    follower: dict[str, list[str]] = {}
    brokers: set[int] = set()
    for tp, move in sorted(moves.items()):
        leader.setdefault(tp.topic, []).extend(f"{tp.partition}:{b}" for b in move.current)
        if move.adding:
            follower.setdefault(tp.topic, []).extend(f"{tp.partition}:{b}" for b in move.adding)
        brokers.update(move.current, move.target)
    return leader, follower, frozenset(brokers)


async def set_throttles(
    admin: AdminClient,
    moves: Mapping[TopicPartition, PartitionMove],
    rate: int,
    persist: PersistThrottle | None = None,
) -> tuple[ThrottleRecord | None, Problem | None, tuple[str, ...]]:
    """Throttle `moves` at `rate` bytes/s: (record of what kafkaops added, problem, notes).

    Broker rates are set where they are not already overridden with another value (someone
    else's throttle is left as it is); topic entries are APPENDed (atomic, deduplicated by
    Kafka), never over a "*". `persist(record)` runs before anything is written. On a problem,
    whatever was written is removed again (the record is returned if that failed too)."""
    leader, follower, brokers = throttle_entries(moves)
    topics = sorted({*leader, *follower})
    resources = [ConfigResource.topic(t) for t in topics] + [ConfigResource.broker(b) for b in sorted(brokers)]
    notes: list[str] = []
    try:
        described = await admin.describe_configs(resources, keys=[*THROTTLE_REPLICAS, *THROTTLE_RATES])
    except KafkaOpsError as exc:
        return None, problem_from_exception(exc, "reading the throttle configs"), ()
    failed = described.failed()
    if failed:
        resource, error = next(iter(failed.items()))
        return None, _item_problem(f"DescribeConfigs({resource.type.name.lower()} {resource.name})", error), ()

    added: dict[str, dict[str, tuple[str, ...]]] = {LEADER_REPLICAS: {}, FOLLOWER_REPLICAS: {}}
    ops: dict[ConfigResource, list[AlterConfigOp]] = {}
    for topic in topics:
        configs = described[ConfigResource.topic(topic)].value or {}
        for key, wanted in ((LEADER_REPLICAS, leader.get(topic, [])), (FOLLOWER_REPLICAS, follower.get(topic, []))):
            entry = configs.get(key)
            present = _split(entry.value) if entry is not None and entry.source is ConfigSource.DYNAMIC_TOPIC_CONFIG else []
            if "*" in present:
                notes.append(f"topic {topic!r}: {key} is '*' (every replica throttled): left as it is")
                continue
            new = [e for e in dict.fromkeys(wanted) if e not in present]
            if new:
                added[key][topic] = tuple(new)
                ops.setdefault(ConfigResource.topic(topic), []).append(AlterConfigOp(key, ",".join(new), AlterOp.APPEND))
    owned: list[int] = []
    for broker in sorted(brokers):
        configs = described[ConfigResource.broker(broker)].value or {}
        others = [k for k in THROTTLE_RATES if (e := configs.get(k)) is not None
                  and e.source is ConfigSource.DYNAMIC_BROKER_CONFIG and e.value != str(rate)]
        if others:
            notes.append(f"broker {broker}: {', '.join(others)} already set to another value by someone else: "
                         "left as it is")
            continue
        owned.append(broker)
        ops[ConfigResource.broker(broker)] = [AlterConfigOp(k, str(rate), AlterOp.SET) for k in THROTTLE_RATES]
    record = ThrottleRecord(rate, tuple(owned), added[LEADER_REPLICAS], added[FOLLOWER_REPLICAS])
    if record.empty:
        return None, None, tuple(notes)
    await _call(persist, record)
    try:
        written = await admin.incremental_alter_configs(ops)
        problem = None
        if written.failed():
            resource, error = next(iter(written.failed().items()))
            problem = _item_problem(f"setting the replication throttle on {resource.type.name.lower()} "
                                    f"{resource.name}", error)
    except KafkaOpsError as exc:
        problem = problem_from_exception(exc, "setting the replication throttle")
    if problem is None:
        return record, None, tuple(notes)
    problem = Problem(THROTTLE_FAILED, f"{problem.message}: nothing was moved", problem.retriable)
    if await cleanup_throttles(admin, record) is None:
        await _call(persist, None)
        return None, problem, tuple(notes)
    return record, problem, tuple(notes)


async def cleanup_throttles(admin: AdminClient, record: ThrottleRecord) -> Problem | None:
    """Remove what `record` says kafkaops added, and only that: its `partition:broker` entries
    from the two throttled-replica lists (a list left empty is deleted; others' entries stay),
    and the two rates on its brokers while they still hold the recorded value (a value someone
    changed since is theirs). Idempotent: call it again after a restart with the persisted
    record. None when done (forget the record then); a retriable problem otherwise."""
    resources = [ConfigResource.topic(t) for t in record.topics] + [ConfigResource.broker(b) for b in record.brokers]
    if not resources:
        return None
    try:
        described = await admin.describe_configs(resources, keys=[*THROTTLE_REPLICAS, *THROTTLE_RATES])
        ops: dict[ConfigResource, list[AlterConfigOp]] = {}
        unreadable: list[str] = []
        for resource in resources:
            result = described[resource]
            if result.error is not None:
                if result.error.code == ErrorCode.unknown_topic_or_partition:
                    continue  # the topic is gone, and its configs with it
                unreadable.append(f"{resource.type.name.lower()} {resource.name}: {result.error}")
                continue
            configs = result.value or {}
            if resource.type is not ConfigResourceType.TOPIC:
                for key in THROTTLE_RATES:
                    entry = configs.get(key)
                    if entry is not None and entry.source is ConfigSource.DYNAMIC_BROKER_CONFIG \
                            and entry.value == str(record.rate):
                        ops.setdefault(resource, []).append(AlterConfigOp(key, None, AlterOp.DELETE))
                continue
            for key, ours in ((LEADER_REPLICAS, record.leader_replicas), (FOLLOWER_REPLICAS, record.follower_replicas)):
                mine = set(ours.get(resource.name, ()))
                entry = configs.get(key)
                if not mine or entry is None or entry.source is not ConfigSource.DYNAMIC_TOPIC_CONFIG:
                    continue
                present = _split(entry.value)
                remove = [e for e in present if e in mine]
                if not remove:
                    continue
                if len(remove) == len(present):
                    ops.setdefault(resource, []).append(AlterConfigOp(key, None, AlterOp.DELETE))
                else:
                    ops.setdefault(resource, []).append(AlterConfigOp(key, ",".join(remove), AlterOp.SUBTRACT))
        written = await admin.incremental_alter_configs(ops) if ops else None
    except KafkaOpsError as exc:
        problem = problem_from_exception(exc, "removing the replication throttle")
        return Problem(THROTTLE_CLEANUP_FAILED, problem.message, True)
    failures = unreadable + [f"{r.type.name.lower()} {r.name}: {e}" for r, e in (written.failed() if written else {}).items()
                             if not (r.type is ConfigResourceType.TOPIC and e.code == ErrorCode.unknown_topic_or_partition)]
    if failures:
        return Problem(THROTTLE_CLEANUP_FAILED, "the replication throttle could not be removed everywhere "
                       f"(kept the record to retry): {'; '.join(failures)}", True)
    return None


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
) -> ReassignmentRun:
    """Start `plan` in a task; see the module docstring for the steps."""
    return ReassignmentRun(_Executor(admin, plan, settings, progress_callback, persist_throttle,
                                     budget or MoveBudget(settings.max_partitions_moving), clock))


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
                 clock: Callable[[], datetime]) -> None:
        self.admin = admin
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
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(asyncio.shield(cleanup_throttles(self.admin, self.throttle)), 30)
            raise
        except BaseException:
            if self.throttle is not None:
                with contextlib.suppress(Exception):
                    await self._unthrottle()
            raise
        return final

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
                    log.warning("reassignment round failed (%d/%d): %s", failed_rounds, MAX_FAILED_ROUNDS, exc)
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
