"""Injectable faults of the fake cluster test double.

A test arms ``FaultDouble`` values with ``FakeClusterDouble.inject``; each
fault matches requests by API key (and optionally broker) and fires for the
next ``count`` matching requests (``None`` = until ``clear_faults``). Faults
are deterministic: they fire on request arrival order, never on wall time.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field

from kafkaops.frozen import frozen

CREATE_TOPICS, DELETE_TOPICS, CREATE_PARTITIONS = 19, 20, 37
CREATE_ACLS, DELETE_ACLS = 30, 31
INCREMENTAL_ALTER_CONFIGS = 44
ELECT_LEADERS, ALTER_REASSIGNMENTS = 43, 45
ALTER_CLIENT_QUOTAS, ALTER_USER_SCRAM_CREDENTIALS = 49, 51

#: Writes Kafka routes to the controller (zk: NOT_CONTROLLER elsewhere).
WRITE_APIS = frozenset(
    {
        CREATE_TOPICS,
        DELETE_TOPICS,
        CREATE_PARTITIONS,
        CREATE_ACLS,
        DELETE_ACLS,
        INCREMENTAL_ALTER_CONFIGS,
        ELECT_LEADERS,
        ALTER_REASSIGNMENTS,
        ALTER_CLIENT_QUOTAS,
        ALTER_USER_SCRAM_CREDENTIALS,
    }
)
#: APIs that may answer THROTTLING_QUOTA_EXCEEDED (KIP-599), with the first version that may.
THROTTLE_MIN_VERSION = {CREATE_TOPICS: 6, DELETE_TOPICS: 5, CREATE_PARTITIONS: 3}
#: Connection-setup APIs, never matched by default (a fault there breaks every test).
SETUP_APIS = frozenset({17, 18, 36})


class FaultKind(enum.Enum):
    NOT_CONTROLLER = "not_controller"
    TIMED_OUT_AFTER_APPLY = "timed_out_after_apply"
    THROTTLED = "throttled"
    DROP_CONNECTION = "drop_connection"
    SLOW = "slow"


@frozen
class FaultDouble:
    """One fault to inject. Build it with the class methods below.

    ``api_keys=None`` means the kind's default set; ``broker_id`` limits the
    fault to requests arriving at one broker.
    """

    kind: FaultKind
    api_keys: frozenset[int] | None = None
    count: int | None = 1
    broker_id: int | None = None
    throttle_ms: int = 0
    allow_items: int = 0
    delay_s: float = 0.0
    after_apply: bool = False
    move_controller: bool = False

    @classmethod
    def not_controller(
        cls,
        count: int | None = 1,
        api_keys: Iterable[int] | None = None,
        broker_id: int | None = None,
        move_controller: bool = False,
    ) -> FaultDouble:
        """Every item of the next ``count`` writes answers NOT_CONTROLLER (nothing applied);
        with ``move_controller`` the controller also moves to the next live broker (zk)."""
        return cls(FaultKind.NOT_CONTROLLER, _keys(api_keys), count, broker_id, move_controller=move_controller)

    @classmethod
    def timed_out_after_apply(
        cls, count: int | None = 1, api_keys: Iterable[int] | None = None, broker_id: int | None = None
    ) -> FaultDouble:
        """The write is applied, but its successful items answer REQUEST_TIMED_OUT."""
        return cls(FaultKind.TIMED_OUT_AFTER_APPLY, _keys(api_keys), count, broker_id)

    @classmethod
    def throttled(
        cls,
        throttle_ms: int = 100,
        count: int | None = 1,
        allow_items: int = 0,
        api_keys: Iterable[int] | None = None,
        broker_id: int | None = None,
    ) -> FaultDouble:
        """KIP-599: items after the first ``allow_items`` answer THROTTLING_QUOTA_EXCEEDED with
        ``throttle_ms`` (CreateTopics v6+, DeleteTopics v5+, CreatePartitions v3+); older
        versions are applied and their response is delayed by ``throttle_ms`` instead."""
        return cls(
            FaultKind.THROTTLED, _keys(api_keys), count, broker_id, throttle_ms=throttle_ms, allow_items=allow_items
        )

    @classmethod
    def drop_connection(
        cls,
        after_apply: bool = False,
        count: int | None = 1,
        api_keys: Iterable[int] | None = None,
        broker_id: int | None = None,
    ) -> FaultDouble:
        """Close the connection instead of responding, before or after applying the request."""
        return cls(FaultKind.DROP_CONNECTION, _keys(api_keys), count, broker_id, after_apply=after_apply)

    @classmethod
    def slow(
        cls,
        delay_s: float,
        after_apply: bool = False,
        count: int | None = 1,
        api_keys: Iterable[int] | None = None,
        broker_id: int | None = None,
    ) -> FaultDouble:
        """Wait ``delay_s`` before handling (or, ``after_apply``, before responding)."""
        return cls(FaultKind.SLOW, _keys(api_keys), count, broker_id, delay_s=delay_s, after_apply=after_apply)

    def default_api_keys(self) -> frozenset[int] | None:
        if self.kind is FaultKind.THROTTLED:
            return frozenset(THROTTLE_MIN_VERSION)
        if self.kind in (FaultKind.NOT_CONTROLLER, FaultKind.TIMED_OUT_AFTER_APPLY):
            return WRITE_APIS
        return None  # any API except connection setup

    def matches(self, api_key: int, broker_id: int) -> bool:
        if self.broker_id is not None and self.broker_id != broker_id:
            return False
        keys = self.api_keys if self.api_keys is not None else self.default_api_keys()
        if keys is None:
            return api_key not in SETUP_APIS
        return api_key in keys


def _keys(api_keys: Iterable[int] | None) -> frozenset[int] | None:
    return frozenset(int(k) for k in api_keys) if api_keys is not None else None


@dataclass(slots=True)
class _Armed:
    fault: FaultDouble
    remaining: int | None


@dataclass(slots=True)
class FaultPlan:
    """The armed faults of one double, consumed in arrival order."""

    armed: list[_Armed] = field(default_factory=list)
    fired: list[tuple[FaultDouble, int, int]] = field(default_factory=list)

    def arm(self, faults: Iterable[FaultDouble]) -> None:
        self.armed.extend(_Armed(f, f.count) for f in faults)

    def clear(self) -> None:
        self.armed.clear()

    def take(self, api_key: int, broker_id: int) -> list[FaultDouble]:
        """The faults that fire for this request (at most one per kind), consuming them."""
        if not self.armed:
            return []
        taken: list[FaultDouble] = []
        kinds: set[FaultKind] = set()
        for armed in self.armed:
            fault = armed.fault
            if fault.kind in kinds or not fault.matches(api_key, broker_id):
                continue
            kinds.add(fault.kind)
            taken.append(fault)
            self.fired.append((fault, api_key, broker_id))
            if armed.remaining is not None:
                armed.remaining -= 1
        self.armed = [a for a in self.armed if a.remaining is None or a.remaining > 0]
        return taken

    def pending(self) -> list[FaultDouble]:
        return [a.fault for a in self.armed]
