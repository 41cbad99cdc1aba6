"""Outcomes: what happened to each resource, and a run's report."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import field
from enum import StrEnum

from kafkaops.frozen import frozen
from kafkaops.kafka import CreatedTopic, TopicInfo
from kafkaops.reconcile.actions import (
    Action,
    ChangeReplicas,
    CreatePartitions,
    CreateTopic,
    DeleteTopic,
    FieldChange,
    Plan,
    Problem,
    StepResult,
    StepState,
)
from kafkaops.resources.documents import Source


class State(StrEnum):
    UNCHANGED = "unchanged"  # already as declared
    APPLIED = "applied"  # changed and complete (read back)
    VALIDATED = "validated"  # --validate-only: the brokers accepted the change without making it
    FAILED = "failed"  # refused by a safety rule, by Kafka, or not complete in time
    INVALID = "invalid"  # the manifest failed validation: nothing was sent for it


@frozen
class Outcome:
    source: Source
    kind: str
    name: str
    state: State
    action: Action = Action.NONE
    changes: tuple[FieldChange, ...] = ()
    problem: Problem | None = None
    notes: tuple[str, ...] = ()
    # each step's result, in order (the steps sent, and the one that failed, if any)
    results: tuple[StepResult, ...] = ()
    # the topic as the Metadata that found it complete saw it (every partition led), when this run
    # created it or added partitions and waited
    led: TopicInfo | None = None

    @property
    def created(self) -> CreatedTopic | None:
        """What CreateTopics answered for this resource's new topic (topic id, partitions,
        replication factor), when it created one."""
        return next((r.value for r in self.results if isinstance(r.step, CreateTopic) and r.state is StepState.OK
                     and r.value is not None), None)

    @property
    def reshaped(self) -> bool:
        """This run sent (or deferred) a step that changes a topic's id, partitions or replicas: what
        was read before it is out of date."""
        return any(isinstance(r.step, (CreateTopic, CreatePartitions, ChangeReplicas, DeleteTopic)) for r in self.results)

    @property
    def ok(self) -> bool:
        return self.state not in (State.FAILED, State.INVALID)

    @property
    def reason(self) -> str:
        return self.problem.reason if self.problem else self.state.value

    @property
    def message(self) -> str:
        return self.problem.message if self.problem else ""


@frozen
class Report:
    """One reconcile of one cluster."""

    cluster: str
    plan: Plan
    outcomes: tuple[Outcome, ...]
    # admin requests sent while this run was in progress (observe, apply, wait), by API; runs sharing
    # one client concurrently (the operator) each count the shared requests
    requests: Mapping[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    # With RunOptions.defer_replica_changes: the replica changes left to the caller, by resource.
    deferred: Mapping[Source, tuple[ChangeReplicas, ...]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(o.ok for o in self.outcomes)

    @property
    def failed(self) -> tuple[Outcome, ...]:
        return tuple(o for o in self.outcomes if not o.ok)

    def counts(self) -> dict[str, int]:
        return dict(Counter(o.state.value for o in self.outcomes))
