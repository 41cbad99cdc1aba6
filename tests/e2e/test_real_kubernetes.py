"""The operator e2e flow against a real Kubernetes cluster and a real Kafka, when the user gives them:

    KAFKAOPS_E2E_KUBECONFIG=~/.kube/config KAFKAOPS_E2E_BOOTSTRAP=kafka:9092 make test

The CRDs must be installed and the operator running there (`kubectl apply -f crds/ && kubectl
apply -k manifests/`); the tests use namespace $KAFKAOPS_E2E_NAMESPACE (default kafkaops-e2e),
which must exist. Reported as skipped otherwise.
"""

from __future__ import annotations

import asyncio
import os
import uuid

import pytest

from kafkaops.kafka import AdminClient

from conftest import REAL_BOOTSTRAP, REAL_KUBECONFIG, Kube, ready, wait_until

pytestmark = pytest.mark.real_cluster
API = "kafkaops.io/v1alpha1"


@pytest.fixture
def real() -> Kube:
    if not (REAL_KUBECONFIG and REAL_BOOTSTRAP):
        pytest.skip("no real Kubernetes + Kafka: set KAFKAOPS_E2E_KUBECONFIG and KAFKAOPS_E2E_BOOTSTRAP to run")
    return Kube(REAL_KUBECONFIG, os.environ.get("KAFKAOPS_E2E_NAMESPACE", "kafkaops-e2e"))


def exists(name: str) -> bool:
    async def read() -> bool:
        async with AdminClient.connect(str(REAL_BOOTSTRAP)) as admin:
            return (await admin.describe_topics([name]))[name].ok
    return asyncio.run(read())


def test_topic_lifecycle_on_a_real_cluster(real: Kube) -> None:
    name = f"kafkaops-e2e-{uuid.uuid4().hex[:8]}"
    real.create("kafkaclusters", {"apiVersion": API, "kind": "KafkaCluster", "metadata": {"name": name},
                                  "spec": {"bootstrapServers": str(REAL_BOOTSTRAP).split(","),
                                           "topicDeletion": {"policy": "Delete"}}})
    try:
        wait_until(ready(real, "kafkaclusters", name), timeout=120)
        real.create("kafkatopics", {"apiVersion": API, "kind": "KafkaTopic", "metadata": {"name": name},
                                    "spec": {"clusterRef": {"name": name}, "partitions": 1,
                                             "config": {"retention.ms": "3600000"}}})
        wait_until(ready(real, "kafkatopics", name), timeout=120)
        assert exists(name)
        real.delete("kafkatopics", name)
        wait_until(lambda: real.get("kafkatopics", name) is None, timeout=120)
        assert not exists(name)
    finally:
        real.delete("kafkaclusters", name)
