"""Benchmark: the operator's lifecycle at scale (issue 12's figures).

1. `--early N` KafkaTopics created before their KafkaCluster: seconds from the KafkaCluster
   becoming Ready to all N Ready (goal <= 2 s for 500).
2. `--restart M` KafkaTopics Ready, the operator killed (SIGKILL) and started again: resources that
   left Ready (goal 0), status writes and Events during the restart (goal <= 5), ERROR log lines,
   admin requests of the restarted operator, and seconds until a spec edit made right after the
   restart is Ready (goal <= 2 s) - once made when the new process starts, once when it reports
   its KafkaCluster connected.
3. `--resync K` KafkaTopics Ready under a KafkaCluster with resyncInterval 10s: what one steady
   resync cycle costs (issue 17: <= 3 requests per API per cycle, <= 2 s, no status writes when
   nothing changed): admin requests per cycle from the operator's metrics, the cycle's duration
   from kafkaops_resync_duration_seconds, and the objects written over three cycles.

4. `--edits N` (with `--among K`, default 10,000): K KafkaTopics Ready, then N spec edits made
   one at a time (a config value of a random topic): seconds from each PATCH to the resource Ready
   at its new generation, as p50 / p95 / p99 / max (issue 17: p99 <= 1 s), and the admin requests
   per edit.

Each phase starts noida-db, the Kubernetes API emulator and `kafkaops run` as separate processes.
Times come from a watch stream (when each object was first seen Ready), not from polling.

    .venv/bin/python bench/lifecycle_bench.py [--early 500] [--restart 2000] [--resync 10000] [--edits 200]
"""

from __future__ import annotations

import argparse
import re
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "e2e"))

from conftest import Kube, ready, wait_until  # noqa: E402  (the e2e tests' client helpers)
from lifecycle_helpers import ApiState, ReadyWatch, all_ready, cluster, create_all, topic  # noqa: E402
from operator_bench import peak_rss_mib, requests_by_api  # noqa: E402

from kafkaops.testing.servers import free_port, start_noida  # noqa: E402
from kafkaops.testing.stack import start_emulator, start_operator  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESYNCED = "compared with Kafka in one bulk read"


def early(count: int) -> None:
    with start_noida() as noida, start_emulator(ROOT / "crds", namespaces=["kafka"]) as api:
        operator = start_operator(api.kubeconfig)
        try:
            kube = Kube(api.kubeconfig, "kafka")
            create_all(kube, "kafkatopics", [topic(f"early-{i:05d}") for i in range(count)])
            wait_until(lambda: len([o for o in kube.list("kafkatopics") if o.get("status")]) == count, timeout=600,
                       what="every KafkaTopic waiting for its cluster")
            topics, clusters = ReadyWatch(kube, "kafkatopics"), ReadyWatch(kube, "kafkaclusters")
            kube.create("kafkaclusters", cluster("main", noida.bootstrap))
            wait_until(lambda: len(topics.first_ready) == count, timeout=600, what="every KafkaTopic Ready")
            topics.stop(), clusters.stop()
            connected = clusters.first_ready["main"]
            times = sorted(t - connected for t in topics.first_ready.values())
            reported = [line for line in operator.log(10**9).splitlines() if "that waited for it" in line]
            print(f"early: {count} KafkaTopics created before their KafkaCluster: all Ready {times[-1]:.2f} s after "
                  f"it was Ready (first {times[0]:.2f} s, median {times[len(times) // 2]:.2f} s); operator: "
                  f"{reported[-1].split(': ', 1)[-1] if reported else '?'}")
        finally:
            operator.stop()


