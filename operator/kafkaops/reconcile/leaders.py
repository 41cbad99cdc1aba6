"""Preferred leader election: find the partitions whose leader is not their preferred replica
(the first in the assignment), elect them in one request, report per partition.

Used by `kafkaops elect-leaders`, by the KafkaCluster's periodic election in the operator
(spec.preferredLeaderElection), and after reassignments (reassign/run.py elects the moved partitions).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from enum import StrEnum

from kafkaops.frozen import frozen
from kafkaops.kafka import AdminClient, ClusterMetadata, TopicPartition
from kafkaops.kafka.errors import ErrorCode, KafkaOpsError
from kafkaops.reconcile.actions import Problem, problem_from_exception


class Election(StrEnum):
    ELECTED = "elected"
    NOT_NEEDED = "not-needed"  # ELECTION_NOT_NEEDED: the preferred replica already leads
    FAILED = "failed"


@frozen
class PartitionElection:
    partition: TopicPartition
    preferred: int
    leader_before: int
    outcome: Election
    reason: str = ""  # Kafka's error name when it failed (e.g. PREFERRED_LEADER_NOT_AVAILABLE)


def imbalanced(meta: ClusterMetadata, topics: re.Pattern[str] | None = None) -> list[tuple[TopicPartition, int, int]]:
    """(partition, preferred replica, current leader) for every partition led by another replica. Pure."""
    found = []
    for name, info in sorted(meta.topics.items()):
        if info.internal or (topics is not None and not topics.search(name)):
            continue
        for p in info.partitions:
            if p.replicas and p.leader != p.replicas[0]:
                found.append((TopicPartition(name, p.partition), p.replicas[0], p.leader))
    return found


async def elect_preferred(
    admin: AdminClient, topics: re.Pattern[str] | None = None, *, partitions: Iterable[TopicPartition] | None = None
) -> tuple[list[PartitionElection], Problem | None]:
    """One Metadata read, then one ElectLeaders request for the imbalanced partitions (or the given
    ones). A cluster without ElectLeaders gives a Problem naming the API."""
    try:
        meta = await admin.metadata(None)
        candidates = imbalanced(meta, topics)
        if partitions is not None:
            wanted = set(partitions)
            candidates = [c for c in candidates if c[0] in wanted]
        if not candidates:
            return [], None
        results = await admin.elect_leaders([tp for tp, _, _ in candidates])
    except KafkaOpsError as exc:
        return [], problem_from_exception(exc, "preferred leader election")
    return [_outcome(tp, preferred, leader, results) for tp, preferred, leader in candidates], None


def _outcome(tp: TopicPartition, preferred: int, leader: int, results: Mapping) -> PartitionElection:
    result = results.get(tp)
    if result is None or result.error is None:
        return PartitionElection(tp, preferred, leader, Election.ELECTED)
    if result.error.code == ErrorCode.election_not_needed:
        return PartitionElection(tp, preferred, leader, Election.NOT_NEEDED)
    return PartitionElection(tp, preferred, leader, Election.FAILED, result.error.name)
