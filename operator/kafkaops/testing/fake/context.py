"""Per-request context for the handlers of the fake cluster test double.

The server decides, before a handler runs, what the request meets: an error
every item gets (API disabled, no authorizer, injected NOT_CONTROLLER), the
zk controller rule, an injected throttle, and whether applied items should
answer REQUEST_TIMED_OUT. Handlers ask the context per item, so each
handler has one code path for all of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from kafkaops.frozen import frozen

if TYPE_CHECKING:  # state.py imports principals.py, which uses ItemError from here
    from .state import ClusterStateDouble


@frozen
class ItemError:
    """The error code and message one item (or a whole response) answers."""

    code: ErrorCode
    message: str | None = None

    def fields(self) -> dict[str, object]:
        return {"error_code": self.code, "error_message": self.message}


NO_ERROR = ItemError(ErrorCode.none, None)


class CloseConnection(Exception):
    """A handler asks the server to close the connection without answering."""


@dataclass(slots=True)
class RequestContext:
    """What a handler needs besides the request body."""

    state: ClusterStateDouble
    broker_id: int
    api_key: int
    version: int
    forced: ItemError | None = None
    throttle_items_after: int | None = None
    throttle_time_ms: int = 0
    timed_out_after_apply: bool = False
    sasl_listener: bool = False  # the request came in on the SASL listener (Metadata advertises it)

    @property
    def throttle_time(self) -> timedelta:
        return timedelta(milliseconds=self.throttle_time_ms)

    def controller_error(self) -> ItemError | None:
        """zk mode: writes anywhere but the controller answer NOT_CONTROLLER."""
        if self.state.mode == "zk" and self.broker_id != self.state.controller_id:
            return ItemError(ErrorCode.not_controller, "This is not the correct controller for this cluster.")
        return None

    def request_error(self, needs_controller: bool = True) -> ItemError | None:
        """An error for the whole request (forced, or zk NOT_CONTROLLER)."""
        if self.forced is not None:
            return self.forced
        return self.controller_error() if needs_controller else None

    def gate(self, index: int, needs_controller: bool = True) -> ItemError | None:
        """The error item ``index`` answers before any validation, or None."""
        error = self.request_error(needs_controller)
        if error is not None:
            return error
        if self.throttle_items_after is not None and index >= self.throttle_items_after:
            return ItemError(ErrorCode.throttling_quota_exceeded, "The throttling quota has been exceeded.")
        return None

    def success(self) -> ItemError:
        """What an applied item answers: none, or REQUEST_TIMED_OUT under that fault."""
        if self.timed_out_after_apply:
            return ItemError(ErrorCode.request_timed_out, "The request timed out.")
        return NO_ERROR

    def record_limit_error(self, records: int) -> ItemError | None:
        """KRaft refuses a request that would write more than ``record_limit`` metadata records."""
        if records > self.state.settings.record_limit:
            return ItemError(
                ErrorCode.policy_violation,
                f"Unable to perform excessively large batch operation: {records} records exceed "
                f"the limit of {self.state.settings.record_limit}.",
            )
        return None
