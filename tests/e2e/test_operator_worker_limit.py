"""`kafkaops run --worker-limit N` (KAFKAOPS_WORKER_LIMIT): at most N resources of a kind are handled at
once. With 1, handling is strictly one object after another, so every topic goes out in its own
CreateTopics request, and nothing waits on a slot forever: a topic parked until its KafkaCluster
exists does not hold it."""

from __future__ import annotations

import re
import urllib.request
from collections.abc import Iterator

import pytest

from kafkaops.testing.servers import ServerProcess, free_port, start_noida
from kafkaops.testing.stack import ChildProcess, start_emulator, start_operator

from conftest import REAL_KUBECONFIG, ROOT, Kube, ready, wait_until

pytestmark = pytest.mark.noida
API = "kafkaops.io/v1alpha1"
TOPICS = 6


@pytest.fixture(scope="module")
def stack() -> Iterator[tuple[ChildProcess, ServerProcess]]:
    if REAL_KUBECONFIG:
        pytest.skip("KAFKAOPS_E2E_KUBECONFIG is set: this test starts its own operator with a worker limit")
    with start_noida() as noida, start_emulator(ROOT / "crds", namespaces=["kafka"]) as api:
        yield api, noida


def create_topics_sent(port: int) -> int:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    return sum(int(float(n)) for n in re.findall(r'kafkaops_admin_requests_total\{api="CreateTopics"[^}]*\} (\S+)', text))


def topic(name: str, cluster: str) -> dict:
    return {"apiVersion": API, "kind": "KafkaTopic", "metadata": {"name": name},
            "spec": {"clusterRef": {"name": cluster}, "partitions": 1, "replicationFactor": 1}}


def test_worker_limit_one_handles_topics_one_at_a_time(stack) -> None:
    api, noida = stack
    kube = Kube(api.kubeconfig, "kafka")
    port = free_port()
    operator = start_operator(api.kubeconfig, "--metrics-port", str(port), env={"KAFKAOPS_WORKER_LIMIT": "1"})
    try:
        kube.create("kafkaclusters", {"apiVersion": API, "kind": "KafkaCluster", "metadata": {"name": "main"},
                                      "spec": {"bootstrapServers": [noida.bootstrap]}})
        wait_until(ready(kube, "kafkaclusters", "main"), timeout=60, what="cluster Ready")
        kube.create("kafkatopics", topic("parked", "later"))  # its cluster does not exist yet
        before = create_topics_sent(port)
        for i in range(TOPICS):
            kube.create("kafkatopics", topic(f"limited-{i}", "main"))
        for i in range(TOPICS):
            wait_until(ready(kube, "kafkatopics", f"limited-{i}"), timeout=90, what=f"limited-{i} Ready")
        # created together, handled one by one: one request each (without the limit: one or two in all)
        assert create_topics_sent(port) - before == TOPICS

        kube.create("kafkaclusters", {"apiVersion": API, "kind": "KafkaCluster", "metadata": {"name": "later"},
                                      "spec": {"bootstrapServers": [noida.bootstrap]}})
        wait_until(ready(kube, "kafkatopics", "parked"), timeout=90, what="the parked topic Ready")
    finally:
        operator.stop()
