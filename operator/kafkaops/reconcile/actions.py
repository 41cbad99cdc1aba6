"""The plan's vocabulary: per-resource plans made of steps (one admin item each),
field changes to show people, and problems that stop a resource.

Every step is tied to the resource it serves (`ResourcePlan.source`), so a
per-item result from a batched request finds its way back to one resource.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import field
from enum import StrEnum
from typing import TypeAlias

from kafkaops.frozen import frozen
from kafkaops.kafka import (
    AlterConfigOp,
    ConfigResource,
    CreatedTopic,
    KafkaError,
    NewPartitions,
    NewTopic,
    QuotaAlteration,
    ScramMechanism,
)
from kafkaops.kafka.errors import AuthenticationFailed, KafkaOpsError, KafkaRequestError, UnsupportedFeature
from kafkaops.kafka.security import Secret
from kafkaops.resources.acl import AclBinding
from kafkaops.resources.documents import Source


class Action(StrEnum):
    """What a resource's plan does, headline first (the fleet pipeline uses the same names)."""

    NONE = "none"
    CREATE = "create"
    UPDATE = "update"
    PARTITION_INCREASE = "partition-increase"
    REPLICA_CHANGE = "replica-change"
    DELETE = "delete"


# --- steps: one admin item each ---------------------------------------------------


@frozen
class CreateTopic:
    topic: NewTopic


@frozen
class CreatePartitions:
    request: NewPartitions


@frozen
class AlterConfigs:
    resource: ConfigResource
    ops: tuple[AlterConfigOp, ...]


@frozen
class DeleteAcls:
    bindings: tuple[AclBinding, ...]


@frozen
class CreateAcls:
    bindings: tuple[AclBinding, ...]


@frozen
class DeleteTopic:
    name: str


@frozen
class ChangeReplicas:
    """A replication-factor or assignment change: planned and shown; executed by partition
    reassignment (not by this engine's apply yet)."""

    topic: str
    target: tuple[tuple[int, ...], ...] | None  # None: a new replication factor, placement to compute
    replication_factor: int


@frozen
class UpsertScramCredential:
    """Create or replace `user`'s credential for `mechanism` (salted at apply time). `password` is a
    Secret (prints as ***); `fingerprint` (principals.password_fingerprint) is what the ownership
    store remembers of it once applied."""

    user: str
    mechanism: ScramMechanism
    iterations: int
    password: Secret = field(repr=False, compare=False)
    fingerprint: str = field(repr=False, compare=False, default="")


@frozen
class DeleteScramCredential:
    user: str
    mechanism: ScramMechanism


@frozen
class AlterQuotas:
    """Set (a number) or remove (None) quota keys of one entity."""

    alteration: QuotaAlteration


Step: TypeAlias = (CreateTopic | CreatePartitions | AlterConfigs | DeleteAcls | CreateAcls | DeleteTopic | ChangeReplicas
                   | UpsertScramCredential | DeleteScramCredential | AlterQuotas)


# --- what people see -------------------------------------------------------------------


@frozen
class FieldChange:
    """`field` goes from `old` to `new` (None: absent). Sensitive values are never kept."""

    field: str
    old: str | None
    new: str | None
    sensitive: bool = False

    def __post_init__(self) -> None:
        if self.sensitive:
            object.__setattr__(self, "old", None if self.old is None else "(sensitive)")
            object.__setattr__(self, "new", None if self.new is None else "(sensitive)")

    def __str__(self) -> str:
        if self.old is None:
            return f"{self.field}: + {self.new}"
        if self.new is None:
            return f"{self.field}: - {self.old}"
        return f"{self.field}: {self.old} -> {self.new}"


@frozen
class Problem:
    """Why a resource cannot (or could not) reach its desired state.

    `reason` is a Kafka error name (TOPIC_AUTHORIZATION_FAILED) or a rule name
    (PartitionDecrease); `retriable` problems may go away by themselves.
    """

    reason: str
    message: str
    retriable: bool = False

    def __str__(self) -> str:
        return f"{self.reason}: {self.message}"


