"""A memory census of the operator process, for benchmarks (not imported by kafkaops itself).

`bench/operator_bench.py --census-every SEC` puts this directory on the operator's PYTHONPATH and
sets KAFKAOPS_CENSUS_LOG; Python then imports this module at start-up, and on each SIGUSR2 the
operator appends to that file: its RSS, pymalloc's allocated bytes, the objects the garbage
collector tracks (largest types by shallow size), kopf's per-object streams (live workers) and
the events queued in them (count and deep size), and the live asyncio tasks by coroutine name.

With KAFKAOPS_CENSUS_TRACE=N as well, `tracemalloc` records N frames per allocation from the first
census on (tracing the imports would slow the start past the bench's patience), and each later
census says whose code holds the memory allocated since: for every live block, the innermost frame that
is kafkaops's or kopf's (the code that asked for it, directly or through aiohttp, json, asyncio),
and the package of the innermost frame (where it was allocated). tracemalloc slows the operator
about threefold and its own records take memory: use it to split the memory, not to measure it.

The census runs inside the event loop's thread (a signal handler) and stops the loop for a few
hundred milliseconds at 10,000 objects: take it every few seconds, not continuously.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import gc
import io
import os
import re
import signal
import sys
import time
import tracemalloc

LOG = os.environ.get("KAFKAOPS_CENSUS_LOG")
TRACE = int(os.environ.get("KAFKAOPS_CENSUS_TRACE") or 0)
OWNERS = ("kafkaops", "kopf")


@functools.cache
def _package(filename: str) -> str:
    """`kopf`, `aiohttp`, `kafkaops`, `asyncio`, `json`...: the top-level package of a source file;
    `kafkaops.cli` apart (the frames under kopf.run(), present in every stack)."""
    parts = filename.replace("\\", "/").split("/")
    for anchor in ("site-packages", "operator"):
        if anchor in parts[:-1]:
            package = parts[parts.index(anchor) + 1].removesuffix(".py")
            return "kafkaops.cli" if package == "kafkaops" and parts[parts.index(anchor) + 2] in ("cli", "__main__.py") \
                else package
    for index in range(len(parts) - 2, -1, -1):
        if re.fullmatch(r"python3\.\d+", parts[index]):
            return parts[index + 1].removesuffix(".py")
    return parts[-1]


def _attribution() -> list[str]:
    """Live traced memory by whose code asked for it and by where it was allocated."""
    owner: collections.Counter[str] = collections.Counter()
    site: collections.Counter[str] = collections.Counter()
    ours: collections.Counter[str] = collections.Counter()
    total = 0
    for trace in tracemalloc.take_snapshot().traces:
        size = trace.size
        total += size
        frames = trace.traceback  # oldest first: the allocation is the last frame
        site[_package(frames[-1].filename)] += size
        for frame in reversed(frames):
            package = _package(frame.filename)
            if package in OWNERS:
                owner[package] += size
                if package == "kafkaops":
                    ours[f"{frame.filename.split('/kafkaops/', 1)[-1]}:{frame.lineno}"] += size
                break
        else:
            owner["neither (the event loop, start-up)"] += size
    lines = [f"  traced {total / 2**20:.1f} MiB"]
    lines += [f"  asked-by {size / 2**20:7.1f} MiB {name}" for name, size in owner.most_common()]
    lines += [f"  allocated-in {size / 2**20:7.1f} MiB {name}" for name, size in site.most_common(10)]
    lines += [f"  kafkaops-line {size / 2**20:7.1f} MiB {name}" for name, size in ours.most_common(10)]
    return lines


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


def _events(backlog: object) -> object:
    """The events in an object's backlog: kafkaops's `kopf_patches.Backlog`, or kopf's own Queue."""
    return backlog._items if hasattr(backlog, "_items") else backlog._queue  # type: ignore[attr-defined]  # noqa: SLF001


_RUNNING = False


def census(*_: object) -> None:
    global _RUNNING
    if _RUNNING:  # the next signal came before this census ended (slow under tracemalloc): skip it
        return
    _RUNNING = True
    try:
        _census()
    finally:
        _RUNNING = False


def _traced_census() -> list[str]:
    """Under tracemalloc the object walk below takes tens of seconds: the RSS, the tasks and the
    attribution only."""
    status = dict(line.split(":", 1) for line in open("/proc/self/status") if ":" in line)
    loop = asyncio.events._get_running_loop()  # noqa: SLF001 - the handler runs inside the loop's thread
    return [f"census {time.time():.1f} rss_kib={status['VmRSS'].split()[0]} hwm_kib={status['VmHWM'].split()[0]} "
            f"tasks={len(asyncio.all_tasks(loop)) if loop else 0}", *_attribution()]


def _census() -> None:
    out: list[str] = []
    try:
        if tracemalloc.is_tracing():
            out = _traced_census()
            return
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
        queued = [event for stream in streams for event in list(_events(stream.backlog))]
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
        if TRACE:
            tracemalloc.start(TRACE)
            out.append(f"  tracemalloc started ({TRACE} frames)")
        del objects, streams, queued
    except Exception as exc:  # noqa: BLE001 - a probe must never take the operator down
        out.append(f"census failed: {exc!r}")
    finally:
        with open(LOG, "a", encoding="utf-8") as handle:
            handle.write("\n".join(out) + "\n")


if LOG and sys.argv[:2] == ["-m", "run"]:  # `python -m kafkaops run`: argv[0] is "-m" until the module starts
    signal.signal(signal.SIGUSR2, census)
