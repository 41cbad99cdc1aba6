"""A memory census of the operator process, for benchmarks (not imported by kafkaops itself).

`bench/operator_bench.py --census-every SEC` puts this directory on the operator's PYTHONPATH and
sets KAFKAOPS_CENSUS_LOG; Python then imports this module at start-up, and on each SIGUSR2 the
operator appends to that file: its RSS, pymalloc's allocated bytes, the objects the garbage
collector tracks (largest types by shallow size), kopf's per-object streams (live workers) and
the events queued in them (count and deep size), and the live asyncio tasks by coroutine name.

The census runs inside the event loop's thread (a signal handler) and stops the loop for a few
hundred milliseconds at 10,000 objects: take it every few seconds, not continuously.
"""

from __future__ import annotations

import asyncio
import collections
import gc
import io
import os
import re
import signal
import sys
import time

LOG = os.environ.get("KAFKAOPS_CENSUS_LOG")


def _deep_size(root: object, seen: set[int]) -> int:
    """Bytes of a JSON-like object (dicts, lists, scalars), each object counted once."""
    total, stack = 0, [root]
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        total += sys.getsizeof(item)
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return total


def _pymalloc_allocated() -> int:
    """Bytes in pymalloc's allocated blocks (sys._debugmallocstats writes to the C stderr)."""
    read, write = os.pipe()
    saved = os.dup(2)
    os.dup2(write, 2)
    try:
        sys._debugmallocstats()
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(write)
    with io.open(read, "rb") as pipe:
        text = pipe.read().decode(errors="replace")
    found = re.search(r"# bytes in allocated blocks\s*=\s*([\d,]+)", text)
    return int(found.group(1).replace(",", "")) if found else -1


def census(*_: object) -> None:
    out: list[str] = []
    try:
        status = dict(line.split(":", 1) for line in open("/proc/self/status") if ":" in line)
        objects = gc.get_objects()
        counts: collections.Counter[str] = collections.Counter()
        sizes: collections.Counter[str] = collections.Counter()
        streams = []
        for obj in objects:
            kind = type(obj)
            name = f"{kind.__module__}.{kind.__qualname__}"
            counts[name] += 1
            sizes[name] += sys.getsizeof(obj)
            if kind.__name__ == "Stream" and kind.__module__.endswith("reactor.queueing"):
                streams.append(obj)
        seen: set[int] = set()
        queued = [event for stream in streams for event in list(stream.backlog._queue)]  # noqa: SLF001
        queued_bytes = sum(_deep_size(event, seen) for event in queued)
        loop = asyncio.events._get_running_loop()  # noqa: SLF001 - the handler runs inside the loop's thread
        tasks = collections.Counter(
            getattr(task.get_coro(), "__qualname__", "?") for task in (asyncio.all_tasks(loop) if loop else ()))
        out.append(f"census {time.time():.1f} rss_kib={status['VmRSS'].split()[0]} hwm_kib={status['VmHWM'].split()[0]} "
                   f"pymalloc_allocated_mib={_pymalloc_allocated() / 2**20:.1f} tracked={len(objects)} "
                   f"kopf_streams={len(streams)} queued_events={len(queued)} queued_mib={queued_bytes / 2**20:.1f} "
                   f"tasks={sum(tasks.values())}")
        out += [f"  type {sizes[name] / 2**20:7.1f} MiB {counts[name]:9d} {name}" for name, _ in sizes.most_common(12)]
        out += [f"  task {count:9d} {name}" for name, count in tasks.most_common(8)]
        del objects, streams, queued
    except Exception as exc:  # noqa: BLE001 - a probe must never take the operator down
        out.append(f"census failed: {exc!r}")
    with open(LOG, "a", encoding="utf-8") as handle:
        handle.write("\n".join(out) + "\n")


if LOG and sys.argv[:2] == ["-m", "run"]:  # `python -m kafkaops run`: argv[0] is "-m" until the module starts
    signal.signal(signal.SIGUSR2, census)
