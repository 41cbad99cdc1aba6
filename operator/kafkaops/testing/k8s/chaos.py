"""Fault hooks of the Kubernetes API emulator, reachable from outside its process.

`python -m kafkaops.testing.k8s_emulator --control-port N` serves (docs/reliability.md):

    POST   /faults          answer `status` (409, 429, 500, ...) to the next `count` requests whose
                            method and path match, or delay them by `delay_s` (a slow API)
    DELETE /faults          disarm every fault
    GET    /faults          pending faults and how many requests each kind answered
    POST   /watches/cut     end every open watch stream now; {"gone": true} also compacts the event
                            history after one write (a Namespace chaos-compaction-N), so a client
                            resuming from its last resourceVersion gets 410 Gone

Faults are consumed in request arrival order, never on wall time: the same requests meet them on
every run. Watch requests are matched only by a rule with `watch: true` (a 500 on a watch is a
failed list-watch, not a failed write).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import aiohttp.web
import attrs

from kafkaops.frozen import frozen
from kafkaops.testing.control_http import ControlError, ControlServer, field

from .handler import EmulatorHandler

if TYPE_CHECKING:
    from .emulator import KubernetesApiEmulator

REASONS = {409: "Conflict", 429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable",
           504: "Timeout"}
METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE"})


@frozen
class ApiFault:
    """Answer `status` (or, with status None, only delay by `delay_s`) to requests whose method is
    `method` (None: any) and whose path contains `path`; `count` times (None: until cleared)."""

    status: int | None = None
    count: int | None = 1
    method: str | None = None
    path: str = ""
    delay_s: float = 0.0
    watch: bool = False
    retry_after_s: int = 1

    def matches(self, method: str, path: str, is_watch: bool) -> bool:
        if is_watch != self.watch:
            return False
        return (self.method is None or self.method == method) and self.path in path

    @property
    def kind(self) -> str:
        return str(self.status) if self.status is not None else "slow"


def api_fault_from_json(body: dict[str, Any]) -> ApiFault:
    unknown = sorted(set(body) - {"status", "count", "method", "path", "delay_s", "watch", "retry_after_s"})
    if unknown:
        raise ControlError(f"{unknown[0]}: not a field of an API fault "
                           "(status, count, method, path, delay_s, watch, retry_after_s)")
    status = field(body, "status", int)
    if status is not None and not 400 <= status <= 599:
        raise ControlError(f"status: expected an HTTP error status 400-599, got {status}")
    delay = field(body, "delay_s", float, 0.0)
    if delay < 0:
        raise ControlError(f"delay_s: must not be negative, got {delay}")
    if status is None and not delay:
        raise ControlError("status: required unless delay_s makes this a slow-API fault")
    count = body.get("count", 1)
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
        raise ControlError(f"count: expected a positive integer or null, got {count!r}")
    method = field(body, "method", str)
    if method is not None and method.upper() not in METHODS:
        raise ControlError(f"method: expected one of {', '.join(sorted(METHODS))}, got {method!r}")
    return ApiFault(status=status, count=count, method=method.upper() if method else None,
                    path=field(body, "path", str, ""), delay_s=delay, watch=field(body, "watch", bool, False),
                    retry_after_s=field(body, "retry_after_s", int, 1))


@dataclass(slots=True)
class _Armed:
    fault: ApiFault
    remaining: int | None


class ApiFaultPlan:
    """The armed API faults, consumed in arrival order (the first matching one fires)."""

    def __init__(self) -> None:
        self._armed: list[_Armed] = []
        self.fired: Counter[str] = Counter()

    def arm(self, fault: ApiFault) -> None:
        self._armed.append(_Armed(fault, fault.count))

    def clear(self) -> None:
        self._armed.clear()

    def pending(self) -> list[ApiFault]:
        return [a.fault for a in self._armed]

    def take(self, method: str, path: str, is_watch: bool) -> ApiFault | None:
        for armed in self._armed:
            if armed.fault.matches(method, path, is_watch):
                if armed.remaining is not None:
                    armed.remaining -= 1
                    if armed.remaining <= 0:
                        self._armed.remove(armed)
                self.fired[armed.fault.kind] += 1
                return armed.fault
        return None


def error_response(fault: ApiFault) -> aiohttp.web.Response:
    assert fault.status is not None
    reason = REASONS.get(fault.status, "InternalError")
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": f"injected fault: {reason}", "reason": reason, "code": fault.status,
            "details": {"retryAfterSeconds": fault.retry_after_s} if fault.status == 429 else {}}
    response = aiohttp.web.json_response(body, status=fault.status)
    if fault.status == 429:
        response.headers["Retry-After"] = str(fault.retry_after_s)
    return response


@attrs.define(kw_only=True)
class ChaosHandler(EmulatorHandler):
    """The emulator's handler with an `ApiFaultPlan` in front of it."""

    faults: ApiFaultPlan = attrs.field(init=False, factory=ApiFaultPlan)

    async def __call__(self, raw_request: aiohttp.web.BaseRequest) -> aiohttp.web.StreamResponse:
        is_watch = raw_request.query.get("watch") in ("true", "1")
        fault = self.faults.take(raw_request.method.upper(), raw_request.path, is_watch)
        if fault is not None:
            if fault.delay_s:
                await asyncio.sleep(fault.delay_s)
            if fault.status is not None:
                await raw_request.read()  # drain the body so the connection stays usable
                return error_response(fault)
        return await super().__call__(raw_request)

    async def cut_watches(self) -> None:
        """End every open watch stream (the clients see the response end and resume): each stream
        holds the `stopping` event it started with; set that one, new streams get a fresh one."""
        cut, self.stopping = self.stopping, asyncio.Event()
        cut.set()
        await asyncio.sleep(0)


