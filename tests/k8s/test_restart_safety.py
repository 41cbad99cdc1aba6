"""What must survive the operator process: the topic-deletion cap (recorded in the KafkaCluster's
status, merged by the next process) and credentials rotated in their Secret (re-read when the
cluster refuses the old ones). Found by the chaos soak (docs/reliability.md)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kafkaops.k8s.context import Clusters, Connection, OperatorSettings
from kafkaops.k8s.deletion_gate import DeletionGate, DeletionRecord
from kafkaops.k8s.metrics import Metrics
from kafkaops.k8s.reconciler import Reconciler
from kafkaops.kafka import AdminClient
from kafkaops.testing.fake_cluster import FakeClusterDouble, FaultDouble
from kafkaops.testing.sasl_double import SaslServerDouble

from k8s_helpers import CatalogDouble, SecretReaderDouble, cluster_body, condition, connect, topic_body

SETTINGS = OperatorSettings(client_overrides={"linger": 0.01, "wait_poll_min": 0.01}, retry_delay=1.0,
                            metrics_port=None, reconnect_min=0.05, reconnect_max=0.2)


class StatusWriterDouble:
    """The API's status subresource: keeps what the operator wrote, or refuses when told to."""

    def __init__(self) -> None:
        self.written: list[tuple[str, str, str, dict[str, Any]]] = []
        self.refuse = False

    async def __call__(self, plural: str, namespace: str, name: str, status: Any) -> None:
        if self.refuse:
            raise RuntimeError("HTTP 500 (injected)")
        self.written.append((plural, namespace, name, dict(status)))

    def cluster_status(self) -> dict[str, Any]:
        merged: dict[str, Any] = {}
        for plural, _ns, _name, status in self.written:
            if plural == "kafkaclusters":
                merged.update(status)
        return merged


def operator(catalog: CatalogDouble, writer: StatusWriterDouble, reader: SecretReaderDouble | None = None) -> Reconciler:
    return Reconciler(Clusters(reader or SecretReaderDouble(), SETTINGS), catalog, Metrics(), status_writer=writer)


async def topics_in(bootstrap: str, **security: Any) -> set[str]:
    async with AdminClient.connect(bootstrap, **security) as admin:
        return set((await admin.metadata(None)).topics)


def test_the_gate_counts_deletions_another_process_recorded() -> None:
    first = DeletionGate(cap=2, window=60)
    assert first.admit("a", now=1000.0) and first.admit("b", now=1001.0)
    first.finish("a", now=1000.5)
    first.finish("b", now=1001.5)
    recorded = DeletionRecord.of({"status": first.record(now=1002.0).status()})
    assert recorded.finished == pytest.approx((1000.5, 1001.5)) and recorded.in_flight == ()
    restarted = DeletionGate(cap=2, window=60)
    restarted.merge(recorded, now=1002.0)
    assert not restarted.admit("c", now=1002.0), "the cap holds across the restart"
    assert restarted.admit("c", now=1061.6), "and frees up as the window slides"
    assert DeletionRecord.of({"status": {"recentTopicDeletions": ["not a time"]}}) == DeletionRecord()


def test_a_deletion_delayed_by_retries_holds_its_slot_until_it_ends() -> None:
    """The soak's deletion-cap fault: a slot held from admission only let Kafka see 5 deletions
    within 15 s under a cap of 4 per 30 s (one admitted early, sent 15 s later after retries)."""
    gate = DeletionGate(cap=2, window=30)
    assert gate.admit("slow", now=0.0)  # its DeleteTopics meets NOT_CONTROLLER and throttling
    assert gate.admit("quick", now=1.0)
    gate.finish("quick", now=1.2)
    assert not gate.admit("third", now=20.0)
    assert gate.admit("third", now=31.5), "the quick one's window has passed"
    assert not gate.admit("fourth", now=32.0), "the slow one is still in flight: its slot is held"
    gate.finish("third", now=33.0)
    gate.finish("slow", now=40.0)  # it reached Kafka at some moment up to now, maybe next to the third
    assert not gate.admit("fourth", now=62.5)
    assert gate.admit("fourth", now=63.5), "a window after the third ended; the slow one holds the other slot"
    assert not gate.admit("fifth", now=64.0)


