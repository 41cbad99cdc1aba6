"""spec.preferredLeaderElectionInterval: the periodic preferred-leader election of a KafkaCluster,
run by its resync daemon."""

from __future__ import annotations

import time

from kafkaops.k8s.context import ClusterContext
from kafkaops.k8s.status import EventNote
from kafkaops.reconcile.leaders import Election, elect_preferred


async def maybe_elect_leaders(context: ClusterContext, now: float | None = None) -> EventNote | None:
    """spec.preferredLeaderElectionInterval: when due, elect the partitions led by another replica
    than their preferred one (one Metadata + one ElectLeaders); an Event says what happened."""
    interval = context.model.spec.leader_election_seconds
    now = time.monotonic() if now is None else now
    if interval is None or not context.ready or context.admin is None or now - context.last_leader_election < interval:
        return None
    context.last_leader_election = now
    elections, problem = await elect_preferred(context.admin)
    if problem is not None:
        return EventNote("Warning", problem.reason, f"preferred leader election: {problem.message}")
    if not elections:
        return None
    failed = [e for e in elections if e.outcome is Election.FAILED]
    message = (f"preferred leader election: {len(elections) - len(failed)} of {len(elections)} imbalanced "
               f"partition(s) moved back to their preferred leader"
               + (f"; failed: {', '.join(f'{e.partition} ({e.reason})' for e in failed[:10])}" if failed else ""))
    return EventNote("Warning" if failed else "Normal", "LeadersElected", message)
