"""Reassignments in flight that are not (or no longer) ours, and cancelling ours: `in_flight_target`,
`detect_external`, `cancel`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet

from kafkaops.kafka import AdminClient, Reassignment, TopicPartition
from kafkaops.kafka.errors import ErrorCode, KafkaOpsError
from kafkaops.reconcile.actions import Problem, problem_from_exception
from kafkaops.reconcile.reassign.plan import EXTERNAL_REASSIGNMENT, _item_problem


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
