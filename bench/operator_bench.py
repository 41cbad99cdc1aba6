"""Benchmark: 2,000 KafkaTopic resources created at once; the operator reconciles them on noida-db.

Starts noida-db, the Kubernetes API emulator and `kafkaops run` (each its own process), creates
the KafkaCluster, then N KafkaTopics as fast as the API accepts them, and measures the time until
every one is Ready. Requests by API come from the operator's own Prometheus metrics
(kafkaops_admin_requests_total); the operator's peak RSS from /proc (VmHWM).

    .venv/bin/python bench/operator_bench.py [--topics 2000] [--worker-limit N] [--census-every SEC [--census-trace FRAMES]]

`--worker-limit` is the operator's (docs/cli.md; the same default, 0 for none); `--census-every` takes a memory census of the
operator every SEC seconds until all are Ready (bench/probes/sitecustomize.py) and prints them;
`--census-trace` also runs tracemalloc in the operator and splits the memory by whose code asked
for it (kafkaops or kopf). tracemalloc slows the operator: its times and RSS are not the bench's.

`--operator-python .venv-lean/bin/python` runs the operator as the image installs it (the plain
install, no extras; `make bench-operator` makes that venv and runs this), on this checkout's
sources. The test venv holds packages the image does not, and kopf imports the official
kubernetes client whenever it is installed (17.5 MiB), so only that figure is the shipped one.

Not a test: numbers vary with the machine; docs/benchmarks.md records them.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "e2e"))

from conftest import Kube, admin_requests_by_api as requests_by_api, ready, wait_until  # noqa: E402  (the e2e tests' helpers)
from lifecycle_helpers import ReadyWatch  # noqa: E402

from kafkaops.cli.run import WORKER_LIMIT  # noqa: E402
from kafkaops.testing.servers import free_port, start_noida  # noqa: E402
from kafkaops.testing.stack import start_emulator, start_operator  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
API = "kafkaops.io/v1alpha1"


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=2000)
    parser.add_argument("--ready-timeout", type=float, default=900, help="seconds to wait for every one Ready")
    parser.add_argument("--worker-limit", type=int, default=WORKER_LIMIT,
                        help=f"the operator's --worker-limit (0: none) [its default, {WORKER_LIMIT}]")
    parser.add_argument("--census-every", type=float, default=0,
                        help="seconds between memory censuses of the operator (bench/probes/sitecustomize.py); 0: none")
    parser.add_argument("--census-trace", type=int, default=0,
                        help="frames tracemalloc keeps per allocation in the censuses (slows the operator); 0: off")
    parser.add_argument("--operator-python", default=None,
                        help="the operator's interpreter, e.g. .venv-lean/bin/python (the plain install); default: this one")
    args = parser.parse_args()
    metrics_port = free_port()
    with start_noida() as noida, start_emulator(ROOT / "crds", namespaces=["kafka"]) as api:
        env = {"KAFKAOPS_WORKER_LIMIT": str(args.worker_limit)}
        census_log: Path | None = None
        paths = [os.environ.get("PYTHONPATH")]
        if args.operator_python:
            paths.insert(0, str(ROOT / "operator"))  # this checkout's sources on that venv's packages
        if args.census_every:
            census_log = Path(tempfile.mkdtemp(prefix="kafkaops-census-")) / "census.log"
            paths.insert(0, str(ROOT / "bench" / "probes"))
            env["KAFKAOPS_CENSUS_LOG"] = str(census_log)
            if args.census_trace:
                env["KAFKAOPS_CENSUS_TRACE"] = str(args.census_trace)
        if any(paths):
            env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
        operator = start_operator(api.kubeconfig, "--metrics-port", str(metrics_port), env=env,
                                  python=args.operator_python)
        census_stop = threading.Event()
        try:
            kube = Kube(api.kubeconfig, "kafka")
            kube.create("kafkaclusters", {"apiVersion": API, "kind": "KafkaCluster", "metadata": {"name": "bench"},
                                          "spec": {"bootstrapServers": [noida.bootstrap]}})
            wait_until(ready(kube, "kafkaclusters", "bench"), timeout=60, what="KafkaCluster Ready")
            before = requests_by_api(metrics_port)
            processes = {"operator": operator.pid, "API emulator": api.pid, "noida-db": noida.pid}
            cpu0 = {name: cpu_seconds(pid) for name, pid in processes.items()}
            watch = ReadyWatch(kube, "kafkatopics")
            if args.census_every:
                def take_censuses() -> None:
                    if args.census_trace:  # the first census starts tracemalloc: before the first create
                        os.kill(operator.pid, signal.SIGUSR2)
                    while not census_stop.wait(args.census_every):
                        os.kill(operator.pid, signal.SIGUSR2)
                threading.Thread(target=take_censuses, daemon=True).start()
            client0 = time.process_time()
            start = time.monotonic()

            def create(i: int) -> None:
                kube.create("kafkatopics", {"apiVersion": API, "kind": "KafkaTopic",
                                            "metadata": {"name": f"bench-{i:05d}"},
                                            "spec": {"clusterRef": {"name": "bench"}, "partitions": 3,
                                                     "replicationFactor": 1, "config": {"retention.ms": "86400000"}}})

            with ThreadPoolExecutor(8) as pool:
                list(pool.map(create, range(args.topics)))
            created = time.monotonic() - start

            # when each object was first seen Ready, from a watch stream: listing 10,000 objects
            # every 0.1 s loaded the emulator (and this client) as much as the operator did
            wait_until(lambda: len(watch.first_ready) >= args.topics, timeout=args.ready_timeout, what="every KafkaTopic Ready")
            census_stop.set()
            total = max(watch.first_ready.values()) - start
            watch.stop()
            cpu = {name: cpu_seconds(pid) - cpu0[name] for name, pid in processes.items()}
            cpu["this client (creating, polling)"] = time.process_time() - client0
            after = requests_by_api(metrics_port)
            sent = {api: n - before.get(api, 0) for api, n in sorted(after.items()) if n != before.get(api, 0)}
            rss = peak_rss_mib(operator.pid)
        finally:
            operator.stop()
    creates = sent.get("CreateTopics", 0)
    print(f"{args.topics} KafkaTopics (3 partitions, 1 config each) on noida-db; python {sys.version.split()[0]}; "
          f"worker limit {args.worker_limit or 'none'}; operator on {args.operator_python or sys.executable}")
    print(f"  all {args.topics} created in the API after {created:.1f} s; all Ready after {total:.1f} s")
    print(f"  admin requests by API: {sent}")
    print(f"  CreateTopics requests: {creates} (target <= 40)")
    print(f"  operator peak RSS: {rss:.0f} MiB")
    print("  CPU seconds from the first create to all Ready (2 cores: at most "
          f"{2 * total:.0f} s): " + ", ".join(f"{name} {seconds:.1f}" for name, seconds in cpu.items()))
    if census_log is not None:
        lines = census_log.read_text().splitlines() if census_log.exists() else []
        print(f"  memory censuses ({census_log}):")
        for line in lines:
            if line.startswith("census"):
                fields = dict(f.split("=", 1) for f in line.split()[2:])
                print("    " + " ".join(f"{k}={fields[k]}" for k in ("rss_kib", "pymalloc_allocated_mib", "kopf_streams",
                                                                       "queued_events", "queued_mib", "tasks")))


if __name__ == "__main__":
    main()
