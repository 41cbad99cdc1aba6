"""The shared state of the fake cluster test double.

One ``ClusterStateDouble`` holds what every broker of the double sees: brokers
(host, port, rack, alive), topics with UUID ids and partitions (replicas, ISR,
leader, leader epoch, size in bytes), topic and broker configs, ACL bindings
and reassignments in progress. It is plain synchronous Python mutated by the
request handlers one request at a time, so each request is atomic.

Time is virtual: ``advance(ticks)`` copies reassignment bytes and elects
delayed leaders; the server may drive it from a background ticker.
"""

from __future__ import annotations

import base64
import random
import time
import uuid
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from kio.schema.errors import ErrorCode

from kafkaops.frozen import frozen

from .acls import AclBinding
from .catalog import BROKER_CONFIGS, TOPIC_CONFIGS, ConfigSource, ConfigSpec, ConfigType, broker_spec
from .placement import assign_replicas
from .principals import PrincipalStoreDouble

MIB = 1024 * 1024
LOG_DIR = "/var/lib/kafka/data"
NO_LEADER = -1

Mode = Literal["kraft", "zk"]


@dataclass(slots=True)
class BrokerDouble:
    """One broker of the double."""

    node_id: int
    host: str
    port: int
    rack: str | None
    alive: bool = True
    sasl_port: int | None = None  # the SASL_PLAINTEXT listener, when the double has one


@dataclass(slots=True)
class PartitionDouble:
    """One partition: replicas in preference order, ISR, leader (-1 = none)."""

    index: int
    replicas: list[int]
    isr: list[int]
    leader: int
    size_bytes: int
    leader_epoch: int = 0


@dataclass(slots=True)
class TopicDouble:
    """One topic; ``cache`` holds built response entities until the topic changes."""

    name: str
    topic_id: uuid.UUID
    partitions: list[PartitionDouble]
    configs: dict[str, str]
    cache: dict[Any, Any] = field(default_factory=dict)

    def touch(self) -> None:
        self.cache.clear()

    @property
    def replication_factor(self) -> int:
        return len(self.partitions[0].replicas) if self.partitions else 0


@dataclass(slots=True)
class ReassignmentDouble:
    """A partition moving from ``original`` to ``target`` replicas; bytes copied per new replica."""

    topic: str
    partition: int
    original: tuple[int, ...]
    target: tuple[int, ...]
    copied: dict[int, int]

    @property
    def adding(self) -> tuple[int, ...]:
        return tuple(b for b in self.target if b not in self.original)

    @property
    def removing(self) -> tuple[int, ...]:
        return tuple(b for b in self.original if b not in self.target)

    @property
    def merged(self) -> list[int]:
        """Replicas while moving: target first, then the ones being removed (as Kafka)."""
        return list(self.target) + list(self.removing)


@frozen
class Synonym:
    name: str
    value: str | None
    source: ConfigSource


@frozen
class ConfigEntry:
    """A resolved config as DescribeConfigs reports it (value unmasked)."""

    name: str
    value: str | None
    source: ConfigSource
    read_only: bool
    sensitive: bool
    type: ConfigType
    doc: str
    synonyms: tuple[Synonym, ...]


@frozen
class StateSettings:
    """Behaviour knobs of the double's state."""

    mode: Mode = "kraft"
    default_partitions: int = 1
    default_replication_factor: int = 1
    partition_size_bytes: int = 10 * MIB
    reassignment_step_bytes: int = 4 * MIB
    leader_delay_ticks: int = 0
    record_limit: int = 10_000
    configs_in_create_response: bool = True
    static_broker_configs: Mapping[str, str] = field(default_factory=dict)


def collision_key(name: str) -> str:
    """Kafka treats '.' and '_' as colliding in topic names (metric names)."""
    return name.replace(".", "_")


