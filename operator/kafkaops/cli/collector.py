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
manifests are loaded and validated, since those live for the whole run. Without it, applying
5,000 new topics ran three full collections over the loaded manifests, 0.175 s of a 0.63 s apply
(`bench/apply_bench.py`; docs/benchmarks.md, "apply #1: the garbage collector, and one request
less").
"""

from __future__ import annotations

import gc

FULL_EVERY = 100  # middle-generation collections between two full ones (CPython's default: 10)


def tune() -> tuple[int, int, int]:
    """Freeze what is loaded now out of later collections; make full collections rarer. Returns
    the thresholds set."""
    gc.collect()
    gc.freeze()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_EVERY)
    return gc.get_threshold()