def restart(count: int) -> None:
    with start_noida() as noida, start_emulator(ROOT / "crds", namespaces=["kafka"]) as api:
        kube = Kube(api.kubeconfig, "kafka")
        first = start_operator(api.kubeconfig)
        second = third = None
        try:
            kube.create("kafkaclusters", cluster("main", noida.bootstrap))
            create_all(kube, "kafkatopics", [topic(f"kept-{i:05d}", config={"retention.ms": "86400000"})
                                             for i in range(count)])
            wait_until(lambda: all_ready(kube, "kafkatopics", count), timeout=900, what="every KafkaTopic Ready")
            wait_until(lambda: RESYNCED in first.log(10**9), timeout=120, what="the first resync")
            for label, edit_when in (("at process start", "start"), ("once connected", "connected")):
                victim = first if second is None else second
                victim.kill()
                before = ApiState.read(kube)
                watch = ReadyWatch(kube, "kafkatopics")
                metrics_port = free_port()
                started = time.monotonic()
                fresh = start_operator(api.kubeconfig, "--metrics-port", str(metrics_port))
                if second is None:
                    second = fresh
                else:
                    third = fresh
                name = f"kept-{7 if edit_when == 'start' else 8:05d}"
                if edit_when == "connected":
                    wait_until(lambda: "KafkaCluster kafka/main connected" in fresh.log(10**9), timeout=120)
                edited = time.monotonic()
                kube.patch("kafkatopics", name, {"spec": {"config": {"retention.ms": "7200000"}}})
                edit_ready = wait_until(ready(kube, "kafkatopics", name), timeout=120, what="the edit Ready") and \
                    time.monotonic() - edited
                wait_until(lambda: RESYNCED in fresh.log(10**9), timeout=300, what="the first resync after the restart")
                settled = time.monotonic() - started
                time.sleep(2)
                watch.stop()
                after = ApiState.read(kube)
                written = [k for k in after.written_since(before) if not k.endswith(name)]
                errors = [line for line in fresh.log(10**9).splitlines() if " ERROR " in line]
                sent = requests_by_api(metrics_port)
                print(f"restart ({label}) with {count} KafkaTopics Ready: left Ready {len(watch.left_ready - {name})}, "
                      f"objects written {len(written)} (watch saw {watch.modified} writes incl. the edit), "
                      f"Events {after.events - before.events}, ERROR lines {len(errors)}; "
                      f"edit Ready after {edit_ready:.2f} s; first resync done {settled:.1f} s after the start; "
                      f"admin requests {sent}; peak RSS {peak_rss_mib(fresh.pid):.0f} MiB")
                if written:
                    print(f"  written: {written[:10]}")
        finally:
            for process in (first, second, third):
                if process is not None:
                    process.stop()