class ClusterStateDouble:
    """The state every broker of the fake cluster test double shares."""

    def __init__(self, brokers: Iterable[BrokerDouble], settings: StateSettings, seed: int = 0) -> None:
        self.settings = settings
        self.rng = random.Random(seed)  # ids and placement
        self._controller_rng = random.Random(seed + 1)  # kraft's reported controller: polling must not shift placement
        self.brokers: dict[int, BrokerDouble] = {b.node_id: b for b in brokers}
        self.cluster_id = base64.urlsafe_b64encode(self.rng.getrandbits(128).to_bytes(16, "big")).decode()[:22]
        self.controller_id = min(self.brokers)
        self.topics: dict[str, TopicDouble] = {}
        self.topic_ids: dict[uuid.UUID, str] = {}
        self._collisions: dict[str, str] = {}
        self.broker_configs: dict[int, dict[str, str]] = {}
        self.default_configs: dict[str, str] = {}
        self._defaults_cache: dict[int, dict[str, ConfigEntry]] = {}
        self.acls: dict[AclBinding, None] = {}
        self.principals = PrincipalStoreDouble()  # SCRAM credentials and client quotas
        self.reassignments: dict[tuple[str, int], ReassignmentDouble] = {}
        self.pending_leaders: dict[tuple[str, int], int] = {}
        self.tick = 0
        # per topic name: how often it was created, deleted, and how often a create met TOPIC_ALREADY_EXISTS
        self.created: Counter[str] = Counter()
        self.deleted: Counter[str] = Counter()
        self.deletion_times: list[tuple[float, str]] = []  # (wall-clock time, topic) of each deletion
        self.already_exists: Counter[str] = Counter()

    # ----------------------------------------------------------------- brokers
    @property
    def mode(self) -> Mode:
        return self.settings.mode

    def live_brokers(self) -> list[int]:
        return [b.node_id for b in self.brokers.values() if b.alive]

    def is_alive(self, broker_id: int) -> bool:
        broker = self.brokers.get(broker_id)
        return broker is not None and broker.alive

    def reported_controller(self) -> int:
        """zk: the controller; kraft: a random live broker (KRaft hides its controllers)."""
        if self.mode == "zk":
            return self.controller_id if self.is_alive(self.controller_id) else NO_LEADER
        live = self.live_brokers()
        return self._controller_rng.choice(live) if live else NO_LEADER

    def move_controller(self, to: int | None = None) -> int:
        """Make ``to`` (or the next live broker after the current one) the controller."""
        if to is None:
            ids = sorted(self.live_brokers())
            later = [b for b in ids if b > self.controller_id]
            to = (later or ids or [self.controller_id])[0]
        if to not in self.brokers:
            raise ValueError(f"no broker {to}")
        self.controller_id = to
        return to

    def static_configs(self, broker_id: int) -> dict[str, str]:
        s = self.settings
        return {
            "broker.id": str(broker_id),
            "log.dirs": LOG_DIR,
            "num.partitions": str(s.default_partitions),
            "default.replication.factor": str(s.default_replication_factor),
            "auto.create.topics.enable": "false",
            **s.static_broker_configs,
        }

    def broker_down(self, broker_id: int) -> None:
        """Mark a broker dead: it leaves every ISR, its leaderships move or lapse."""
        self.brokers[broker_id].alive = False
        for topic, partition in self._partitions_with(broker_id):
            if broker_id in partition.isr and len(partition.isr) > 1:
                partition.isr.remove(broker_id)
            if partition.leader == broker_id:
                successor = next((b for b in partition.isr if self.is_alive(b)), NO_LEADER)
                self._set_leader(partition, successor)
            topic.touch()
        if self.mode == "zk" and broker_id == self.controller_id and self.live_brokers():
            self.controller_id = min(self.live_brokers())

    def broker_up(self, broker_id: int) -> None:
        """A broker returns: it leads leaderless partitions it is in-sync for, and rejoins ISRs."""
        self.brokers[broker_id].alive = True
        for topic, partition in self._partitions_with(broker_id):
            if partition.leader == NO_LEADER and broker_id in partition.isr:
                self._set_leader(partition, broker_id)
            elif partition.leader != NO_LEADER and broker_id not in partition.isr:
                if not self._is_copying(topic.name, partition.index, broker_id):
                    partition.isr.append(broker_id)
            topic.touch()

    def _partitions_with(self, broker_id: int) -> Iterator[tuple[TopicDouble, PartitionDouble]]:
        for topic in self.topics.values():
            for partition in topic.partitions:
                if broker_id in partition.replicas:
                    yield topic, partition

    # ------------------------------------------------------------------ topics
    def topic_by_id(self, topic_id: uuid.UUID) -> TopicDouble | None:
        name = self.topic_ids.get(topic_id)
        return self.topics.get(name) if name is not None else None

    def colliding_topic(self, name: str) -> str | None:
        other = self._collisions.get(collision_key(name))
        return other if other is not None and other != name else None

    def place(self, partitions: int, replication_factor: int, first_partition: int = 0) -> list[list[int]]:
        racks = {b.node_id: b.rack for b in self.brokers.values()}
        return assign_replicas(
            self.live_brokers(), racks, partitions, replication_factor, self.rng, first_partition
        )

    def new_topic_id(self) -> uuid.UUID:
        return uuid.UUID(int=self.rng.getrandbits(128), version=4)

    def add_topic(self, name: str, assignments: list[list[int]], configs: Mapping[str, str]) -> TopicDouble:
        topic = TopicDouble(name, self.new_topic_id(), [], dict(configs))
        self.topics[name] = topic
        self.created[name] += 1
        self.topic_ids[topic.topic_id] = name
        self._collisions[collision_key(name)] = name
        self._append_partitions(topic, assignments)
        return topic

    def remove_topic(self, name: str) -> TopicDouble:
        topic = self.topics.pop(name)
        self.deleted[name] += 1
        self.deletion_times.append((time.time(), name))
        del self.topic_ids[topic.topic_id]
        self._collisions.pop(collision_key(name), None)
        for partition in topic.partitions:
            self.reassignments.pop((name, partition.index), None)
            self.pending_leaders.pop((name, partition.index), None)
        return topic

    def add_partitions(self, name: str, assignments: list[list[int]]) -> None:
        topic = self.topics[name]
        self._append_partitions(topic, assignments)
        topic.touch()

    def _append_partitions(self, topic: TopicDouble, assignments: list[list[int]]) -> None:
        delay = self.settings.leader_delay_ticks
        for replicas in assignments:
            index = len(topic.partitions)
            isr = [b for b in replicas if self.is_alive(b)]
            leader = isr[0] if isr and delay <= 0 else NO_LEADER
            topic.partitions.append(
                PartitionDouble(index, list(replicas), isr, leader, self.settings.partition_size_bytes)
            )
            if delay > 0 and isr:
                self.pending_leaders[(topic.name, index)] = self.tick + delay

    def elect_pending_leaders(self, due_by: int | None = None) -> int:
        """Give leaders to partitions created under ``leader_delay_ticks``; returns how many."""
        done = [key for key, due in self.pending_leaders.items() if due_by is None or due <= due_by]
        for key in done:
            del self.pending_leaders[key]
            topic = self.topics.get(key[0])
            if topic is None:
                continue
            partition = topic.partitions[key[1]]
            if partition.leader == NO_LEADER:
                self._set_leader(partition, next((b for b in partition.isr if self.is_alive(b)), NO_LEADER))
                topic.touch()
        return len(done)

    def _set_leader(self, partition: PartitionDouble, leader: int) -> None:
        if partition.leader != leader:
            partition.leader = leader
            partition.leader_epoch += 1

    # --------------------------------------------------------------- elections
    def elect(self, topic: TopicDouble, partition: PartitionDouble, unclean: bool) -> tuple[ErrorCode, str | None]:
        """ElectLeaders for one partition (PREFERRED=0 or UNCLEAN=1)."""
        if unclean:
            if partition.leader != NO_LEADER:
                return ErrorCode.election_not_needed, "Leader election not needed for topic partition."
            candidates = [b for b in partition.isr if self.is_alive(b)] or [
                b for b in partition.replicas if self.is_alive(b)
            ]
            if not candidates:
                return ErrorCode.eligible_leaders_not_available, "No eligible leader is available."
            if candidates[0] not in partition.isr:
                partition.isr = [candidates[0]]
            self._set_leader(partition, candidates[0])
        else:
            preferred = partition.replicas[0]
            if partition.leader == preferred:
                return ErrorCode.election_not_needed, "Leader election not needed for topic partition."
            if not self.is_alive(preferred) or preferred not in partition.isr:
                return (
                    ErrorCode.preferred_leader_not_available,
                    f"Failed to elect leader for partition {topic.name}-{partition.index} under strategy "
                    "PreferredReplicaPartitionLeaderElectionStrategy",
                )
            self._set_leader(partition, preferred)
        topic.touch()
        return ErrorCode.none, None

    # ----------------------------------------------------------- reassignments
    def _is_copying(self, topic: str, partition: int, broker_id: int) -> bool:
        reassignment = self.reassignments.get((topic, partition))
        return reassignment is not None and broker_id in reassignment.adding and not self._caught_up(
            reassignment, broker_id
        )

    def _caught_up(self, reassignment: ReassignmentDouble, broker_id: int) -> bool:
        partition = self.topics[reassignment.topic].partitions[reassignment.partition]
        return reassignment.copied.get(broker_id, 0) >= partition.size_bytes

    def reassign(self, topic: TopicDouble, partition: PartitionDouble, target: list[int]) -> None:
        """Start (or replace) a reassignment of one partition to ``target`` replicas."""
        key = (topic.name, partition.index)
        existing = self.reassignments.get(key)
        original = existing.original if existing else tuple(partition.replicas)
        previous = existing.copied if existing else {}
        reassignment = ReassignmentDouble(topic.name, partition.index, original, tuple(target), {})
        reassignment.copied = {b: previous.get(b, 0) for b in reassignment.adding}
        self.reassignments[key] = reassignment
        partition.replicas = reassignment.merged
        partition.isr = [b for b in partition.isr if b in partition.replicas]
        topic.touch()
        self._maybe_complete(reassignment)

    def cancel_reassignment(self, topic: TopicDouble, partition: PartitionDouble) -> bool:
        reassignment = self.reassignments.pop((topic.name, partition.index), None)
        if reassignment is None:
            return False
        partition.replicas = list(reassignment.original)
        partition.isr = [b for b in partition.isr if b in partition.replicas] or [
            b for b in partition.replicas if self.is_alive(b)
        ]
        if partition.leader not in partition.isr:
            self._set_leader(partition, next((b for b in partition.isr if self.is_alive(b)), NO_LEADER))
        topic.touch()
        return True

    def _maybe_complete(self, reassignment: ReassignmentDouble) -> bool:
        if not all(self._caught_up(reassignment, b) for b in reassignment.adding):
            return False
        topic = self.topics[reassignment.topic]
        partition = topic.partitions[reassignment.partition]
        in_sync = set(partition.isr) | set(reassignment.adding)
        partition.replicas = list(reassignment.target)
        partition.isr = [b for b in reassignment.target if b in in_sync and self.is_alive(b)]
        if partition.leader not in partition.isr:
            self._set_leader(partition, partition.isr[0] if partition.isr else NO_LEADER)
        del self.reassignments[(reassignment.topic, reassignment.partition)]
        topic.touch()
        return True

    def _copy(self, reassignment: ReassignmentDouble, step: int) -> None:
        partition = self.topics[reassignment.topic].partitions[reassignment.partition]
        if partition.leader == NO_LEADER:
            return
        for broker_id in reassignment.adding:
            if self.is_alive(broker_id):
                done = min(partition.size_bytes, reassignment.copied.get(broker_id, 0) + step)
                reassignment.copied[broker_id] = done
                if done >= partition.size_bytes and broker_id not in partition.isr:
                    partition.isr.append(broker_id)
        self.topics[reassignment.topic].touch()

    def advance(self, ticks: int = 1) -> None:
        """Move virtual time: copy ``reassignment_step_bytes`` per new replica per tick."""
        for _ in range(ticks):
            self.tick += 1
            for reassignment in list(self.reassignments.values()):
                self._copy(reassignment, self.settings.reassignment_step_bytes)
                self._maybe_complete(reassignment)
            if self.pending_leaders:
                self.elect_pending_leaders(due_by=self.tick)

    def complete_reassignments(self) -> int:
        """Finish every reassignment now (copies done); returns how many finished."""
        finished = 0
        for reassignment in list(self.reassignments.values()):
            partition = self.topics[reassignment.topic].partitions[reassignment.partition]
            self._copy(reassignment, partition.size_bytes)
            finished += self._maybe_complete(reassignment)
        return finished

    def replica_progress(self, topic: str, partition: PartitionDouble, broker_id: int) -> tuple[int, bool]:
        """(bytes on ``broker_id``, still copying) for DescribeLogDirs."""
        reassignment = self.reassignments.get((topic, partition.index))
        if reassignment is not None and broker_id in reassignment.adding:
            copied = reassignment.copied.get(broker_id, 0)
            return copied, copied < partition.size_bytes
        return partition.size_bytes, False

    # ----------------------------------------------------------------- configs
    def bump_configs(self) -> None:
        """Broker configs changed: forget cached topic defaults."""
        self._defaults_cache.clear()

    def _broker_chain(self, broker_id: int | None, name: str) -> list[Synonym]:
        chain: list[Synonym] = []
        if broker_id is not None and name in self.broker_configs.get(broker_id, {}):
            chain.append(Synonym(name, self.broker_configs[broker_id][name], ConfigSource.DYNAMIC_BROKER_CONFIG))
        if name in self.default_configs:
            chain.append(Synonym(name, self.default_configs[name], ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG))
        static = self.static_configs(broker_id) if broker_id is not None else {}
        if name in static:
            chain.append(Synonym(name, static[name], ConfigSource.STATIC_BROKER_CONFIG))
        spec = BROKER_CONFIGS.get(name)
        if spec is not None and spec.default is not None:
            chain.append(Synonym(name, spec.default, ConfigSource.DEFAULT_CONFIG))
        return chain

    def topic_config_defaults(self, broker_id: int) -> dict[str, ConfigEntry]:
        """Every topic config as a topic without overrides sees it on ``broker_id`` (cached)."""
        entries = self._defaults_cache.get(broker_id)
        if entries is None:
            entries = {name: self._topic_entry(spec, None, broker_id) for name, spec in TOPIC_CONFIGS.items()}
            self._defaults_cache[broker_id] = entries
        return entries

    def _topic_entry(self, spec: ConfigSpec, override: str | None, broker_id: int) -> ConfigEntry:
        chain: list[Synonym] = []
        if override is not None:
            chain.append(Synonym(spec.name, override, ConfigSource.DYNAMIC_TOPIC_CONFIG))
        if spec.synonym is not None:
            chain += [s for s in self._broker_chain(broker_id, spec.synonym) if s.source != ConfigSource.DEFAULT_CONFIG]
        chain.append(Synonym(spec.synonym or spec.name, spec.default, ConfigSource.DEFAULT_CONFIG))
        head = chain[0]
        return ConfigEntry(spec.name, head.value, head.source, False, False, spec.type, spec.doc, tuple(chain))

    def topic_config_entries(self, configs: Mapping[str, str], broker_id: int) -> list[ConfigEntry]:
        defaults = self.topic_config_defaults(broker_id)
        return [
            self._topic_entry(TOPIC_CONFIGS[name], configs[name], broker_id) if name in configs else entry
            for name, entry in defaults.items()
        ]

    def broker_config_entries(self, broker_id: int) -> list[ConfigEntry]:
        """Every broker config of ``broker_id`` (catalog keys plus set per-listener keys)."""
        names = list(BROKER_CONFIGS)
        names += [n for n in self.broker_configs.get(broker_id, {}) if n not in BROKER_CONFIGS]
        return [self._broker_entry(name, broker_id) for name in names]

    def default_config_entries(self) -> list[ConfigEntry]:
        """Cluster-wide dynamic defaults that are set (what Kafka shows for broker "")."""
        return [self._broker_entry(name, None) for name in self.default_configs]

    def _broker_entry(self, name: str, broker_id: int | None) -> ConfigEntry:
        spec = broker_spec(name) or ConfigSpec(name, ConfigType.STRING, None)
        chain = self._broker_chain(broker_id, name)
        value, source = (chain[0].value, chain[0].source) if chain else (None, ConfigSource.DEFAULT_CONFIG)
        sensitive = spec.sensitive or name.endswith(".password") or name.endswith("sasl.jaas.config")
        return ConfigEntry(name, value, source, spec.read_only, sensitive, spec.type, spec.doc, tuple(chain))

    # -------------------------------------------------------------------- misc
    def partition_count(self) -> int:
        return sum(len(t.partitions) for t in self.topics.values())
