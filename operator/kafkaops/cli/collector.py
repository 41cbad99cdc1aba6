"""How kafkaops' processes use Python's cyclic garbage collector.

CPython runs a full collection, which walks every tracked object of the heap, whenever ten
collections of the middle generation have passed and the objects promoted since the last one
exceed a quarter of the heap. An operator given 10,000 KafkaTopics at once promotes that much
again and again: kopf's queued watch events and in-flight work live a few seconds, long enough
to be promoted, then die. Measured with `gc.callbacks` on `bench/operator_bench.py --topics
10000`: 52 full collections, 0.3-0.7 s each, 20 s of the operator's 62 CPU seconds, each freeing
a few hundred objects (docs/benchmarks.md, 2026-11-26, third session).

`tune()` keeps the young generations as they are (young cyclic garbage is still found within
about 7,000 allocations) and considers a full collection only every 100 middle-generation
collections instead of 10; the objects loaded at start (modules, classes, functions: ~87,000)
are frozen out of every later collection. Cyclic garbage that reaches the old generation waits
longer; the operator makes little of it (kopf's per-event bodies and patches are no longer
cycles: `k8s/kopf_patches.py`; nor are the admin client's answers).

`kafkaops validate` calls `tune()` at start; `plan` and `apply` at start and again once the
manifests are loaded and validated, since those live for the whole run. Without that, applying
5,000 new topics ran three full collections over the loaded manifests, 0.175 s of a 0.63 s apply
(`bench/apply_bench.py`; docs/benchmarks.md, "apply #1: the garbage collector, and one request
less"). And the three run their bulk work with the collector `paused()` (for at most PAUSE_AT_MOST
seconds): what they build lives to the end of the run, so young collections over it free nothing.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

FULL_EVERY = 100  # middle-generation collections between two full ones (CPython's default: 10)
# How long a command's bulk work may run with the collector paused (`paused`): a first apply of
# 5,000 topics loads, plans, creates and waits in under a second; past this, a run still going (a
# reassignment moving partitions, a completion wait, a prompt) collects as usual.
PAUSE_AT_MOST = 5.0


def tune() -> tuple[int, int, int]:
    """Freeze what is loaded now out of later collections; make full collections rarer. Returns
    the thresholds set."""
    gc.collect()
    gc.freeze()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_EVERY)
    return gc.get_threshold()


@contextlib.contextmanager
def paused(at_most: float = PAUSE_AT_MOST) -> Iterator[None]:
    """The cyclic collector off while a command does its bulk work, for at most `at_most` seconds.

    What a plan or an apply builds (manifests, plans, outcomes: frozen dataclasses, no cycles) lives
    to the end of the run, so every young collection over it is work that frees nothing: with 5,000
    new topics 0.015 s of loading and 0.03 s of an apply's 0.30 s (docs/benchmarks.md, "the
    collector paused"). Nothing cyclic is lost: it is collected once the collector is back on, which
    a timer does after `at_most` seconds if the work is still going."""
    if not gc.isenabled():  # off already (a caller's choice): left as it is
        yield
        return
    gc.disable()
    timer = threading.Timer(at_most, gc.enable)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        gc.enable()
