"""What only Python's cyclic garbage collector would free: for tests that check something is
freed by reference counting (a reference cycle waits for a full collection of the heap)."""

from __future__ import annotations

import gc


def cyclic_garbage(kinds: tuple[type, ...]) -> int:
    """How many objects of `kinds` only the cyclic collector would free now."""
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        gc.collect()
        return sum(isinstance(o, kinds) for o in gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
