"""observe: the planner's view of a cluster, the ObservedState of one read_cluster (read.py).

The engine observes what a desired state needs (`ObserveScope.for_desired`); the operator's
reconciles and its resync run through the engine, so they read the same way.
"""

from __future__ import annotations

from kafkaops.kafka import Batcher
from kafkaops.reconcile.observed import ObservedState
from kafkaops.reconcile.read import ObserveScope, read_cluster

__all__ = ["ObserveScope", "observe"]


async def observe(batcher: Batcher, scope: ObserveScope) -> ObservedState:
    return (await read_cluster(batcher, scope)).observed
