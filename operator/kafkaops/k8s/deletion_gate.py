"""The topic-deletion cap of one KafkaCluster: at most `cap` topic deletions reach Kafka within any
`window` seconds, unless a person confirmed more (KafkaCluster annotation kafkaops.io/confirm-deletions).

A deletion holds a slot from its admission until `window` seconds after it finished. Holding it
while in flight is what makes the cap hold in Kafka, not only at admission: a deletion admitted
early and delayed by retries (NOT_CONTROLLER, throttling, a slow API for the record) lands in
Kafka at some moment between its admission and its finish, and any deletion admitted after it,
while its slot is held, lands later. So any `window` seconds of Kafka's own deletion times see at
most `cap` of them (the soak checks exactly that; before, a slot was held from admission only and
Kafka once saw 5 deletions within 15 s under a cap of 4 per 30 s: docs/reliability.md).

Times are wall-clock seconds, recorded in the KafkaCluster's status before each deletion is sent
(`recentTopicDeletions`: finish times; `topicDeletionsInFlight`: admissions not yet finished), so
the cap holds across restarts and replicas. A deletion another process left in flight (it died
or lost the cluster) may have reached Kafka at any moment up to now: it is taken as finished when
first seen (its slot held a full window from then).
"""

from __future__ import annotations

import datetime
import logging
import time
from collections.abc import Iterable, Mapping
from typing import Any

from kafkaops.frozen import frozen

log = logging.getLogger("kafkaops.operator")


def _now(now: float | None) -> float:
    """Wall-clock seconds to the microsecond, as the status records them: a time written and read
    back is the same time (merging does not count a deletion twice)."""
    return round(time.time() if now is None else now, 6)


@frozen
class DeletionRecord:
    """What the KafkaCluster's status records of the gate (wall-clock seconds)."""

    finished: tuple[float, ...] = ()
    in_flight: tuple[float, ...] = ()

    @classmethod
    def of(cls, cluster_body: Mapping[str, Any]) -> DeletionRecord:
        status = cluster_body.get("status") or {}
        return cls(tuple(_times(status.get("recentTopicDeletions"))), tuple(_times(status.get("topicDeletionsInFlight"))))

    def status(self) -> dict[str, list[str]]:
        return {"recentTopicDeletions": deletion_times(self.finished),
                "topicDeletionsInFlight": deletion_times(self.in_flight)}


class DeletionGate:
    def __init__(self, cap: int, window: float) -> None:
        self.cap = cap
        self.window = window
        self._finished: list[float] = []  # when deletions finished (this process's and recorded ones)
        self._in_flight: dict[str, float] = {}  # who -> admission, this process's
        self._adopted: dict[float, float] = {}  # another process's in-flight admission -> when first seen here
        self.confirmed_until = 0.0
        self.waiting: set[str] = set()

    def _trim(self, now: float) -> None:
        self._finished = [t for t in self._finished if now - t <= self.window]

    def held(self, now: float | None = None) -> int:
        """Slots held now: deletions in flight, and finished within the window."""
        now = _now(now)
        self._trim(now)
        adopted = {t for t in self._adopted.values() if now - t <= self.window}
        return len({*self._finished, *adopted}) + len(self._in_flight)  # adopted ones come back as finished

    def merge(self, record: DeletionRecord, now: float | None = None) -> None:
        """Add what another process (or this one, before a restart) recorded."""
        now = _now(now)
        self._finished = sorted(set(self._finished) | set(record.finished))
        mine = set(self._in_flight.values())
        for admitted in record.in_flight:
            if admitted not in mine and admitted not in self._adopted:
                self._adopted[admitted] = now

    def admit(self, who: str, now: float | None = None) -> bool:
        now = _now(now)
        if self.held(now) < self.cap or now < self.confirmed_until:
            self._in_flight[who] = now
            self.waiting.discard(who)
            return True
        self.waiting.add(who)
        return False

    def finish(self, who: str, now: float | None = None) -> None:
        """`who`'s deletion ended (done, failed, or unknown): its slot is held `window` seconds more."""
        if self._in_flight.pop(who, None) is not None:
            self._finished.append(_now(now))

    def withdraw(self, who: str) -> None:
        """`who`'s admission ends with nothing sent to Kafka (its record was not written)."""
        self._in_flight.pop(who, None)

    def record(self, now: float | None = None) -> DeletionRecord:
        """What to write to the status: finished deletions within the window (another process's
        in-flight ones as finished when first seen here), and this process's in flight."""
        now = _now(now)
        self._trim(now)
        adopted = [t for t in self._adopted.values() if now - t <= self.window]
        return DeletionRecord(tuple(sorted({*self._finished, *adopted})), tuple(sorted(self._in_flight.values())))

    def confirm(self, ttl: float, now: float | None = None) -> None:
        self.confirmed_until = _now(now) + ttl


def _times(texts: Iterable[Any] | None) -> list[float]:
    times = []
    for text in texts or ():
        try:
            times.append(round(datetime.datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp(), 6))
        except ValueError:
            log.warning("ignored an unreadable topic deletion time %r in a KafkaCluster's status", text)
    return times


def deletion_times(times: Iterable[float]) -> list[str]:
    return [datetime.datetime.fromtimestamp(t, datetime.UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
            for t in times]
