"""Benchmark: N KafkaUsers applied at once reach Ready with few AlterUserScramCredentials requests
(issue 18: 1,000 users, <= 5 requests).

`kafkaops dev-cluster` (the fake cluster double: it stores SCRAM credentials and quotas), the
Kubernetes API emulator and `kafkaops run` as separate processes. The users (generated passwords,
a producer quota each) are created while their KafkaCluster does not exist yet, then the
KafkaCluster: they all run the moment it connects (as after `kubectl apply -f` of a directory
with the cluster last, or an operator start). Then the operator is killed and started again: the
restarted one must send no AlterUserScramCredentials at all (the status remembers which Secret
version was applied). Requests come from the operator's metrics; credentials from the fake's /state.

    .venv/bin/python bench/users_bench.py [--users 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "e2e"))

from conftest import Kube, ready, wait_until  # noqa: E402  (the e2e tests' client helpers)
from lifecycle_helpers import ReadyWatch, cluster, create_all  # noqa: E402
from operator_bench import peak_rss_mib, requests_by_api  # noqa: E402

from kafkaops.testing.servers import free_port  # noqa: E402
from kafkaops.testing.stack import start_dev_cluster, start_emulator, start_operator  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
API = "kafkaops.io/v1alpha1"
RESYNCED = "compared with Kafka in one bulk read"
ALTER = "AlterUserScramCredentials"


def user(name: str) -> dict:
    return {"apiVersion": API, "kind": "KafkaUser", "metadata": {"name": name},
            "spec": {"clusterRef": {"name": "main"}, "authentication": {"type": "scram-sha-512"},
                     "quotas": {"producer_byte_rate": 1048576}}}


def fake_users(control_url: str) -> dict:
    with urllib.request.urlopen(f"{control_url}/state", timeout=30) as answer:
        return json.load(answer)["users"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=1000)
    args = parser.parse_args()
    count = args.users
    with start_emulator(ROOT / "crds", namespaces=["kafka"]) as api:
        kafka = start_dev_cluster("--brokers", "1", "--control-port", "0")
        metrics_port = free_port()
        operator = start_operator(api.kubeconfig, "--metrics-port", str(metrics_port))
        restarted = None
        try:
            kube = Kube(api.kubeconfig, "kafka")
            started = time.monotonic()
            create_all(kube, "kafkausers", [user(f"user-{i:05d}") for i in range(count)])
            print(f"{count} KafkaUsers created in {time.monotonic() - started:.1f} s (before their KafkaCluster)")
            wait_until(lambda: len([o for o in kube.list("kafkausers") if o.get("status")]) == count, timeout=900,
                       what="every KafkaUser waiting for its cluster")
            users, clusters = ReadyWatch(kube, "kafkausers"), ReadyWatch(kube, "kafkaclusters")
            kube.create("kafkaclusters", cluster("main", kafka.url))
            wait_until(lambda: len(users.first_ready) == count, timeout=900, what="every KafkaUser Ready")
            users.stop(), clusters.stop()
            connected = clusters.first_ready["main"]
            last = max(users.first_ready.values()) - connected
            sent = requests_by_api(metrics_port)
            stored = fake_users(kafka.control_url)
            secrets = kube.core.list_namespaced_secret("kafka").items
            print(f"{count} KafkaUsers Ready {last:.2f} s after their KafkaCluster was Ready; "
                  f"{ALTER} requests: {sent.get(ALTER, 0)}, DescribeUserScramCredentials: "
                  f"{sent.get('DescribeUserScramCredentials', 0)}, AlterClientQuotas: {sent.get('AlterClientQuotas', 0)}, "
                  f"DescribeClientQuotas: {sent.get('DescribeClientQuotas', 0)}; credentials in Kafka: {len(stored)}; "
                  f"generated Secrets: {len(secrets)}; operator peak RSS {peak_rss_mib(operator.process.pid):.0f} MiB; "
                  f"load average {os.getloadavg()[0]:.2f}")
            reported = [line for line in operator.log(10**9).splitlines() if "that waited for it" in line]
            print(f"operator: {reported[-1].split(': ', 1)[-1] if reported else '?'}")
            assert len(stored) == count
            wait_until(lambda: RESYNCED in operator.log(10**9), timeout=300, what="the first resync")
            operator.kill()
            restart_port = free_port()
            restarted = start_operator(api.kubeconfig, "--metrics-port", str(restart_port))
            begun = time.monotonic()
            wait_until(lambda: RESYNCED in restarted.log(10**9), timeout=600, what="the restarted operator's resync")
            time.sleep(2)
            again = requests_by_api(restart_port)
            print(f"restart: first bulk resync of {count} users {time.monotonic() - begun:.1f} s after the start; "
                  f"{ALTER} requests of the restarted operator: {again.get(ALTER, 0)}; "
                  f"all requests: {dict(sorted(again.items()))}")
        finally:
            for process in (operator, restarted):
                if process is not None:
                    process.stop()
            kafka.stop()


if __name__ == "__main__":
    main()
