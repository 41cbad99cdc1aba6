"""The collector policy of the operator and the CLI (cli/collector.py): a storm of
short-lived-but-promoted objects (kopf's queued events) triggers far fewer full collections, and
cyclic garbage is still collected. tests/conftest.py puts the interpreter's policy back after each."""

from __future__ import annotations

import gc
import weakref
from collections import deque

from kafkaops.cli import collector


def full_collections_during_a_storm(events: int = 150_000, in_flight: int = 8_000) -> int:
    """Each event leaves a little state behind (the heap grows, as the operator's does with every
    new object) and a body that lives while `in_flight` newer ones arrive (long enough to be
    promoted), as kopf's backlog of watch events does; how many full collections ran meanwhile."""
    full = 0

    def count(phase: str, info: dict) -> None:
        nonlocal full
        if phase == "start" and info["generation"] == 2:
            full += 1

    queue: deque[dict] = deque()
    state: list[dict] = []
    gc.callbacks.append(count)
    try:
        for i in range(events):
            state.append({"uid": [i]})
            queue.append({"metadata": {"name": f"t{i}", "labels": [i]}, "spec": {"partitions": [i]}})
            if len(queue) > in_flight:
                queue.popleft()
    finally:
        gc.callbacks.remove(count)
    return full


def test_a_storm_runs_far_fewer_full_collections() -> None:
    gc.set_threshold(700, 10, 10)  # CPython's defaults
    gc.collect()
    gc.freeze()  # the test process's own heap stays out of both measurements
    gc.collect()
    before = full_collections_during_a_storm()
    assert collector.tune() == (700, 10, collector.FULL_EVERY)
    assert gc.get_freeze_count() > 0, "what was loaded at start is frozen out of collections"
    after = full_collections_during_a_storm()
    assert before >= 3, f"the storm should trigger full collections with the defaults ({before})"
    assert after * 3 <= before, f"{after} full collections with the policy, {before} without"


def test_cyclic_garbage_is_still_collected() -> None:
    collector.tune()

    class Node:
        pass

    first = Node()
    first.cycle = first  # type: ignore[attr-defined]
    gone = weakref.ref(first)
    del first
    kept = [{"n": [i]} for i in range(20_000)]  # allocations, as a running operator makes them
    assert len(kept) == 20_000
    assert gone() is None, "a cycle made after tune() is freed by the young collections"