def control_server(api: KubernetesApiEmulator, port: int = 0, host: str = "127.0.0.1") -> ControlServer:
    handler = api.kmock
    if not isinstance(handler, ChaosHandler):
        raise TypeError("the emulator was built without fault hooks: KubernetesApiEmulator(faults=True)")
    watches_cut = Counter[str]()

    async def add_fault(body: dict[str, Any], _args: dict[str, str]) -> Any:
        fault = api_fault_from_json(body)
        handler.faults.arm(fault)
        return {"armed": asdict(fault)}

    async def clear_faults(_body: dict[str, Any], _args: dict[str, str]) -> Any:
        handler.faults.clear()
        return {"ok": True}

    async def get_faults(_body: dict[str, Any], _args: dict[str, str]) -> Any:
        cuts = {k: v for k, v in watches_cut.items() if k != "compactions"}
        return {"pending": [asdict(f) for f in handler.faults.pending()], "fired": {**handler.faults.fired, **cuts}}

    async def cut(body: dict[str, Any], _args: dict[str, str]) -> Any:
        gone = field(body, "gone", bool, False)
        compacted = None
        if gone:
            # A write, then compaction, in one step: every watcher's last resourceVersion is now
            # older than the history, so its resume (or its still-open stream) meets 410 Gone,
            # while a fresh list-then-watch works, as after an etcd compaction on a real server.
            watches_cut["compactions"] += 1
            api.create({"apiVersion": "v1", "kind": "Namespace",
                        "metadata": {"name": f"chaos-compaction-{watches_cut['compactions']}"}})
            compacted = api.compact()
        await handler.cut_watches()
        watches_cut["watch_gone" if gone else "watch_cut"] += 1
        return {"compacted_to": compacted}

    return ControlServer({
        ("POST", "/faults"): add_fault,
        ("DELETE", "/faults"): clear_faults,
        ("GET", "/faults"): get_faults,
        ("POST", "/watches/cut"): cut,
    }, host=host, port=port)