def test_a_deletion_another_process_left_in_flight_counts_from_when_it_is_first_seen() -> None:
    """A process killed mid-deletion: its admission is recorded in flight; it may have reached
    Kafka at any moment up to the kill, so the next process counts it finished when it first sees it."""
    dead = DeletionGate(cap=1, window=30)
    assert dead.admit("a", now=100.0)
    recorded = DeletionRecord.of({"status": dead.record(now=100.1).status()})
    assert recorded.in_flight == pytest.approx((100.0,))
    restarted = DeletionGate(cap=1, window=30)
    restarted.merge(recorded, now=140.0)
    restarted.merge(recorded, now=150.0)  # seen again (the status not yet rewritten): not moved
    assert not restarted.admit("b", now=169.0)
    assert restarted.admit("b", now=170.5)
    written = restarted.record(now=170.6)
    assert written.finished == () and written.in_flight == pytest.approx((170.5,))

    third = DeletionGate(cap=2, window=30)  # written back as finished, then merged again: one deletion
    third.merge(recorded, now=200.0)
    for _ in range(2):
        third.merge(DeletionRecord.of({"status": third.record(now=201.0).status()}), now=201.0)
    assert third.held(now=201.0) == 1


def test_a_recorded_time_read_back_is_the_same_deletion() -> None:
    gate = DeletionGate(cap=2, window=60)
    assert gate.admit("a", now=1000.123456789)
    gate.finish("a", now=1000.987654321)
    for _ in range(3):  # the operator merges its own record back from the watch cache at each deletion
        gate.merge(DeletionRecord.of({"status": gate.record(now=1001.0).status()}), now=1001.0)
    assert gate.held(now=1001.0) == 1


async def test_the_deletion_cap_holds_across_an_operator_restart() -> None:
    async with FakeClusterDouble(brokers=1) as fake:
        catalog, writer = CatalogDouble(), StatusWriterDouble()
        cluster = cluster_body(fake.bootstrap, topicDeletion={"policy": "Delete", "maxDeletionsPerReconcile": 2})
        first = operator(catalog, writer)
        await connect(first, cluster)
        doomed = [catalog.add(topic_body(f"doomed-{i}")) for i in range(3)]
        for item in doomed:
            assert condition(await first.reconcile(item), "Ready")["status"] == "True"
        assert (await first.remove(doomed[0])).release and (await first.remove(doomed[1])).release
        assert len(writer.cluster_status()["recentTopicDeletions"]) == 2, "recorded before deleting"
        await first.close()  # the process dies; the API keeps the KafkaCluster's status
        catalog.add({**cluster, "status": writer.cluster_status()})
        second = operator(catalog, writer)
        await connect(second, catalog.cluster(("team", "main")))
        held = await second.remove(doomed[2])
        assert not held.release and condition(held, "Reconciling")["reason"] == "DeletionCapExceeded"
        assert "doomed-2" in await topics_in(fake.bootstrap)
        await second.close()


async def test_no_deletion_without_a_record() -> None:
    async with FakeClusterDouble(brokers=1) as fake:
        catalog, writer = CatalogDouble(), StatusWriterDouble()
        reconciler = operator(catalog, writer)
        await connect(reconciler, cluster_body(fake.bootstrap, topicDeletion={"policy": "Delete"}))
        topic = catalog.add(topic_body("keep-me"))
        await reconciler.reconcile(topic)
        writer.refuse = True
        result = await reconciler.remove(topic)
        assert not result.release and condition(result, "Reconciling")["reason"] == "DeletionNotRecorded"
        assert "keep-me" in await topics_in(fake.bootstrap)
        writer.refuse = False
        assert (await reconciler.remove(topic)).release
        assert "keep-me" not in await topics_in(fake.bootstrap)
        await reconciler.close()


