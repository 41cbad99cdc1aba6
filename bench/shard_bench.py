"""Benchmark: sharded operator, N replicas x M KafkaTopics over C KafkaClusters (issue 17).

Starts noida-db, the Kubernetes API emulator and N `kafkaops run --sharding leases` processes,
creates C KafkaClusters (all on the one noida-db), then M KafkaTopics spread evenly over them as
fast as the API accepts them, and measures: the time until every one is Ready, how the clusters
spread over the replicas, CreateTopics requests (each replica's Prometheus metrics), each
replica's peak RSS (/proc VmHWM); then kills (-9) the replica owning the most clusters and
measures the time until its clusters have a new holder and until the new owners' first bulk
resync of them has finished (everything compared, nothing re-created).

    .venv/bin/python bench/shard_bench.py [--replicas 3] [--topics 10000] [--clusters 12] [--lease 15]

Not a test: numbers vary with the machine; docs/benchmarks.md records them.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "e2e"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from conftest import Kube, condition  # noqa: E402  (the e2e tests' client helper)
from operator_bench import peak_rss_mib, requests_by_api  # noqa: E402

from kafkaops.testing.servers import free_port, start_noida  # noqa: E402
from kafkaops.testing.stack import start_emulator, start_operator  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
API = "kafkaops.io/v1alpha1"
RESYNCED = re.compile(r"KafkaCluster kafka/(\S+): (\d+) resource\(s\) compared with Kafka in one bulk read")


def holders(kube: Kube) -> dict[str, str]:
    leases = kube.custom.list_namespaced_custom_object("coordination.k8s.io", "v1", "kafka", "leases",
                                                      label_selector="kafkaops.io/lease=cluster")["items"]
    return {lease["metadata"]["annotations"]["kafkaops.io/cluster-name"]: lease["spec"].get("holderIdentity") or ""
            for lease in leases}


def poll(check, timeout: float, every: float = 1.0, what: str = "condition"):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if result := check():
            return result
        time.sleep(every)
    raise SystemExit(f"timed out after {timeout:g} s waiting for {what}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--topics", type=int, default=10000)
    parser.add_argument("--clusters", type=int, default=12)
    parser.add_argument("--lease", type=float, default=15.0, help="lease duration, seconds")
    args = parser.parse_args()
    names = [f"op-{i}" for i in range(args.replicas)]
    ports = {name: free_port() for name in names}
    clusters = [f"k{i:02d}" for i in range(args.clusters)]
    env = {"KAFKAOPS_SHARDING": "leases", "KAFKAOPS_LEASE_DURATION": str(args.lease),
           "KAFKAOPS_LEASE_NAMESPACE": "kafka"}
    with start_noida() as noida, start_emulator(ROOT / "crds", namespaces=["kafka"]) as api:
        replicas = {n: start_operator(api.kubeconfig, "--metrics-port", str(ports[n]), env={**env, "POD_NAME": n})
                    for n in names}
        try:
            kube = Kube(api.kubeconfig, "kafka")
            for c in clusters:
                kube.create("kafkaclusters", {"apiVersion": API, "kind": "KafkaCluster", "metadata": {"name": c},
                                              "spec": {"bootstrapServers": [noida.bootstrap]}})
            poll(lambda: len(kube.list("kafkaclusters")) == len(clusters) and all(
                condition(o, "Ready").get("status") == "True" for o in kube.list("kafkaclusters")), 120,
                 what="every KafkaCluster Ready")
            owners = holders(kube)
            start = time.perf_counter()

            def create(i: int) -> None:
                kube.create("kafkatopics", {"apiVersion": API, "kind": "KafkaTopic",
                                            "metadata": {"name": f"s-{i:05d}"},
                                            "spec": {"clusterRef": {"name": clusters[i % len(clusters)]},
                                                     "partitions": 3, "replicationFactor": 1,
                                                     "config": {"retention.ms": "86400000"}}})

            with ThreadPoolExecutor(8) as pool:
                list(pool.map(create, range(args.topics)))
            created = time.perf_counter() - start

            def all_ready() -> bool:
                items = kube.list("kafkatopics")
                return len(items) == args.topics and all(condition(o, "Ready").get("status") == "True" for o in items)

            poll(all_ready, 1800, what="every KafkaTopic Ready")
            total = time.perf_counter() - start
            sent = {n: requests_by_api(ports[n]) for n in names}
            rss = {n: peak_rss_mib(replicas[n].pid) for n in names}
            # ownership lost under load (a renewal past its deadline), and clusters acquired, per replica
            losses = {n: replicas[n].log(10**9).count("stops work on KafkaCluster") for n in names}
            acquired = {n: replicas[n].log(10**9).count(" owns KafkaCluster ") for n in names}
            load = os.getloadavg()

            failover = resynced = float("nan")
            victim, orphaned = "", []
            if args.replicas > 1:
                victim = max(names, key=lambda n: list(owners.values()).count(n))
                orphaned = sorted(c for c, o in owners.items() if o == victim)
                logs_before = {n: len(replicas[n].log(10**9)) for n in names}
                replicas[victim].process.send_signal(signal.SIGKILL)
                killed = time.perf_counter()
                replicas[victim].process.wait(10)
                poll(lambda: all(holders(kube).get(c) not in ("", victim) for c in orphaned), 10 * args.lease + 60,
                     every=0.2, what="the victim's clusters taken over")
                failover = time.perf_counter() - killed

                def resynced_all() -> bool:
                    seen = set()
                    for n in names:
                        if n != victim:
                            seen |= {m.group(1) for m in RESYNCED.finditer(replicas[n].log(10**9)[logs_before[n]:])}
                    return set(orphaned) <= seen

                poll(resynced_all, 600, every=0.5, what="the new owners' first resync")
                resynced = time.perf_counter() - killed
            final = holders(kube)
            survivors_creates = sum(requests_by_api(ports[n]).get("CreateTopics", 0) for n in names if n != victim)
        finally:
            for replica in replicas.values():
                replica.stop()
    spread = {n: len([c for c, o in owners.items() if o == n]) for n in names}
    creates = {n: s.get("CreateTopics", 0) for n, s in sent.items()}
    print(f"{args.replicas} replica(s) x {args.topics} KafkaTopics (3 partitions, 1 config) over {args.clusters} "
          f"KafkaClusters on noida-db; lease {args.lease:g} s; python {sys.version.split()[0]}; "
          f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"  clusters per replica: {spread}")
    print(f"  all created in the API after {created:.1f} s; all Ready after {total:.1f} s "
          f"({args.topics / total:.0f} resources/s)")
    print(f"  CreateTopics requests: {sum(creates.values())} {creates}")
    print(f"  Metadata requests: {sum(s.get('Metadata', 0) for s in sent.values())}")
    print(f"  Lease acquisitions {acquired}, ownership lost to a missed renewal {losses}")
    print(f"  peak RSS per replica (MiB): { {n: round(r) for n, r in rss.items()} }")
    if victim:
        before = sum(creates[n] for n in names if n != victim)
        print(f"  kill -9 {victim} ({len(orphaned)} clusters): new holders after {failover:.1f} s, their first "
              f"bulk resync done after {resynced:.1f} s; CreateTopics sent by the survivors since: "
              f"{survivors_creates - before}")
        print(f"  clusters per replica after: { {n: list(final.values()).count(n) for n in names} }")

if __name__ == "__main__":
    main()
