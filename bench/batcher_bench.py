"""Benchmark: N concurrent callers each submit one topic to the Batcher, then delete it.

Compared with the floor: the same topics sent as hand-built maximal batches
(one create_topics / delete_topics call with every topic). Reports requests
sent per API, wall time, peak memory and the ratio to the floor, per backend.

    .venv/bin/python bench/batcher_bench.py [--topics 10000] [--backend noida,fake]

Not a test: numbers vary with the machine; docs/benchmarks.md records them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import platform
import resource
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable

from kafkaops.kafka import AdminClient, Batcher, NewTopic
from kafkaops.testing.servers import start_noida


@contextlib.asynccontextmanager
async def backend(name: str) -> AsyncIterator[str]:
    if name == "noida":
        with start_noida() as server:
            yield server.bootstrap
    elif name == "fake":
        from kafkaops.testing.fake_cluster import FakeClusterDouble

        async with FakeClusterDouble(brokers=3) as cluster:
            yield cluster.bootstrap
    else:
        raise SystemExit(f"unknown backend {name!r}")


async def measure(label: str, admin: AdminClient, work: Callable[[], Awaitable[int]]) -> dict[str, object]:
    # Wall time is measured without tracemalloc (it slows allocation-heavy
    # code unevenly); peak RSS is the process high-water mark after the phase.
    before = dict(admin.requests_by_api)
    start = time.perf_counter()
    failures = await work()
    wall = time.perf_counter() - start
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    sent = {api: n - before.get(api, 0) for api, n in admin.requests_by_api.items() if n - before.get(api, 0)}
    return {"phase": label, "wall_s": round(wall, 3), "requests": sent, "peak_rss_mib": round(rss, 1), "failures": failures}


async def run_backend(name: str, count: int) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    async with backend(name) as bootstrap:
        async with AdminClient.connect(bootstrap) as admin:
            floor_topics = [NewTopic(f"floor.{i}", 1, 1) for i in range(count)]

            async def floor_create() -> int:
                return len((await admin.create_topics(floor_topics)).failed())

            async def floor_delete() -> int:
                return len((await admin.delete_topics([t.name for t in floor_topics])).failed())

            batcher = Batcher(admin)
            topics = [NewTopic(f"batched.{i}", 1, 1) for i in range(count)]

            async def batched_create() -> int:
                results = await asyncio.gather(*(batcher.create_topic(t) for t in topics))
                return sum(not r.ok for r in results)

            async def batched_delete() -> int:
                results = await asyncio.gather(*(batcher.delete_topic(t.name) for t in topics))
                return sum(not r.ok for r in results)

            async def callers_only() -> int:
                # The cost of N concurrent callers that each await one future
                # resolved in a single step: what any per-caller API pays
                # before the Batcher does anything.
                loop = asyncio.get_running_loop()
                futures = [loop.create_future() for _ in range(count)]

                async def caller(future: asyncio.Future[int]) -> int:
                    return await future

                waiting = asyncio.gather(*(caller(f) for f in futures))
                await asyncio.sleep(0)
                for future in futures:
                    future.set_result(0)
                return sum(await waiting)

            for label, work in (
                ("callers only", callers_only),
                ("floor create", floor_create),
                ("floor delete", floor_delete),
                ("batcher create", batched_create),
                ("batcher delete", batched_delete),
            ):
                row = await measure(label, admin, work)
                row["backend"] = name
                rows.append(row)
    for phase in ("create", "delete"):
        floor = next(r for r in rows if r["phase"] == f"floor {phase}")
        batched = next(r for r in rows if r["phase"] == f"batcher {phase}")
        callers = next(r for r in rows if r["phase"] == "callers only")
        batched["ratio_to_floor"] = round(float(batched["wall_s"]) / max(float(floor["wall_s"]), 1e-9), 2)
        batched["ratio_to_floor_plus_callers"] = round(
            float(batched["wall_s"]) / max(float(floor["wall_s"]) + float(callers["wall_s"]), 1e-9), 2
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--backend", default="noida,fake")
    parser.add_argument("--json", action="store_true", help="print JSON rows instead of a table")
    args = parser.parse_args()
    rows: list[dict[str, object]] = []
    for name in args.backend.split(","):
        rows.extend(asyncio.run(run_backend(name.strip(), args.topics)))
    peak_rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if args.json:
        print(json.dumps({"rows": rows, "peak_rss_mib": round(peak_rss_mib, 1)}, indent=2))
        return
    print(f"{args.topics} topics; python {sys.version.split()[0]}; {platform.machine()}; peak RSS {peak_rss_mib:.0f} MiB")
    print(f"{'backend':8} {'phase':15} {'wall s':>8} {'ratio':>6} {'ratio*':>6} {'peak RSS MiB':>12} {'failures':>8}  requests")
    for r in rows:
        ratio = r.get("ratio_to_floor", "")
        ratio_callers = r.get("ratio_to_floor_plus_callers", "")
        print(
            f"{r['backend']:8} {r['phase']:15} {r['wall_s']:>8} {ratio!s:>6} {ratio_callers!s:>6} "
            f"{r['peak_rss_mib']:>12} {r['failures']:>8}  {r['requests']}"
        )
    print("ratio = wall / floor's wall; ratio* = wall / (floor + the cost of N callers awaiting one future each)")
    creates = [r for r in rows if r["phase"] == "batcher create"]
    for r in creates:
        per_100 = r["requests"].get("CreateTopics", 0) / max(args.topics / 100, 1)
        print(f"{r['backend']}: {per_100:.3f} CreateTopics requests per 100 topics (target <= 1)")


if __name__ == "__main__":
    main()
