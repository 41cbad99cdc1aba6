"""The replication throttle of a reassignment: `ThrottleRecord` (what kafkaops set, written
ahead so a restart removes exactly that), `set_throttles`, `cleanup_throttles`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from kafkaops.frozen import frozen
from kafkaops.kafka import (
    AdminClient,
    AlterConfigOp,
    AlterOp,
    ConfigResource,
    ConfigResourceType,
    ConfigSource,
    TopicPartition,
)
from kafkaops.kafka.errors import ErrorCode, KafkaOpsError
from kafkaops.reconcile.actions import Problem, problem_from_exception
from kafkaops.reconcile.reassign.plan import (
    THROTTLE_CLEANUP_FAILED,
    THROTTLE_FAILED,
    _EMPTY,
    PartitionMove,
    _call,
    _item_problem,
)


LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
THROTTLE_RATES = (LEADER_RATE, FOLLOWER_RATE)
THROTTLE_REPLICAS = (LEADER_REPLICAS, FOLLOWER_REPLICAS)

if TYPE_CHECKING:
    from collections.abc import Awaitable

PersistThrottle = Callable[["ThrottleRecord | None"], "Awaitable[None] | None"]


@frozen
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