UNSUPPORTED_FEATURE = "UnsupportedFeature"


def problem_from_exception(exc: KafkaOpsError, what: str) -> Problem:
    """A client-level failure (cluster unreachable, timed out after retries, API unsupported) as a Problem."""
    if isinstance(exc, UnsupportedFeature):
        return Problem(UNSUPPORTED_FEATURE, f"{what}: {exc}")  # the exception names the API and versions
    if isinstance(exc, KafkaRequestError):
        return Problem(exc.error.name, f"{what}: {exc}", exc.error.retriable)
    if isinstance(exc, AuthenticationFailed):
        return Problem("AuthenticationFailed", f"{what}: {exc}")
    return Problem(type(exc).__name__, f"{what}: {exc}", retriable=True)


class StepState(StrEnum):
    """How one step ended."""

    OK = "ok"  # Kafka accepted it (or, validate-only, would have)
    DEFERRED = "deferred"  # a replica change: the engine runs one reassignment per cluster after the rest
    SKIPPED = "skipped"  # not sent, for a reason that is not a failure (no validate-only mode for this API)
    FAILED = "failed"  # refused by Kafka, or the client could not send it: `problem` says why


@frozen
class StepResult:
    """What running one step did: the typed end of the admin client's ItemResult, carried to the
    Outcome (and from there to the operator's status).

    `value` is the data the step's answer holds (CreateTopics: the CreatedTopic, with the topic id,
    partitions and replication factor the broker reported); `error` the Kafka error a failed item
    answered (None when the client itself failed: unreachable, unsupported, timed out)."""

    step: Step
    state: StepState
    value: CreatedTopic | None = None
    problem: Problem | None = None
    error: KafkaError | None = None
    note: str | None = None  # SKIPPED: why

    @classmethod
    def ok(cls, step: Step, value: CreatedTopic | None = None) -> StepResult:
        return cls(step, StepState.OK, value)

    @classmethod
    def deferred(cls, step: Step) -> StepResult:
        return cls(step, StepState.DEFERRED)

    @classmethod
    def skipped(cls, step: Step, why: str) -> StepResult:
        return cls(step, StepState.SKIPPED, note=why)

    @classmethod
    def failed(cls, step: Step, problem: Problem, error: KafkaError | None = None) -> StepResult:
        return cls(step, StepState.FAILED, problem=problem, error=error)


@frozen
class ResourcePlan:
    """One resource's part of a plan."""

    source: Source
    kind: str
    name: str  # the Kafka-side name: topic, principal, "brokers/<id>" or "brokers/default"
    action: Action
    changes: tuple[FieldChange, ...] = ()
    steps: tuple[Step, ...] = ()
    problem: Problem | None = None  # set: nothing of this resource is applied
    # For topics and broker configs: the ownership entry (ownership.py) and the config keys it
    # owns once applied.
    owner: str | None = None
    owned_keys: frozenset[str] | None = None

    @property
    def pending(self) -> bool:
        """Something to do or to report."""
        return self.action is not Action.NONE or self.problem is not None


@frozen
class Plan:
    cluster: str
    resources: tuple[ResourcePlan, ...]
    notes: tuple[str, ...] = ()
    cluster_id: str | None = field(default=None, compare=False)

    @property
    def pending(self) -> tuple[ResourcePlan, ...]:
        return tuple(r for r in self.resources if r.pending)

    @property
    def has_changes(self) -> bool:
        return any(r.action is not Action.NONE for r in self.resources)

    @property
    def problems(self) -> tuple[ResourcePlan, ...]:
        return tuple(r for r in self.resources if r.problem is not None)

    def counts(self) -> dict[str, int]:
        counts = Counter(r.action.value for r in self.resources if r.problem is None)
        counts["problem"] = len(self.problems)
        return dict(counts)
