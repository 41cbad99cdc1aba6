"""Where a reassignment run stands: `ReassignmentState`, `ReassignmentProgress`, and the small
helpers that word its messages and problems."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import field
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING

from kafkaops.frozen import frozen
from kafkaops.kafka import TopicPartition
from kafkaops.reconcile.actions import Problem
from kafkaops.reconcile.reassign.plan import _EMPTY, EXTERNAL_REASSIGNMENT, REASSIGNMENT_CANCELLED
from kafkaops.reconcile.reassign.throttle import ThrottleRecord


if TYPE_CHECKING:
    from collections.abc import Awaitable

ProgressCallback = Callable[["ReassignmentProgress"], "Awaitable[None] | None"]


# --- progress ---------------------------------------------------------------------------------


class ReassignmentState(StrEnum):
    PENDING = "pending"
    MOVING = "moving"
    ELECTING = "electing"
    DONE = "done"
    CANCELLED = "cancelled"
    FAILED = "failed"
    EXTERNAL = "external"  # done, except partitions someone else is moving (left alone)


@frozen
class ReassignmentProgress:
    """Where a run stands. Counts cover kafkaops' partitions (external ones are not counted);
    bytes are None when DescribeLogDirs could not be read."""

    state: ReassignmentState
    partitions_total: int
    partitions_done: int = 0
    bytes_total: int | None = None
    bytes_done: int | None = None
    started_at: datetime | None = None
    eta: datetime | None = None
    message: str = ""
    problem: Problem | None = None  # what stopped the whole run; partitions' own problems are in `failed`
    failed: Mapping[TopicPartition, Problem] = field(default_factory=lambda: _EMPTY)
    external: frozenset[TopicPartition] = frozenset()
    cancelled: frozenset[TopicPartition] = frozenset()
    moving: frozenset[TopicPartition] = frozenset()
    throttle: ThrottleRecord | None = None  # set while a throttle is in place
    notes: tuple[str, ...] = ()

    @property
    def percent(self) -> int:
        if self.bytes_total:
            return min(100, int(100 * (self.bytes_done or 0) / self.bytes_total))
        if self.partitions_total:
            return int(100 * self.partitions_done / self.partitions_total)
        return 100

    @property
    def finished(self) -> bool:
        return self.state in (ReassignmentState.DONE, ReassignmentState.CANCELLED,
                              ReassignmentState.FAILED, ReassignmentState.EXTERNAL)

    def problem_for(self, topic: str) -> Problem | None:
        """One topic's problem in a (multi-topic) run: its failed partitions, else what stopped the
        run, else its partitions moved by someone else, else its cancelled ones; None: all moved."""
        failed = [(tp, p) for tp, p in self.failed.items() if tp.topic == topic]
        if failed:
            tp, first = failed[0]
            more = f" (and {len(failed) - 1} more partition(s))" if len(failed) > 1 else ""
            return Problem(first.reason, f"{first.message}{more}", first.retriable)
        if self.state is ReassignmentState.FAILED and self.problem is not None:
            return self.problem
        external = sorted(tp for tp in self.external if tp.topic == topic)
        if external:
            return Problem(EXTERNAL_REASSIGNMENT, f"partition(s) {_names(external)} are being reassigned by "
                                                  "someone else (not kafkaops): left alone, retried later", True)
        cancelled = sorted(tp for tp in self.cancelled if tp.topic == topic)
        if self.state is ReassignmentState.CANCELLED and cancelled:
            return Problem(REASSIGNMENT_CANCELLED, f"reassignment of {_names(cancelled)} cancelled "
                                                   "(back on their previous replicas)", True)
        return None


def _names(partitions: Iterable[TopicPartition], limit: int = 5) -> str:
    items = sorted(partitions)
    shown = ", ".join(map(str, items[:limit]))
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def _bytes(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover
