"""Replica changes of a KafkaTopic, run in the background: a handler starts a reassignment and
returns (moves take hours); later reconciles report its progress, revert it when the spec no
longer asks for it, and drop it once finished. Pure helpers plus the ones that touch the context."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from kafkaops.k8s.context import ClusterContext
from kafkaops.reconcile.reassign import ReassignmentProgress
from kafkaops.reconcile.reassign.manager import ActiveRun
from kafkaops.resources.models import KafkaTopic

THROTTLE_RECORD = "replicationThrottleRecord"  # status field: the throttle a running reassignment set


def _iso(moment: datetime.datetime | None) -> str | None:
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if moment else None


def reassignment_status(progress: ReassignmentProgress) -> dict[str, Any]:
    """status.reassignment of a KafkaTopic from the run's progress."""
    fields = {
        "state": progress.state.value, "partitionsTotal": progress.partitions_total,
        "partitionsDone": progress.partitions_done, "bytesTotal": progress.bytes_total,
        "bytesDone": progress.bytes_done, "startedAt": _iso(progress.started_at),
        "estimatedCompletion": _iso(progress.eta),
    }
    return {k: v for k, v in fields.items() if v is not None}


def still_wanted(topic: KafkaTopic, active: ActiveRun) -> bool:
    """Whether the spec still asks for the run's targets: the same explicit assignment, or the same
    replication factor (the placement was computed from it; recomputing it mid-move would differ)."""
    for tp, target in active.targets.items():
        if topic.replica_assignment is not None:
            if tp.partition >= len(topic.replica_assignment) or tuple(topic.replica_assignment[tp.partition]) != tuple(target):
                return False
        elif topic.replication_factor is not None and topic.replication_factor != len(target):
            return False
    return True


def seed_throttle(context: ClusterContext, model: KafkaTopic, body: Mapping[str, Any]) -> None:
    """A throttle record in status with no run in this process: an earlier operator died while
    moving. Into the store it goes, so the engine removes that throttle before anything else."""
    record = (body.get("status") or {}).get(THROTTLE_RECORD)
    if isinstance(record, Mapping) and context.engine is not None and context.reassignments is not None:
        context.reassignments.adopt_throttle(context.engine.state_key(), model.topic_name, record)


def moving_message(progress: ReassignmentProgress, note: str | None = None) -> str:
    return "; ".join(m for m in (note, progress.message or "moving partitions") if m)