async def test_a_password_rotated_in_its_secret_is_used_after_the_cluster_refuses_the_old_one() -> None:
    old, new = "first-Pa55word-x1", "second-Pa55word-y2"
    sasl = SaslServerDouble({"ops": old}, mechanisms=("SCRAM-SHA-512",))
    async with FakeClusterDouble(brokers=1, sasl=sasl) as fake:
        secrets = {("team", "kafka-creds"): {"username": b"ops", "password": old.encode()}}
        catalog, writer = CatalogDouble(), StatusWriterDouble()
        reconciler = operator(catalog, writer, SecretReaderDouble(secrets))
        cluster = cluster_body(fake.bootstrap, sasl={"mechanism": "SCRAM-SHA-512",
                                                      "credentialsSecretRef": {"name": "kafka-creds"}})
        await connect(reconciler, cluster)
        context = reconciler.clusters.contexts()[0]
        assert context.state is Connection.READY, context.problem
        # the broker takes the new password only, then the Secret follows; the operator's open
        # connection stays authenticated until it drops
        sasl.set_password("ops", new)
        secrets[("team", "kafka-creds")] = {"username": b"ops", "password": new.encode()}
        fake.inject(FaultDouble.drop_connection(after_apply=False))
        topic = catalog.add(topic_body("after-rotation"))
        first = await reconciler.reconcile(topic)
        for _ in range(200):  # the probe re-reads the Secret and reconnects
            if context.state is Connection.READY:
                break
            await asyncio.sleep(0.05)
        assert context.state is Connection.READY, (context.state, context.problem)
        result = first if condition(first, "Ready")["status"] == "True" else await reconciler.reconcile(topic)
        assert condition(result, "Ready")["status"] == "True", result.status
        assert "after-rotation" in fake.state.topics
        statuses = repr(writer.written) + repr(result.status) + repr(context.problem)
        assert old not in statuses and new not in statuses
        await reconciler.close()


async def test_a_cluster_status_the_api_refused_is_written_later() -> None:
    """Soak: the KafkaCluster's status write after a state change was refused (injected 409, 500)
    and never tried again: the state it reports may not change for hours."""
    async with FakeClusterDouble(brokers=1) as fake:
        catalog, writer = CatalogDouble(), StatusWriterDouble()
        reconciler = operator(catalog, writer)
        await connect(reconciler, cluster_body(fake.bootstrap))
        context = reconciler.clusters.contexts()[0]
        writer.refuse = True
        reconciler.clusters.mark_down(context, ConnectionError("dropped"))  # down, then up again
        for _ in range(100):
            if context.state is Connection.READY and context.reported is None:
                break
            await asyncio.sleep(0.05)
        assert context.reported is None, "the refused report is pending"
        writer.written.clear()
        writer.refuse = False
        for _ in range(100):
            if writer.cluster_status().get("conditions"):
                break
            await asyncio.sleep(0.05)
        assert condition(writer.cluster_status(), "Ready")["status"] == "True", writer.written
        await reconciler.close()


class ReassignmentsRefusedDouble:
    """The cluster's reassignment manager when the broker refuses the login at planning time."""

    def __init__(self, real: Any) -> None:
        self.real = real

    async def plan(self, steps: Any) -> Any:
        from kafkaops.reconcile import Problem

        return {}, {key: Problem("AuthenticationFailed", "preparing the partition reassignment: SASL refused")
                    for key, _ in steps}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


async def test_a_login_refused_while_planning_a_replica_change_waits_for_the_cluster() -> None:
    """Soak: the refusal came while the reassignment was being prepared; the topic went Stalled
    (AuthenticationFailed is not retriable by itself) and stayed so after the cluster came back."""
    async with FakeClusterDouble(brokers=3) as fake:
        catalog, writer = CatalogDouble(), StatusWriterDouble()
        reconciler = operator(catalog, writer)
        await connect(reconciler, cluster_body(fake.bootstrap))
        topic = catalog.add(topic_body("grow-rf", 1, 1))
        assert condition(await reconciler.reconcile(topic), "Ready")["status"] == "True"
        context = reconciler.clusters.contexts()[0]
        context.reassignments = ReassignmentsRefusedDouble(context.reassignments)
        topic["spec"]["replicationFactor"], topic["metadata"]["generation"] = 2, 2
        result = await reconciler.reconcile(topic)
        assert condition(result, "Stalled")["status"] == "False", result.status
        assert condition(result, "Reconciling")["reason"] == "ClusterNotReady" and result.waits_for == ("team", "main")
        await reconciler.close()


