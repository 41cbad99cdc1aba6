"""What the admin client's retry engine works with: how one API maps items to a request and
back (`_Call`), a call's progress across rounds (`_Progress`), where it goes (`Route`), which
errors are retried (`RETRIABLE_CODES`) and which leave a write uncertain (`UNCERTAIN_CODES`).
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from kio.schema.errors import ErrorCode

from kafkaops.frozen import frozen

from .apis import Api
from .errors import ClusterUnreachable
from .models import ItemResult, Results
from .sizing import one_record

K = TypeVar("K")
V = TypeVar("V")
R = TypeVar("R")

RETRIABLE_CODES = frozenset(
    {
        int(ErrorCode.not_controller),
        int(ErrorCode.request_timed_out),
        int(ErrorCode.network_exception),
        int(ErrorCode.leader_not_available),
        int(ErrorCode.throttling_quota_exceeded),
        int(ErrorCode.coordinator_load_in_progress),
        int(ErrorCode.broker_not_available),
    }
)
# Errors after which the write may or may not have happened.
UNCERTAIN_CODES = frozenset({int(ErrorCode.request_timed_out), int(ErrorCode.network_exception)})


class Route(enum.Enum):
    CONTROLLER = "controller"
    ANY = "any"


@frozen
class _Call(Generic[K, V, R]):
    """How one API maps items to a request and a response back to items."""

    api: Api
    route: Route | int  # a broker id for broker-scoped calls
    encode: Callable[[dict[K, V]], dict[str, Any]]
    decode: Callable[[Any, dict[K, V]], Mapping[K, ItemResult[R]]]
    cost: Callable[[V], int] = one_record
    write: bool = False


@dataclass(slots=True)
class _Progress(Generic[K, R]):
    results: dict[K, ItemResult[R]]
    uncertain: set[K]
    throttle: float = 0.0
    started: float = field(default_factory=time.monotonic)
    unreachable: ClusterUnreachable | None = None  # the last round found no broker at all


def _merge(parts: Iterable[Results[K, R]]) -> Results[K, R]:
    merged: dict[K, ItemResult[R]] = {}
    for part in parts:
        merged.update(part.items())
    return Results(merged)

