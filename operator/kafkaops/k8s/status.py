"""kstatus-shaped status for kafkaops resources. Pure: outcome in, status dict and events out.

Conditions (https://github.com/kubernetes-sigs/cli-utils/blob/master/pkg/kstatus/README.md):
- Ready: True when Kafka holds what the spec declares.
- Reconciling: True while work is in progress or a retriable failure is being retried
  (cluster down, throttled): never Stalled for those.
- Stalled: True for what retrying cannot fix (invalid spec, partition decrease, unsupported
  feature, conflict, authorization failure) until the spec changes.
- Drifted: True when the last resync found owned values changed outside kafkaops (and restored
  them); False once a resync finds none.

`reason` is the Kafka error name or the rule name; `message` is for people. A condition keeps its
lastTransitionTime while its status does not change, so `kubectl wait --for=condition=Ready` and
Argo CD see real transitions only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Any

from kafkaops.frozen import frozen
from kafkaops.reconcile.outcome import Outcome, State

READY, RECONCILING, STALLED, DRIFTED = "Ready", "Reconciling", "Stalled", "Drifted"
TRUE, FALSE = "True", "False"

UP_TO_DATE = "UpToDate"
PAUSED = "Paused"
UNMANAGED = "Unmanaged"
RESOURCE_CONFLICT = "ResourceConflict"


class Phase(StrEnum):
    READY = "Ready"
    RECONCILING = "Reconciling"
    STALLED = "Stalled"
    PAUSED = "Paused"


@frozen
class Verdict:
    """Where a resource stands after a reconcile."""

    phase: Phase
    reason: str
    message: str

    @classmethod
    def of(cls, outcome: Outcome) -> Verdict:
        if outcome.ok:
            reason = UP_TO_DATE if outcome.state is State.UNCHANGED else "Applied"
            return cls(Phase.READY, reason, _ready_message(outcome))
        problem = outcome.problem
        if problem is None:  # invalid without a problem cannot happen, but stay total
            return cls(Phase.STALLED, "Invalid", "the resource is invalid")
        return cls(Phase.RECONCILING if problem.retriable else Phase.STALLED, problem.reason, problem.message)


def _ready_message(outcome: Outcome) -> str:
    if outcome.state is State.UNCHANGED:
        return "Kafka matches the spec"
    changed = ", ".join(str(c) for c in outcome.changes[:5])
    more = f" (+{len(outcome.changes) - 5} more)" if len(outcome.changes) > 5 else ""
    return f"applied: {changed}{more}" if changed else "applied"


def _condition(type_: str, status: str, reason: str, message: str, now: str, generation: int | None,
               previous: Mapping[str, Any] | None) -> dict[str, Any]:
    changed = previous is None or previous.get("status") != status
    return {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": now if changed else previous.get("lastTransitionTime", now),
        "observedGeneration": generation,
    }


def conditions_for(verdict: Verdict, previous: Sequence[Mapping[str, Any]] = (), *, now: str,
                   generation: int | None, drift: str | None = None) -> list[dict[str, Any]]:
    """Ready, Reconciling, Stalled (and Drifted when known) for `verdict`.

    `drift`: None keeps the previous Drifted condition; "" sets it False; text sets it True.
    """
    old = {c.get("type"): c for c in previous if isinstance(c, Mapping)}
    ready = verdict.phase is Phase.READY
    kept = old.get(READY)
    if (ready and verdict.reason == UP_TO_DATE and kept is not None and kept.get("status") == TRUE
            and kept.get("observedGeneration") == generation):
        # nothing to do for a resource already Ready at this generation: its Ready condition stays as
        # written (reason Applied and what was applied), so a resume or a resync writes nothing
        verdict = Verdict(Phase.READY, str(kept.get("reason") or UP_TO_DATE), str(kept.get("message") or ""))
    out = [
        _condition(READY, TRUE if ready else FALSE, verdict.reason, verdict.message, now, generation, old.get(READY)),
        _condition(RECONCILING, TRUE if verdict.phase is Phase.RECONCILING else FALSE,
                   verdict.reason if verdict.phase is Phase.RECONCILING else "Idle",
                   verdict.message if verdict.phase is Phase.RECONCILING else "", now, generation, old.get(RECONCILING)),
        _condition(STALLED, TRUE if verdict.phase is Phase.STALLED else FALSE,
                   verdict.reason if verdict.phase is Phase.STALLED else "Healthy",
                   verdict.message if verdict.phase is Phase.STALLED else "", now, generation, old.get(STALLED)),
    ]
    if drift is not None:
        out.append(_condition(DRIFTED, TRUE if drift else FALSE, "DriftRestored" if drift else "NoDrift",
                              drift, now, generation, old.get(DRIFTED)))
    elif DRIFTED in old:
        out.append(dict(old[DRIFTED]))
    return out


def status_patch(previous: Mapping[str, Any] | None, verdict: Verdict, *, now: str, generation: int | None,
                 fields: Mapping[str, Any] | None = None, drift: str | None = None) -> dict[str, Any]:
    """The whole status to write: observedGeneration, conditions and kind-specific `fields`."""
    previous = previous or {}
    status: dict[str, Any] = {
        "observedGeneration": generation,
        "conditions": conditions_for(verdict, previous.get("conditions") or (), now=now, generation=generation,
                                     drift=drift),
    }
    status.update(fields or {})
    return status


# refreshed on every write, so compared apart: equal statuses that differ only here are not written
VOLATILE = frozenset({"lastSyncTime"})


def unchanged(previous: Mapping[str, Any] | None, status: Mapping[str, Any]) -> bool:
    """Whether writing `status` over `previous` would change anything but its timestamps."""
    previous = previous or {}
    return all(previous.get(k) == v for k, v in status.items() if k not in VOLATILE)


def is_settled(status: Mapping[str, Any] | None, generation: int | None) -> bool:
    """Ready at the current generation: nothing of the spec is left to apply."""
    status = status if isinstance(status, Mapping) else {}
    ready = next((c for c in status.get("conditions") or () if isinstance(c, Mapping) and c.get("type") == READY), {})
    return ready.get("status") == TRUE and status.get("observedGeneration") == generation and generation is not None


@frozen
class EventNote:
    type: str  # Normal | Warning
    reason: str
    message: str


def transition_event(previous: Mapping[str, Any] | None, verdict: Verdict) -> EventNote | None:
    """An Event when the resource's standing changes (not on every resync)."""
    conditions = {c.get("type"): c for c in (previous or {}).get("conditions") or () if isinstance(c, Mapping)}
    ready = conditions.get(READY, {})
    was = (ready.get("status"), ready.get("reason"))
    now_ready = TRUE if verdict.phase is Phase.READY else FALSE
    if was == (now_ready, verdict.reason) or (now_ready == TRUE and was[0] == TRUE):
        return None
    kind = "Normal" if verdict.phase in (Phase.READY, Phase.PAUSED) else "Warning"
    return EventNote(kind, verdict.reason, verdict.message[:1000])


@frozen
class Result:
    status: Mapping[str, Any] | None = None  # None: write nothing (nothing changed)
    event: EventNote | None = None
    retry_after: float | None = None  # kopf retries the handler after this many seconds
    release: bool = False  # deletion: the finalizer may go
    message: str = ""
    waits_for: tuple[str | None, str] | None = None  # parked until this cluster connects
