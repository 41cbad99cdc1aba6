"""HA: two operator replicas with kopf peering; only one reconciles at a time."""

from __future__ import annotations

import pytest

from kafkaops.testing.stack import start_emulator, start_operator

from conftest import REAL_KUBECONFIG, ROOT, Kube, peers_settled, ready, wait_until

pytestmark = pytest.mark.noida
API = "kafkaops.io/v1alpha1"


def test_two_replicas_with_peering_only_one_reconciles(noida) -> None:
    if REAL_KUBECONFIG:
        pytest.skip("KAFKAOPS_E2E_KUBECONFIG is set: this test starts its own replicas against the emulator")
    with start_emulator(ROOT / "crds", namespaces=["kafka"]) as api:
        kube = Kube(api.kubeconfig, "kafka")
        kube.custom.create_cluster_custom_object("kopf.dev", "v1", "clusterkopfpeerings",
                                                 {"apiVersion": "kopf.dev/v1", "kind": "ClusterKopfPeering",
                                                  "metadata": {"name": "kafkaops"}})
        replicas = [start_operator(api.kubeconfig, peering="kafkaops") for _ in range(2)]
        try:
            peers_settled(replicas, replicas)  # the lower priority pauses
            kube.create("kafkaclusters", {"apiVersion": API, "kind": "KafkaCluster", "metadata": {"name": "ha"},
                                          "spec": {"bootstrapServers": [noida.bootstrap]}})
            for i in range(5):
                kube.create("kafkatopics", {"apiVersion": API, "kind": "KafkaTopic", "metadata": {"name": f"ha-{i}"},
                                            "spec": {"clusterRef": {"name": "ha"}, "partitions": 1}})
            for i in range(5):
                wait_until(ready(kube, "kafkatopics", f"ha-{i}"), timeout=60)
            handled = ["KafkaCluster kafka/ha connected" in r.log(10**7) for r in replicas]
            assert handled.count(True) == 1, [r.log(3000) for r in replicas]
        finally:
            for replica in replicas:
                replica.stop()
