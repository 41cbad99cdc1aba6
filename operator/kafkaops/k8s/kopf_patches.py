"""One fix to kopf 1.45.2 (pinned), applied when the operator starts.

kopf fills its indexes before any handler runs: every object of an indexed kind holds a toggle
in one `ToggleSet`, and every object's worker waits on that set's condition until all toggles
are off. Each toggle dropped notifies *every* waiter, and each re-checks the whole set: with
2,000 KafkaTopics a restart spent ~30 s (measured with py-spy: `ToggleSet.make_toggle` /
`wait_for` dominating) before the first handler ran, growing with the square of the count.

The fix keeps the semantics (wait until the set is on/off) but lets one watcher per set and
state wait on the condition; every other waiter waits on an Event that watcher sets. Upstream
kopf may fix this itself; `tests/k8s/test_kopf_patches.py` fails if the patch stops applying.
"""

from __future__ import annotations

import asyncio
from typing import Any

from kopf._cogs.aiokits.aiotoggles import ToggleSet

_original_wait_for = ToggleSet.wait_for
_EVENTS = "_kafkaops_waiters"


async def _shared_wait_for(self: ToggleSet, state: bool, /) -> None:
    wanted = bool(state)
    if self.is_on() == wanted:
        return
    events: dict[bool, asyncio.Event] = self.__dict__.setdefault(_EVENTS, {})
    event = events.get(wanted)
    if event is None:
        event = events[wanted] = asyncio.Event()

        async def watch(done: asyncio.Event = event) -> None:
            try:
                await _original_wait_for(self, wanted)
            finally:
                events.pop(wanted, None)
                done.set()

        task = asyncio.create_task(watch(), name=f"kopf toggle set -> {wanted}")
        self.__dict__.setdefault("_kafkaops_tasks", set()).add(task)
        task.add_done_callback(self.__dict__["_kafkaops_tasks"].discard)
    await event.wait()


def apply() -> None:
    if ToggleSet.wait_for is not _shared_wait_for:
        ToggleSet.wait_for = _shared_wait_for  # type: ignore[method-assign]


def applied() -> bool:
    return ToggleSet.wait_for is _shared_wait_for


__all__: list[Any] = ["apply", "applied"]