def resync_metrics(port: int) -> tuple[float, int]:
    """(sum of resync seconds, number of resyncs) from the operator's metrics."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    total = sum(float(v) for v in re.findall(r'kafkaops_resync_duration_seconds_sum\{[^}]*\} ([0-9.e+]+)', text))
    count = sum(int(float(v)) for v in re.findall(r'kafkaops_resync_duration_seconds_count\{[^}]*\} ([0-9.e+]+)', text))
    return total, count


def steady(count: int, cycles: int = 3) -> None:
    with start_noida() as noida, start_emulator(ROOT / "crds", namespaces=["kafka"]) as api:
        kube = Kube(api.kubeconfig, "kafka")
        metrics_port = free_port()
        operator = start_operator(api.kubeconfig, "--metrics-port", str(metrics_port))
        try:
            kube.create("kafkaclusters", cluster("main", noida.bootstrap, resyncInterval="10s"))
            create_all(kube, "kafkatopics", [topic(f"steady-{i:05d}", config={"retention.ms": "86400000"})
                                             for i in range(count)])
            wait_until(lambda: all_ready(kube, "kafkatopics", count), timeout=1800, what="every KafkaTopic Ready")
            wait_until(lambda: resync_metrics(metrics_port)[1] >= 1, timeout=120, what="a first resync")
            posted = [-1]

            def events_settled() -> bool:  # kopf posts the creation's Events from a queue, behind
                now, posted[0] = posted[0], len(kube.events())
                return now == posted[0]

            while not events_settled():
                time.sleep(3)
            seconds0, done0 = resync_metrics(metrics_port)
            sent0, before = requests_by_api(metrics_port), ApiState.read(kube)
            wait_until(lambda: resync_metrics(metrics_port)[1] >= done0 + cycles, timeout=60 + 30 * cycles,
                       what=f"{cycles} more resyncs")
            seconds1, done1 = resync_metrics(metrics_port)
            sent1, after = requests_by_api(metrics_port), ApiState.read(kube)
            per_cycle = {api_name: round((n - sent0.get(api_name, 0)) / (done1 - done0), 1)
                         for api_name, n in sorted(sent1.items()) if n != sent0.get(api_name, 0)}
            print(f"steady resync with {count} KafkaTopics: {done1 - done0} cycles, "
                  f"{(seconds1 - seconds0) / (done1 - done0):.2f} s per cycle, requests per cycle {per_cycle}, "
                  f"objects written {len(after.written_since(before))}, Events {after.events - before.events}; "
                  f"peak RSS {peak_rss_mib(operator.pid):.0f} MiB")
        finally:
            operator.stop()


def edits(count: int, among: int) -> None:
    import random

    rng = random.Random(17)
    with start_noida() as noida, start_emulator(ROOT / "crds", namespaces=["kafka"]) as api:
        kube = Kube(api.kubeconfig, "kafka")
        metrics_port = free_port()
        operator = start_operator(api.kubeconfig, "--metrics-port", str(metrics_port))
        try:
            kube.create("kafkaclusters", cluster("main", noida.bootstrap))
            create_all(kube, "kafkatopics", [topic(f"edit-{i:05d}", config={"retention.ms": "86400000"})
                                             for i in range(among)])
            wait_until(lambda: all_ready(kube, "kafkatopics", among), timeout=1800, what="every KafkaTopic Ready")
            time.sleep(5)  # the creation's Events and writes drain
            sent0 = requests_by_api(metrics_port)
            latencies = []
            for n in range(count):
                name = f"edit-{rng.randrange(among):05d}"
                started = time.monotonic()
                edited = kube.patch("kafkatopics", name, {"spec": {"config": {"retention.ms": str(3_600_000 + n)}}})
                generation = edited["metadata"]["generation"]

                def settled() -> bool:
                    item = kube.get("kafkatopics", name) or {}
                    status = item.get("status") or {}
                    return status.get("observedGeneration") == generation and any(
                        c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or ())

                while not settled():
                    time.sleep(0.01)
                latencies.append(time.monotonic() - started)
            sent1 = requests_by_api(metrics_port)
            ordered = sorted(latencies)

            def pct(q: float) -> float:
                return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]

            per_edit = {api_name: round((n - sent0.get(api_name, 0)) / count, 2)
                        for api_name, n in sorted(sent1.items()) if n != sent0.get(api_name, 0)}
            print(f"one edit at a time among {among} KafkaTopics ({count} edits): apply -> Ready p50 {pct(0.5):.3f} s, "
                  f"p95 {pct(0.95):.3f} s, p99 {pct(0.99):.3f} s, max {ordered[-1]:.3f} s; requests per edit {per_edit}; "
                  f"peak RSS {peak_rss_mib(operator.pid):.0f} MiB")
        finally:
            operator.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--early", type=int, default=500)
    parser.add_argument("--restart", type=int, default=2000)
    parser.add_argument("--resync", type=int, default=0, help="KafkaTopics for the steady-resync phase (0: skip)")
    parser.add_argument("--edits", type=int, default=0, help="one-at-a-time spec edits to time (0: skip)")
    parser.add_argument("--among", type=int, default=10000, help="KafkaTopics managed during --edits")
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}; noida-db; the API emulator")
    if args.early:
        early(args.early)
    if args.restart:
        restart(args.restart)
    if args.resync:
        steady(args.resync)
    if args.edits:
        edits(args.edits, args.among)


if __name__ == "__main__":
    main()
