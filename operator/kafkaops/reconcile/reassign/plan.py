"""Reassignment settings and plans: `ReassignmentSettings`, `plan_change` (pure; placement.py
chooses the brokers), `MoveBudget` (partitions in flight per cluster), the problem reasons."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import field
from datetime import datetime, timezone
from types import MappingProxyType
from typing import Any

from kafkaops.frozen import frozen
from kafkaops.kafka import KafkaError, TopicPartition
from kafkaops.reconcile.actions import Problem
from kafkaops.reconcile.placement import placement_problem, plan_placement


# Problem reasons (rule names; Kafka error names are used as they come).
INVALID_REPLICA_ASSIGNMENT = "InvalidReplicaAssignment"
INVALID_REPLICATION_FACTOR = "InvalidReplicationFactor"
EXTERNAL_REASSIGNMENT = "ExternalReassignment"
REASSIGNMENT_TIMEOUT = "ReassignmentTimeout"
REASSIGNMENT_CANCELLED = "ReassignmentCancelled"
THROTTLE_FAILED = "ThrottleFailed"
THROTTLE_CLEANUP_FAILED = "ThrottleCleanupFailed"

_EMPTY: Mapping[Any, Any] = MappingProxyType({})


def _now() -> datetime:
    return datetime.now(timezone.utc)


# --- settings, plan -------------------------------------------------------------------------


@frozen
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


@frozen
class PartitionMove:
    current: tuple[int, ...]
    target: tuple[int, ...]

    @property
    def adding(self) -> tuple[int, ...]:
        return tuple(b for b in self.target if b not in self.current)

    @property
    def removing(self) -> tuple[int, ...]:
        return tuple(b for b in self.current if b not in self.target)


@frozen
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
                                                       f"needs at least that many live brokers (live: {sorted(brokers)})",
                           retriable=replication_factor >= 1)  # a broker that is down comes back
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


# --- errors ------------------------------------------------------------------------------------


def _item_problem(what: str, error: KafkaError) -> Problem:
    return Problem(error.name, f"{what} failed with {error}", error.retriable)


async def _call(callback: Callable[[Any], Any] | None, value: Any) -> None:
    if callback is None:
        return
    result = callback(value)
    if inspect.isawaitable(result):
        await result