class GuardedSecretsDouble(SecretReaderDouble):
    """Secrets with the credentials-in-use finalizer: which ones it was taken off."""

    def __init__(self, secrets: dict) -> None:
        super().__init__(secrets)
        self.protected: set[tuple[str, str]] = set()
        self.released: list[tuple[str, str]] = []

    async def protect_secret(self, namespace: str, name: str) -> bool:
        self.protected.add((namespace, name))
        return True

    async def release_secret(self, namespace: str, name: str) -> bool:
        self.released.append((namespace, name))
        self.protected.discard((namespace, name))
        return True


async def test_a_secret_shared_by_a_kafka_cluster_and_a_kafka_user_stays_protected() -> None:
    """The operator's own KafkaUser often names the Secret its KafkaCluster logs in with: deleting
    the user must not take the finalizer off while the cluster still connects with it (and the
    other way round)."""
    from kafkaops.k8s.principals import release_user_secret

    password = "shared-Pa55word-z9"
    sasl = SaslServerDouble({"ops": password}, mechanisms=("SCRAM-SHA-512",))
    async with FakeClusterDouble(brokers=1, sasl=sasl) as fake:
        reader = GuardedSecretsDouble({("team", "shared"): {"username": b"ops", "password": password.encode()}})
        catalog, writer = CatalogDouble(), StatusWriterDouble()
        reconciler = operator(catalog, writer, reader)
        await connect(reconciler, cluster_body(fake.bootstrap, sasl={
            "mechanism": "SCRAM-SHA-512", "credentialsSecretRef": {"name": "shared"}}))
        assert ("team", "shared") in reader.protected
        user = {"kind": "KafkaUser", "metadata": {"name": "ops", "namespace": "team", "uid": "u-1"},
                "spec": {"clusterRef": {"name": "main"}, "authentication": {
                    "type": "scram-sha-512", "passwordSecretRef": {"name": "shared"}}}}
        await release_user_secret(reader, user, [], keep=reconciler.clusters.secrets_in_use("team"))
        assert reader.released == [], "the KafkaCluster still logs in with it"
        await reconciler.close()


async def topic_configs(bootstrap: str, topic: str) -> dict[str, str]:
    from kafkaops.kafka.models import ConfigResource

    async with AdminClient.connect(bootstrap) as admin:
        described = await admin.describe_configs([ConfigResource.topic(topic)])
    return {k: e.value for k, e in described[ConfigResource.topic(topic)].value.items() if not e.is_default}


async def test_a_config_key_set_before_a_kill_is_still_ours_when_the_spec_drops_it() -> None:
    """The soak's random seed 507317: `retention.ms` added by an edit, the operator killed after
    Kafka took it and before the status recorded it as ours; the next edit dropped it from the
    spec and the next process left it set in Kafka. The key is now recorded before it is set."""
    async with FakeClusterDouble(brokers=1) as fake:
        catalog, writer = CatalogDouble(), StatusWriterDouble()
        cluster = cluster_body(fake.bootstrap)
        first = operator(catalog, writer)
        await connect(first, cluster)
        topic = catalog.add(topic_body("orders"))
        created = await first.reconcile(topic)
        assert condition(created, "Ready")["status"] == "True" and created.status.get("managedConfigKeys", []) == []
        edited = {**topic, "metadata": {**topic["metadata"], "generation": 2}, "status": created.status,
                  "spec": {**topic["spec"], "config": {"retention.ms": "3600000"}}}
        await first.reconcile(edited)  # applied; the process dies before kopf writes this result
        await first.close()
        assert (await topic_configs(fake.bootstrap, "orders")).get("retention.ms") == "3600000"
        in_api = {**created.status}
        for plural, _ns, name, status in writer.written:  # what reached the API before the kill
            if plural == "kafkatopics" and name == "orders":
                in_api.update(status)
        assert in_api.get("managedConfigKeys") == ["retention.ms"], "recorded before it was set"

        dropped = {**edited, "metadata": {**edited["metadata"], "generation": 3}, "status": in_api,
                   "spec": {k: v for k, v in edited["spec"].items() if k != "config"}}
        second = operator(CatalogDouble(), writer)
        second.catalog.add(cluster)
        await connect(second, cluster)
        second.catalog.add(dropped)
        result = await second.reconcile(dropped)
        assert condition(result, "Ready")["status"] == "True"
        assert "retention.ms" not in await topic_configs(fake.bootstrap, "orders"), "an owned key the spec dropped is reset"
        await second.close()
