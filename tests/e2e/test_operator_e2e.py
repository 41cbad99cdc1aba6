"""The operator end to end: `kafkaops run` as a process, the Kubernetes API emulator, noida-db."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from kafkaops.kafka import AdminClient, AlterConfigOp, ConfigResource, ConfigSource

from conftest import Kube, condition, ready, wait_until

pytestmark = pytest.mark.noida
API = "kafkaops.io/v1alpha1"


def cluster(name: str, bootstrap: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": API, "kind": "KafkaCluster", "metadata": {"name": name},
            "spec": {"bootstrapServers": [bootstrap], "resyncInterval": "1s", **spec}}


def topic(name: str, cluster_name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": API, "kind": "KafkaTopic", "metadata": {"name": name},
            "spec": {"clusterRef": {"name": cluster_name}, "partitions": 2, "replicationFactor": 1, **spec}}


def kafka(bootstrap: str, coro_factory):
    async def run():
        async with AdminClient.connect(bootstrap) as admin:
            return await coro_factory(admin)
    return asyncio.run(run())


def topic_configs(bootstrap: str, name: str) -> dict[str, str] | None:
    async def read(admin: AdminClient):
        result = (await admin.describe_configs([ConfigResource.topic(name)]))[ConfigResource.topic(name)]
        if result.value is None:
            return None
        return {k: e.value for k, e in result.value.items() if e.source is ConfigSource.DYNAMIC_TOPIC_CONFIG}
    return kafka(bootstrap, read)


def topic_exists(bootstrap: str, name: str) -> bool:
    async def read(admin: AdminClient):
        return (await admin.describe_topics([name]))[name].ok
    return kafka(bootstrap, read)


@pytest.fixture
def kafka_cluster(kube: Kube, operator, noida, name: str) -> str:
    """A Ready KafkaCluster on noida (deletion policy Delete) for this test; its name."""
    kube.create("kafkaclusters", cluster(name, noida.bootstrap, topicDeletion={"policy": "Delete"}))
    obj = wait_until(ready(kube, "kafkaclusters", name), what=f"KafkaCluster {name} Ready")
    assert obj["status"]["clusterId"] and obj["status"]["brokers"]
    return name


def test_topic_create_update_delete(kube: Kube, kafka_cluster: str, noida, name: str) -> None:
    topic_name = f"{name}.orders"
    kube.create("kafkatopics", topic(f"{name}-orders", kafka_cluster, topicName=topic_name,
                                     config={"retention.ms": "3600000"}))
    obj = wait_until(ready(kube, "kafkatopics", f"{name}-orders"), what="topic Ready")
    assert obj["status"]["partitions"] == 2 and obj["status"]["topicName"] == topic_name
    assert obj["status"]["managedConfigKeys"] == ["retention.ms"]
    assert topic_configs(noida.bootstrap, topic_name) == {"retention.ms": "3600000"}

    kube.patch("kafkatopics", f"{name}-orders", {"spec": {"partitions": 4, "config": {"retention.ms": "7200000"}}})
    wait_until(lambda: (o := ready(kube, "kafkatopics", f"{name}-orders")()) and o["metadata"]["generation"] == 2,
               what="generation 2 Ready")
    assert topic_configs(noida.bootstrap, topic_name) == {"retention.ms": "7200000"}
    assert [e for e in kube.events() if e.involved_object.name == f"{name}-orders" and e.reason == "Applied"]

    kube.delete("kafkatopics", f"{name}-orders")
    wait_until(lambda: kube.get("kafkatopics", f"{name}-orders") is None, what="object gone (finalizer released)")
    assert not topic_exists(noida.bootstrap, topic_name)


def test_retain_policy_keeps_the_topic(kube: Kube, kafka_cluster: str, noida, name: str) -> None:
    kube.create("kafkatopics", topic(f"{name}-kept", kafka_cluster, deletionPolicy="Retain"))
    wait_until(ready(kube, "kafkatopics", f"{name}-kept"))
    kube.delete("kafkatopics", f"{name}-kept")
    wait_until(lambda: kube.get("kafkatopics", f"{name}-kept") is None)
    assert topic_exists(noida.bootstrap, f"{name}-kept")


def test_invalid_spec_and_partition_decrease_are_stalled(kube: Kube, kafka_cluster: str, noida, name: str) -> None:
    kube.create("kafkatopics", topic(f"{name}-bad", kafka_cluster, config={"retention.msx": "1"}))
    obj = wait_until(lambda: (o := kube.get("kafkatopics", f"{name}-bad")) and condition(o, "Stalled").get("status") == "True" and o)
    assert condition(obj, "Stalled")["reason"] == "UnknownConfigKey" and "spec.config.retention.msx" in condition(obj, "Stalled")["message"]
    assert not topic_exists(noida.bootstrap, f"{name}-bad")

    kube.create("kafkatopics", topic(f"{name}-shrink", kafka_cluster, partitions=3))
    wait_until(ready(kube, "kafkatopics", f"{name}-shrink"))
    kube.patch("kafkatopics", f"{name}-shrink", {"spec": {"partitions": 1}})
    obj = wait_until(lambda: (o := kube.get("kafkatopics", f"{name}-shrink")) and condition(o, "Stalled").get("reason") == "PartitionDecrease" and o)
    assert obj["status"]["observedGeneration"] == 2


def test_drift_is_restored_and_reported(kube: Kube, kafka_cluster: str, noida, name: str) -> None:
    kube.create("kafkatopics", topic(f"{name}-drift", kafka_cluster, config={"retention.ms": "3600000"}))
    wait_until(ready(kube, "kafkatopics", f"{name}-drift"))

    async def tamper(admin: AdminClient):
        await admin.incremental_alter_configs({ConfigResource.topic(f"{name}-drift"): [AlterConfigOp("retention.ms", "1000")]})
    kafka(noida.bootstrap, tamper)
    obj = wait_until(lambda: (o := kube.get("kafkatopics", f"{name}-drift")) and condition(o, "Drifted").get("status") == "True" and o,
                     what="Drifted=True")
    assert "config.retention.ms: 1000 -> 3600000" in condition(obj, "Drifted")["message"]
    assert topic_configs(noida.bootstrap, f"{name}-drift") == {"retention.ms": "3600000"}
    wait_until(lambda: condition(kube.get("kafkatopics", f"{name}-drift"), "Drifted").get("status") == "False",
               what="Drifted=False after a clean resync")


def test_conflicting_claim_is_stalled_and_the_first_keeps_working(kube: Kube, kafka_cluster: str, name: str) -> None:
    kube.create("kafkatopics", topic(f"{name}-first", kafka_cluster, topicName=f"{name}.shared"))
    wait_until(ready(kube, "kafkatopics", f"{name}-first"))
    kube.create("kafkatopics", topic(f"{name}-second", kafka_cluster, topicName=f"{name}.shared", partitions=5))
    obj = wait_until(lambda: (o := kube.get("kafkatopics", f"{name}-second")) and condition(o, "Stalled").get("status") == "True" and o)
    assert condition(obj, "Stalled")["reason"] == "ResourceConflict"
    assert condition(kube.get("kafkatopics", f"{name}-first"), "Ready")["status"] == "True"


def test_pause_and_unmanage(kube: Kube, kafka_cluster: str, noida, name: str) -> None:
    kube.create("kafkatopics", topic(f"{name}-p", kafka_cluster))
    wait_until(ready(kube, "kafkatopics", f"{name}-p"))
    kube.patch("kafkatopics", f"{name}-p", {"metadata": {"annotations": {"kafkaops.io/paused": "true"}},
                                            "spec": {"config": {"retention.ms": "5000000"}}})
    wait_until(lambda: condition(kube.get("kafkatopics", f"{name}-p"), "Ready").get("reason") == "Paused")
    assert "retention.ms" not in (topic_configs(noida.bootstrap, f"{name}-p") or {})
    kube.patch("kafkatopics", f"{name}-p", {"metadata": {"annotations": {"kafkaops.io/paused": None}}})
    wait_until(lambda: (topic_configs(noida.bootstrap, f"{name}-p") or {}).get("retention.ms") == "5000000",
               what="applied after unpause")

    kube.patch("kafkatopics", f"{name}-p", {"metadata": {"annotations": {"kafkaops.io/managed": "false"}}})
    wait_until(lambda: condition(kube.get("kafkatopics", f"{name}-p"), "Ready").get("reason") == "Unmanaged")
    kube.delete("kafkatopics", f"{name}-p")
    wait_until(lambda: kube.get("kafkatopics", f"{name}-p") is None)
    assert topic_exists(noida.bootstrap, f"{name}-p")  # released, not deleted, despite policy Delete


def test_credentials_failure_is_clear(kube: Kube, operator, noida, name: str) -> None:
    kube.create("kafkaclusters", cluster(f"{name}-sasl", noida.bootstrap,
                                         sasl={"mechanism": "SCRAM-SHA-512", "credentialsSecretRef": {"name": "missing"}}))
    obj = wait_until(lambda: (o := kube.get("kafkaclusters", f"{name}-sasl")) and condition(o, "Ready").get("reason") == "CredentialsInvalid" and o)
    assert "kafka/missing" in condition(obj, "Ready")["message"]
    kube.create("kafkatopics", topic(f"{name}-waits", f"{name}-sasl"))
    waiting = wait_until(lambda: (o := kube.get("kafkatopics", f"{name}-waits")) and condition(o, "Reconciling").get("status") == "True" and o)
    assert condition(waiting, "Stalled").get("status") == "False"


def test_sasl_password_never_appears_in_status_events_or_logs(kube: Kube, operator, noida, name: str) -> None:
    password = f"pw-{name}-do-not-leak"
    kube.core.create_namespaced_secret("kafka", {"metadata": {"name": f"{name}-creds"},
                                                 "stringData": {"username": "admin", "password": password}})
    kube.create("kafkaclusters", cluster(f"{name}-auth", noida.bootstrap,
                                         sasl={"mechanism": "PLAIN", "credentialsSecretRef": {"name": f"{name}-creds"}}))
    obj = wait_until(lambda: (o := kube.get("kafkaclusters", f"{name}-auth")) and condition(o, "Ready") and o,
                     what="the SASL cluster's status")
    kube.create("kafkatopics", topic(f"{name}-t", f"{name}-auth"))
    wait_until(lambda: condition(kube.get("kafkatopics", f"{name}-t"), "Ready"), what="the topic's status")
    assert password not in repr(obj) and password not in repr(kube.get("kafkatopics", f"{name}-t"))
    assert not [e for e in kube.events() if password in (e.message or "")]
    assert password not in operator.log(10**7)


def test_a_new_topic_costs_two_writes_and_kopf_keeps_its_bookkeeping_in_the_status(
        kube: Kube, kafka_cluster: str, name: str) -> None:
    """Created, then: kopf's finalizer (one PATCH), the outcome with kopf's diff base (one status
    PATCH; k8s/diffbase.py). The diff base kept as an annotation cost a third write, and an event
    for the operator to process, per object and change."""
    import threading

    from kubernetes import watch

    seen: list[tuple[str, dict[str, Any]]] = []
    stop = threading.Event()

    def follow() -> None:
        stream = watch.Watch()
        for event in stream.stream(kube.custom.list_namespaced_custom_object, "kafkaops.io", "v1alpha1",
                                   kube.namespace, "kafkatopics", field_selector=f"metadata.name={name}-bk",
                                   timeout_seconds=60):
            seen.append((event["type"], event["object"]))
            if stop.is_set():
                stream.stop()

    follower = threading.Thread(target=follow, daemon=True)
    follower.start()
    time.sleep(0.5)  # the watch is open before the object exists
    kube.create("kafkatopics", topic(f"{name}-bk", kafka_cluster))
    obj = wait_until(ready(kube, "kafkatopics", f"{name}-bk"), what="topic Ready")
    time.sleep(2.0)  # anything the operator would still write after Ready
    stop.set()
    kube.patch("kafkatopics", f"{name}-bk", {"metadata": {"labels": {"watch": "done"}}})  # wakes the watch to stop
    follower.join(timeout=30)
    before_label = [(kind, o) for kind, o in seen if (o["metadata"].get("labels") or {}).get("watch") != "done"]
    assert [kind for kind, _ in before_label] == ["ADDED", "MODIFIED", "MODIFIED"], \
        [(k, o["metadata"].get("resourceVersion")) for k, o in seen]
    assert obj["metadata"]["finalizers"] == ["kafkaops.io/finalizer"]
    assert not [k for k in obj["metadata"].get("annotations") or {} if k.startswith("kopf.")]
    assert json.loads(obj["status"]["lastHandledConfiguration"])["spec"] == obj["spec"]
