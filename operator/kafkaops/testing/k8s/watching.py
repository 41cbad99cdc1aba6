"""The watch-event log and watch streams: replay from a resourceVersion, bookmarks, 410 Gone."""

from __future__ import annotations

import asyncio
import bisect
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import kmock

from . import errors
from .resources import ResourceDef
from .values import clone

INITIAL_EVENTS_END = "k8s.io/initial-events-end"

Matcher = Callable[[dict[str, Any]], bool]


@dataclass(frozen=True)
class Event:
    rv: int
    resource: kmock.resource  # the storage key
    namespace: str | None
    type: str  # ADDED, MODIFIED, DELETED
    obj: dict[str, Any]
    old: dict[str, Any] | None  # the state before, to see objects moving in or out of a selector


class EventLog:
    """Every write's event, in resourceVersion order; `compact()` drops them, as etcd compaction."""

    def __init__(self, start_rv: int, *, max_events: int = 100_000) -> None:
        self.max_events = max_events
        self.latest_rv = start_rv
        self.oldest_rv = start_rv  # a watch from an older resourceVersion gets 410 Gone
        self._events: list[Event] = []
        self._rvs: list[int] = []
        self._changed = asyncio.Event()  # replaced after each append: one-shot wake-ups

    def append(self, event: Event) -> None:
        self._events.append(event)
        self._rvs.append(event.rv)
        self.latest_rv = event.rv
        if len(self._events) > self.max_events:
            drop = len(self._events) // 2
            self.oldest_rv = self._rvs[drop - 1]
            del self._events[:drop], self._rvs[:drop]
        self._changed.set()
        self._changed = asyncio.Event()

    def compact(self) -> int:
        self._events.clear()
        self._rvs.clear()
        self.oldest_rv = self.latest_rv
        return self.oldest_rv

    async def watch(self, rdef: ResourceDef, namespace: str | None, *, match: Matcher,
                    present: Callable[[ResourceDef, dict[str, Any]], dict[str, Any]],
                    initial: Callable[[], list[dict[str, Any]]], resource_version: str | None,
                    send_initial_events: bool, allow_bookmarks: bool, timeout: float | None,
                    bookmark_interval: float, stopping: asyncio.Event) -> AsyncIterator[dict[str, Any]]:
        """Events for one resource (and namespace) as the API server streams them.

        resourceVersion unset or "0", or sendInitialEvents: the current objects as ADDED first
        (then a BOOKMARK marking their end, for sendInitialEvents); otherwise everything after
        that resourceVersion, or an ERROR 410 if it is compacted away. Ends after `timeout`
        seconds or when `stopping` is set.
        """
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        if resource_version in (None, "", "0") or send_initial_events:
            cursor = self.latest_rv
            for obj in initial():
                yield {"type": "ADDED", "object": obj}
            if send_initial_events and allow_bookmarks:
                yield self._bookmark(rdef, cursor, initial_events_end=True)
        else:
            cursor = int(resource_version)
        next_bookmark = loop.time() + bookmark_interval
        while not stopping.is_set():
            changed = self._changed
            if cursor < self.oldest_rv:  # compacted before this stream read its events: they are lost
                error = errors.expired(f"too old resource version: {cursor} ({self.oldest_rv})")
                yield {"type": "ERROR", "object": errors.status_body(error)}
                return
            for event in self._events[bisect.bisect_right(self._rvs, cursor):]:
                cursor = event.rv
                translated = self._translate(event, rdef, namespace, match, present)
                if translated is not None:
                    yield translated
            if allow_bookmarks and loop.time() >= next_bookmark:
                if changed is self._changed:  # nothing new arrived while yielding: all is seen
                    cursor = max(cursor, self.latest_rv)
                yield self._bookmark(rdef, cursor)
                next_bookmark = loop.time() + bookmark_interval
            wait = next_bookmark - loop.time() if allow_bookmarks else bookmark_interval
            if deadline is not None:
                if loop.time() >= deadline:
                    return
                wait = min(wait, deadline - loop.time())
            if changed is not self._changed:
                continue  # more events arrived while the consumer was reading
            waiters = {asyncio.ensure_future(stopping.wait()), asyncio.ensure_future(changed.wait())}
            try:
                await asyncio.wait(waiters, timeout=max(wait, 0.0), return_when=asyncio.FIRST_COMPLETED)
            finally:
                for waiter in waiters:
                    waiter.cancel()

    @staticmethod
    def _translate(event: Event, rdef: ResourceDef, namespace: str | None, match: Matcher,
                   present: Callable[[ResourceDef, dict[str, Any]], dict[str, Any]]) -> dict[str, Any] | None:
        if event.resource != rdef.storage_key or (namespace is not None and event.namespace != namespace):
            return None
        obj = present(rdef, clone(event.obj))
        now_ok = match(obj)
        was_ok = event.old is not None and match(present(rdef, clone(event.old)))
        kind = event.type
        if kind == "MODIFIED" and now_ok != was_ok:  # moved in or out of a selector's view
            kind = "ADDED" if now_ok else "DELETED"
        if (kind == "DELETED" and (now_ok or was_ok)) or (kind != "DELETED" and now_ok):
            return {"type": kind, "object": obj}
        return None

    @staticmethod
    def _bookmark(rdef: ResourceDef, rv: int, initial_events_end: bool = False) -> dict[str, Any]:
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if initial_events_end:
            meta["annotations"] = {INITIAL_EVENTS_END: "true"}
        return {"type": "BOOKMARK", "object": {"kind": rdef.kind, "apiVersion": rdef.api_version, "metadata": meta}}
