"""The operator's decisions without Kubernetes: bodies in, status/events/retries out, against the
fake cluster double (ACLs, brokers) and noida-db. kopf wiring is tested end to end elsewhere."""

from __future__ import annotations

import asyncio
import copy
from dataclasses import replace

import pytest

from kafkaops.k8s.context import Clusters, OperatorSettings
from kafkaops.k8s.elections import maybe_elect_leaders
from kafkaops.k8s.kinds import ClaimKey, claim_key, claim_of
from kafkaops.k8s.metrics import Metrics
from kafkaops.k8s.reconciler import THROTTLE_RECORD, Reconciler
from kafkaops.k8s.topic_status import topic_fields
from kafkaops.kafka import AclBindingFilter, AdminClient, AlterConfigOp, ConfigResource, ConfigSource, NewPartitions, NewTopic
from kafkaops.kafka.apis import Api
from kafkaops.reconcile.actions import CreatePartitions, StepResult, StepState
from kafkaops.reconcile.observed import ObservedTopic
from kafkaops.reconcile.outcome import Outcome, State
from kafkaops.resources.documents import Source
from kafkaops.resources.models import ClusterRef, KafkaTopic
from kafkaops.testing.fake_cluster import FakeClusterDouble

from k8s_helpers import CatalogDouble, SecretReaderDouble, body, cluster_body, condition, connect, topic_body


@pytest.fixture
async def fake():
    async with FakeClusterDouble(brokers=3, acls_enabled=True) as cluster:
        yield cluster


@pytest.fixture
async def reconciler(fake):
    clusters = Clusters(SecretReaderDouble(), OperatorSettings(client_overrides={"linger": 0.01, "wait_poll_min": 0.01},
                                                               retry_delay=1.0, metrics_port=None))
    reconciler = Reconciler(clusters, CatalogDouble(), Metrics())
    result = await connect(reconciler, cluster_body(fake.bootstrap, topicDeletion={"policy": "Delete",
                                                                                          "maxDeletionsPerReconcile": 2}))
    assert condition(result, "Ready")["status"] == "True", result.status
    assert result.status["clusterId"] and len(result.status["brokers"]) == 3 and "CreateTopics" in result.status["features"]["adminApis"]
    yield reconciler
    await clusters.close_all()


async def test_topic_becomes_ready_with_kstatus_fields(reconciler, fake) -> None:
    topic = topic_body("orders", 3, 2, {"retention.ms": 3600000})
    result = await reconciler.reconcile(topic)
    assert condition(result, "Ready") | {} and condition(result, "Ready")["status"] == "True"
    assert condition(result, "Reconciling")["status"] == "False" and condition(result, "Stalled")["status"] == "False"
    assert result.status["observedGeneration"] == 1 and result.retry_after is None
    assert result.status["partitions"] == 3 and result.status["replicationFactor"] == 2 and result.status["topicId"]
    assert result.status["managedConfigKeys"] == ["retention.ms"]
    assert result.event is not None and result.event.reason == "Applied"
    topic["status"] = result.status
    again = await reconciler.reconcile(topic)
    assert again.status is None and again.event is None, "nothing changed: nothing to write"


async def test_invalid_spec_is_stalled_with_the_field_path(reconciler) -> None:
    result = await reconciler.reconcile(topic_body("bad", config={"retention.msx": 5}))
    stalled = condition(result, "Stalled")
    assert stalled["status"] == "True" and "spec.config.retention.msx" in stalled["message"]
    assert result.retry_after is None and condition(result, "Ready")["status"] == "False"


async def test_partition_decrease_is_stalled_and_changes_nothing(reconciler, fake) -> None:
    topic = topic_body("shrink", 4)
    await reconciler.reconcile(topic)
    topic["spec"]["partitions"] = 2
    topic["metadata"]["generation"] = 2
    result = await reconciler.reconcile(topic)
    assert condition(result, "Stalled")["reason"] == "PartitionDecrease" and result.status["observedGeneration"] == 2
    async with AdminClient.connect(fake.bootstrap) as admin:
        assert len((await admin.describe_topics(["shrink"]))["shrink"].value.partitions) == 4


async def test_second_claimant_of_a_topic_is_stalled_and_the_first_keeps_working(reconciler) -> None:
    first = topic_body("shared", created="2026-01-01T00:00:00Z")
    second = topic_body("shared", namespace="other", created="2026-01-02T00:00:00Z")
    second["spec"]["clusterRef"] = {"name": "main", "namespace": "team"}
    claims = [claim_of(first), claim_of(second)]
    assert condition(await reconciler.reconcile(first, claims), "Ready")["status"] == "True"
    lost = await reconciler.reconcile(second, claims)
    assert condition(lost, "Stalled")["reason"] == "ResourceConflict"
    assert condition(lost, "Stalled")["message"] == "topic shared is already managed by KafkaTopic team/shared"
    assert condition(await reconciler.reconcile(first, claims), "Ready")["status"] == "True"  # no flapping
    removed = await reconciler.remove(second, claims)
    assert removed.release  # the loser never managed the topic: deleting it touches nothing


async def test_paused_and_unmanaged_touch_nothing(reconciler, fake) -> None:
    paused = topic_body("paused")
    paused["metadata"]["annotations"] = {"kafkaops.io/paused": "true"}
    result = await reconciler.reconcile(paused)
    assert condition(result, "Ready")["reason"] == "Paused"
    unmanaged = topic_body("unmanaged")
    unmanaged["metadata"]["annotations"] = {"kafkaops.io/managed": "false"}
    assert condition(await reconciler.reconcile(unmanaged), "Ready")["reason"] == "Unmanaged"
    assert (await reconciler.remove(unmanaged)).release
    async with AdminClient.connect(fake.bootstrap) as admin:
        assert set((await admin.metadata(None)).topics).isdisjoint({"paused", "unmanaged"})


async def test_missing_cluster_keeps_reconciling_with_backoff(reconciler) -> None:
    topic = topic_body("orphan")
    topic["spec"]["clusterRef"] = {"name": "nowhere"}
    result = await reconciler.reconcile(topic)
    assert condition(result, "Reconciling")["reason"] == "ClusterNotFound" and result.event is None
    assert result.retry_after is None and result.waits_for == ("team", "nowhere"), "parked, not retried on a timer"
    assert condition(result, "Stalled")["status"] == "False"


async def test_deletion_policies_and_the_cap_across_resources(reconciler, fake) -> None:
    retained = topic_body("kept")
    retained["spec"]["deletionPolicy"] = "Retain"
    doomed = [topic_body(f"doomed-{i}") for i in range(3)]
    for item in (retained, *doomed):
        await reconciler.reconcile(item)
    assert (await reconciler.remove(retained)).release
    results = [await reconciler.remove(item) for item in doomed]
    assert [r.release for r in results] == [True, True, False], [(r.message, r.status) for r in results]  # cap 2 per window
    assert condition(results[2], "Reconciling")["reason"] == "DeletionCapExceeded"
    assert reconciler.confirm_deletions(cluster_body(fake.bootstrap))
    assert (await reconciler.remove(doomed[2])).release
    async with AdminClient.connect(fake.bootstrap) as admin:
        assert {"kept"} <= set((await admin.metadata(None)).topics)
        assert not {"doomed-0", "doomed-1", "doomed-2"} & set((await admin.metadata(None)).topics)


async def test_acl_owns_its_principal_and_delete_policy_removes_bindings(reconciler, fake) -> None:
    acl = body("KafkaAcl", "svc", {"clusterRef": {"name": "main"}, "principal": "User:svc",
                                   "acls": [{"resource": {"type": "Topic", "name": "orders"}, "operations": ["Read"]}]})
    assert condition(await reconciler.reconcile(acl), "Ready")["status"] == "True"
    assert (await reconciler.remove(acl)).release
    async with AdminClient.connect(fake.bootstrap) as admin:
        assert await admin.describe_acls(AclBindingFilter(principal="User:svc")) == ()


async def test_resync_restores_drift_and_reports_it(reconciler, fake) -> None:
    topic = topic_body("drifty", config={"retention.ms": 3600000})
    topic["status"] = (await reconciler.reconcile(topic)).status
    async with AdminClient.connect(fake.bootstrap) as admin:
        await admin.incremental_alter_configs({ConfigResource.topic("drifty"): [AlterConfigOp("retention.ms", "1")]})
        context = reconciler.clusters.contexts()[0]
        changed = await reconciler.resync(context, [topic], {})
        assert len(changed) == 1
        drifted_body, result = changed[0]
        drifted = condition(result, "Drifted")
        assert drifted["status"] == "True" and "config.retention.ms: 1 -> 3600000" in drifted["message"]
        assert result.event.reason == "DriftRestored"
        entry = (await admin.describe_configs([ConfigResource.topic("drifty")]))[ConfigResource.topic("drifty")].value
        assert entry["retention.ms"].value == "3600000" and entry["retention.ms"].source is ConfigSource.DYNAMIC_TOPIC_CONFIG
        topic["status"] = result.status
        cleared = await reconciler.resync(context, [topic], {})
        assert condition(cleared[0][1], "Drifted")["status"] == "False"
        assert await reconciler.resync(context, [dict(topic, status=cleared[0][1].status)], {}) == []


async def test_ownership_survives_a_restart_through_status(reconciler, fake) -> None:
    topic = topic_body("owned", config={"retention.ms": 3600000, "segment.ms": 7200000})
    topic["status"] = (await reconciler.reconcile(topic)).status
    fresh = Reconciler(Clusters(SecretReaderDouble(), reconciler.clusters.settings), CatalogDouble(), Metrics())  # a restarted operator
    await connect(fresh, cluster_body(fake.bootstrap))
    try:
        changed = copy.deepcopy(topic)
        del changed["spec"]["config"]["segment.ms"]
        result = await fresh.reconcile(changed)
        assert result.status["managedConfigKeys"] == ["retention.ms"]
        async with AdminClient.connect(fake.bootstrap) as admin:
            entries = (await admin.describe_configs([ConfigResource.topic("owned")]))[ConfigResource.topic("owned")].value
            assert entries["segment.ms"].source is not ConfigSource.DYNAMIC_TOPIC_CONFIG  # reset: it was ours
    finally:
        await fresh.clusters.close_all()


async def test_unreachable_cluster_and_bad_credentials_are_clear_and_never_leak(fake) -> None:
    secret = "s3cr3t-password-value"
    reader = SecretReaderDouble({("team", "creds"): {"username": b"admin", "password": secret.encode()}})
    clusters = Clusters(reader, OperatorSettings(client_overrides={"connect_attempts": 1, "connect_timeout": 0.5,
                                                                   "retry_attempts": 1, "request_timeout": 2.0},
                                                 retry_delay=1.0, metrics_port=None))
    reconciler = Reconciler(clusters, CatalogDouble(), Metrics())
    try:
        down = await connect(reconciler, cluster_body("127.0.0.1:1"))
        assert condition(down, "Reconciling")["reason"] == "ClusterUnreachable" and down.retry_after is None
        missing = await connect(reconciler, cluster_body(fake.bootstrap, sasl={
            "mechanism": "SCRAM-SHA-512", "credentialsSecretRef": {"name": "absent"}}))
        assert condition(missing, "Ready")["reason"] == "CredentialsInvalid" and "team/absent" in condition(missing, "Ready")["message"]
        refused = await connect(reconciler, cluster_body(fake.bootstrap, sasl={
            "mechanism": "SCRAM-SHA-512", "credentialsSecretRef": {"name": "creds"}}))
        assert condition(refused, "Ready")["status"] == "False"
        assert secret not in repr(refused) and secret not in repr(missing)
    finally:
        await clusters.close_all()


async def test_a_secret_the_operator_may_not_read_says_how_to_grant_it(fake) -> None:
    reader = SecretReaderDouble(forbidden={("team", "creds")})
    clusters = Clusters(reader, OperatorSettings(metrics_port=None, cluster_wait=5.0))
    reconciler = Reconciler(clusters, CatalogDouble(), Metrics())
    try:
        result = await connect(reconciler, cluster_body(fake.bootstrap, sasl={
            "mechanism": "SCRAM-SHA-512", "credentialsSecretRef": {"name": "creds"}}))
        ready = condition(result, "Ready")
        assert ready["reason"] == "CredentialsInvalid" and "may not read Secret team/creds" in ready["message"]
        assert "manifests/secrets-access" in ready["message"]
    finally:
        await clusters.close_all()


async def test_a_deletion_never_applied_goes_when_its_cluster_being_deleted_cannot_log_in(fake) -> None:
    """A Namespace deleted while no operator ran, before its KafkaCluster had first connected: the
    credentials Secret went at once (nothing had put the credentials-in-use finalizer on it). A
    resource never applied is released without touching Kafka; one applied before still waits,
    and so does a never-applied one whose cluster is not being deleted (its Secret can come back)."""
    clusters = Clusters(SecretReaderDouble(), OperatorSettings(metrics_port=None, cluster_wait=5.0))
    reconciler = Reconciler(clusters, CatalogDouble(), Metrics())
    sasl = {"mechanism": "SCRAM-SHA-512", "credentialsSecretRef": {"name": "creds"}}
    async with AdminClient.connect(fake.bootstrap) as admin:  # a topic of that name in Kafka: left alone
        assert not (await admin.create_topics([NewTopic("never", 1, 1)])).failed()
    try:
        live = await connect(reconciler, cluster_body(fake.bootstrap, topicDeletion={"policy": "Delete"}, sasl=sasl))
        assert condition(live, "Ready")["reason"] == "CredentialsInvalid"
        never, applied = topic_body("never", deletionTimestamp="2026-01-02T00:00:00Z"), \
            topic_body("applied", deletionTimestamp="2026-01-02T00:00:00Z")
        applied["status"] = {"claimed": True, "partitions": 1, "topicId": "AAAAAAAAAAAAAAAAAAAAAA"}
        kept = await reconciler.remove(never)
        assert not kept.release and "cannot delete in Kafka yet" in condition(kept, "Reconciling")["message"]

        doomed = cluster_body(fake.bootstrap, topicDeletion={"policy": "Delete"}, sasl=sasl,
                              ) | {"metadata": {**live_metadata(reconciler), "deletionTimestamp": "2026-01-02T00:00:00Z"}}
        reconciler.catalog.add(doomed)
        released = await reconciler.remove(never)
        assert released.release and released.event is not None and released.event.type == "Warning"
        assert released.event.reason == "ReleasedUnapplied"
        assert "KafkaCluster team/main is being deleted and cannot log in" in released.event.message
        assert "Secret team/creds not found" in released.event.message
        waits = await reconciler.remove(applied)
        assert not waits.release and "annotate kafkaops.io/managed=false" in condition(waits, "Reconciling")["message"]
        async with AdminClient.connect(fake.bootstrap) as admin:
            assert "never" in (await admin.metadata(None)).topics, "released without touching Kafka"
    finally:
        await clusters.close_all()


async def test_a_deletion_never_applied_goes_when_its_cluster_being_deleted_never_connected() -> None:
    """A mistyped bootstrap address: the KafkaCluster never connected (no status.clusterId). Being
    deleted, it will not: a never-applied resource goes without touching Kafka. One that did
    connect once (its status has a clusterId) may again: the resource waits for it."""
    clusters = Clusters(SecretReaderDouble(), OperatorSettings(
        client_overrides={"connect_attempts": 1, "connect_timeout": 0.5, "retry_attempts": 1},
        metrics_port=None, cluster_wait=5.0))
    reconciler = Reconciler(clusters, CatalogDouble(), Metrics())
    try:
        down = await connect(reconciler, cluster_body("127.0.0.1:1", topicDeletion={"policy": "Delete"}))
        assert condition(down, "Reconciling")["reason"] == "ClusterUnreachable"
        doomed = {**cluster_body("127.0.0.1:1", topicDeletion={"policy": "Delete"}),
                  "metadata": {**live_metadata(reconciler), "deletionTimestamp": "2026-01-02T00:00:00Z"}}
        reconciler.catalog.add(doomed)
        released = await reconciler.remove(topic_body("never", deletionTimestamp="2026-01-02T00:00:00Z"))
        assert released.release and released.event is not None and released.event.reason == "ReleasedUnapplied"
        assert "KafkaCluster team/main is being deleted and has never connected (ClusterUnreachable" \
            in released.event.message

        reconciler.catalog.add({**doomed, "status": {"clusterId": "once-seen"}})
        waits = await reconciler.remove(topic_body("never-either", deletionTimestamp="2026-01-02T00:00:00Z"))
        assert not waits.release and "cannot delete in Kafka yet" in condition(waits, "Reconciling")["message"]
    finally:
        await clusters.close_all()


def live_metadata(reconciler: Reconciler) -> dict:
    return dict(reconciler.catalog.clusters[("team", "main")]["metadata"])


async def test_cross_namespace_use_needs_the_cluster_to_allow_it(fake) -> None:
    clusters = Clusters(SecretReaderDouble(), OperatorSettings(client_overrides={"linger": 0.01, "wait_poll_min": 0.01},
                                                               metrics_port=None))
    reconciler = Reconciler(clusters, CatalogDouble(), Metrics())
    try:
        await connect(reconciler, cluster_body(fake.bootstrap, allowedNamespaces=[
            {"namespace": "orders", "topicPrefixes": ["orders."]}]))
        def foreign(name: str, namespace: str) -> dict:
            body = topic_body(name, namespace=namespace)
            body["spec"]["clusterRef"] = {"name": "main", "namespace": "team"}
            return body
        allowed = await reconciler.reconcile(foreign("orders.events", "orders"))
        assert condition(allowed, "Ready")["status"] == "True"
        prefix = await reconciler.reconcile(foreign("payments.events", "orders"))
        assert condition(prefix, "Stalled")["reason"] == "NamespaceNotAllowed" and "orders." in condition(prefix, "Stalled")["message"]
        stranger = await reconciler.reconcile(foreign("orders.x", "payments"))
        assert condition(stranger, "Stalled")["reason"] == "NamespaceNotAllowed"
        async with AdminClient.connect(fake.bootstrap) as admin:
            topics = set((await admin.metadata(None)).topics)
        assert "orders.events" in topics and not {"payments.events", "orders.x"} & topics
    finally:
        await clusters.close_all()


def test_metrics_are_exposed_in_prometheus_format() -> None:
    from prometheus_client import generate_latest

    metrics = Metrics()
    metrics.record("KafkaTopic", "applied", "Applied", 0.2)
    metrics.record_requests("main", {"CreateTopics": 3})
    metrics.record_requests("main", {"CreateTopics": 5})
    text = generate_latest(metrics.registry).decode()
    assert 'kafkaops_reconciles_total{kind="KafkaTopic",outcome="applied",reason="Applied"} 1.0' in text
    assert 'kafkaops_admin_requests_total{api="CreateTopics",cluster="main"} 5.0' in text
    assert "kafkaops_reconcile_duration_seconds_bucket" in text


# --- replica changes in the background ------------------------------------------------------------------


async def reconcile_until(reconciler, body, done, rounds: int = 200):
    """Call reconcile like kopf's retries would (status written back each time) until `done`."""
    seen = []
    for _ in range(rounds):
        result = await reconciler.reconcile(body)
        body["status"] = {**(body.get("status") or {}), **(result.status or {})}
        result = replace(result, status=body["status"])  # what the API holds after the write
        seen.append(result)
        if done(result):
            return seen
        await asyncio.sleep(0.02)
    raise AssertionError(f"not done after {rounds} rounds: {seen[-1].status}")


async def test_replication_factor_change_runs_in_the_background_with_progress_in_status(reconciler, fake) -> None:
    writes = []

    async def writer(plural, namespace, name, status):
        writes.append((plural, name, dict(status)))
    reconciler.status_writer = writer
    reconciler.clusters.contexts()[0].model = replace_throttle(reconciler.clusters.contexts()[0].model, 5_000_000)
    topic = topic_body("grow", 4, 1)
    topic["status"] = (await reconciler.reconcile(topic)).status
    for p in range(4):
        fake.set_partition_size("grow", 32 * 1024 * 1024, partition=p)
    topic["spec"]["replicationFactor"] = 3
    topic["metadata"]["generation"] = 2
    seen = await reconcile_until(reconciler, topic, lambda r: condition(r, "Ready")["status"] == "True")
    moving = [r for r in seen if condition(r, "Reconciling").get("reason") == "Reassigning"]
    assert moving and all(r.retry_after for r in moving) and condition(moving[0], "Stalled")["status"] == "False"
    assert any(0 < r.status["reassignment"].get("partitionsDone", 0) < 4 for r in moving) or len(moving) > 1
    assert "partitions moved" in condition(moving[-1], "Reconciling")["message"]
    final = seen[-1].status
    assert final["reassignment"]["state"] == "done" and final["replicationFactor"] == 3
    assert [w for w in writes if w[2].get(THROTTLE_RECORD)], "the throttle record is written ahead"
    assert writes[-1][2][THROTTLE_RECORD] is None  # and cleared once the throttle is gone
    async with AdminClient.connect(fake.bootstrap) as admin:
        info = (await admin.describe_topics(["grow"]))["grow"].value
        assert all(len(set(p.replicas)) == 3 for p in info.partitions)
        configs = (await admin.describe_configs([ConfigResource.topic("grow")]))[ConfigResource.topic("grow")].value
        assert configs["leader.replication.throttled.replicas"].source is not ConfigSource.DYNAMIC_TOPIC_CONFIG


async def test_reverting_the_spec_cancels_the_moves_still_in_flight(reconciler, fake) -> None:
    topic = topic_body("revert", 2, 1)
    topic["status"] = (await reconciler.reconcile(topic)).status
    async with AdminClient.connect(fake.bootstrap) as admin:
        before = [p.replicas for p in (await admin.describe_topics(["revert"]))["revert"].value.partitions]
    for p in range(2):
        fake.set_partition_size("revert", 10 * 1024 * 1024 * 1024, partition=p)  # far too big to finish
    topic["spec"]["replicationFactor"] = 3
    first = await reconciler.reconcile(topic)
    assert condition(first, "Reconciling")["reason"] == "Reassigning"
    topic["spec"]["replicationFactor"] = 1  # revert while moving
    seen = await reconcile_until(reconciler, topic, lambda r: condition(r, "Ready")["status"] == "True")
    assert any("cancelling" in condition(r, "Reconciling").get("message", "") for r in seen)
    async with AdminClient.connect(fake.bootstrap) as admin:
        after = [p.replicas for p in (await admin.describe_topics(["revert"]))["revert"].value.partitions]
        assert after == before and await admin.list_partition_reassignments() == {}


async def test_a_throttle_left_by_a_dead_operator_is_removed(reconciler, fake) -> None:
    from kafkaops.kafka import AlterOp
    from kafkaops.reconcile.reassign import ThrottleRecord

    topic = topic_body("leftover", 1, 1)
    topic["status"] = (await reconciler.reconcile(topic)).status
    record = ThrottleRecord(5_000_000, (1,), {"leftover": ("0:1",)}, {"leftover": ("0:2",)})
    async with AdminClient.connect(fake.bootstrap) as admin:
        await admin.incremental_alter_configs({
            ConfigResource.topic("leftover"): [AlterConfigOp("leader.replication.throttled.replicas", "0:1"),
                                               AlterConfigOp("follower.replication.throttled.replicas", "0:2")],
            ConfigResource.broker(1): [AlterConfigOp("leader.replication.throttled.rate", "5000000", AlterOp.SET),
                                       AlterConfigOp("follower.replication.throttled.rate", "5000000", AlterOp.SET)]})
        topic["status"][THROTTLE_RECORD] = record.to_entry()
        fresh = Reconciler(Clusters(SecretReaderDouble(), reconciler.clusters.settings), CatalogDouble(), Metrics())
        await connect(fresh, cluster_body(fake.bootstrap))
        try:
            result = await fresh.reconcile(topic)
            assert condition(result.status or topic["status"], "Ready")["status"] == "True"
            configs = await admin.describe_configs([ConfigResource.topic("leftover"), ConfigResource.broker(1)])
            dynamic = {k for r in configs.values() for k, e in r.value.items()
                       if e.source in (ConfigSource.DYNAMIC_TOPIC_CONFIG, ConfigSource.DYNAMIC_BROKER_CONFIG)}
            assert not {k for k in dynamic if "throttled" in k}, dynamic
        finally:
            await fresh.clusters.close_all()


def replace_throttle(model, rate):
    from dataclasses import replace

    return replace(model, spec=replace(model.spec, replication_throttle=rate))


async def test_periodic_preferred_leader_election(fake) -> None:
    clusters = Clusters(SecretReaderDouble(), OperatorSettings(metrics_port=None))
    reconciler = Reconciler(clusters, CatalogDouble(), Metrics())
    try:
        await connect(reconciler, cluster_body(fake.bootstrap, preferredLeaderElectionInterval="10m"))
        context = clusters.contexts()[0]
        async with AdminClient.connect(fake.bootstrap) as admin:
            from kafkaops.kafka import NewTopic

            await admin.create_topics([NewTopic("lead", 6, 3)])
            await fake.stop_broker(1)
            await fake.start_broker(1)  # leadership stays away from broker 1
            note = await maybe_elect_leaders(context, now=10_000.0)
            assert note is not None and note.reason == "LeadersElected" and "moved back" in note.message
            meta = await admin.metadata(["lead"])
            assert all(p.leader == p.replicas[0] for p in meta.topics["lead"].partitions)
            assert await maybe_elect_leaders(context, now=10_001.0) is None  # not due yet
            assert await maybe_elect_leaders(context, now=10_000.0 + 601) is None  # due: nothing to do
    finally:
        await clusters.close_all()


async def test_an_operator_restarted_mid_reassignment_resumes_it_and_cleans_the_throttle(reconciler, fake) -> None:
    written = {}

    async def writer(plural, namespace, name, status):
        written.update(status)
    reconciler.status_writer = writer
    reconciler.clusters.contexts()[0].model = replace_throttle(reconciler.clusters.contexts()[0].model, 5_000_000)
    topic = topic_body("resume", 3, 1)
    topic["status"] = (await reconciler.reconcile(topic)).status
    for p in range(3):
        fake.set_partition_size("resume", 256 * 1024 * 1024, partition=p)
    topic["spec"]["replicationFactor"] = 2
    started = await reconciler.reconcile(topic)
    topic["status"] = {**topic["status"], **started.status}
    for _ in range(100):  # until the throttle record is written ahead
        if written.get(THROTTLE_RECORD):
            break
        await asyncio.sleep(0.02)
    topic["status"][THROTTLE_RECORD] = written[THROTTLE_RECORD]
    context = reconciler.clusters.contexts()[0]
    async with AdminClient.connect(fake.bootstrap) as admin:
        for _ in range(100):  # until partitions are moving
            if await admin.list_partition_reassignments():
                break
            await asyncio.sleep(0.02)
        context.reassignments.active("resume").run.task.cancel()  # the operator dies: Kafka keeps moving, the throttle stays
        await asyncio.sleep(0.05)
        assert await admin.list_partition_reassignments()  # still moving without us

        fresh = Reconciler(Clusters(SecretReaderDouble(), reconciler.clusters.settings), CatalogDouble(), Metrics(), status_writer=writer)
        await connect(fresh, cluster_body(fake.bootstrap, replicationThrottle=5_000_000))
        try:
            await reconcile_until(fresh, topic, lambda r: condition(r, "Ready")["status"] == "True")
            info = (await admin.describe_topics(["resume"]))["resume"].value
            assert all(len(set(p.replicas)) == 2 for p in info.partitions)
            configs = await admin.describe_configs([ConfigResource.topic("resume")] +
                                                   [ConfigResource.broker(b) for b in (1, 2, 3)])
            left = {k for r in configs.values() for k, e in r.value.items() if "throttled" in k and
                    e.source in (ConfigSource.DYNAMIC_TOPIC_CONFIG, ConfigSource.DYNAMIC_BROKER_CONFIG)}
            assert not left, left
            assert written[THROTTLE_RECORD] is None
        finally:
            await fresh.clusters.close_all()


async def test_a_reassignment_started_outside_kafkaops_is_reported_not_fought(reconciler, fake) -> None:
    from kafkaops.kafka import TopicPartition

    topic = topic_body("outside", 2, 1)
    topic["status"] = (await reconciler.reconcile(topic)).status
    for p in range(2):
        fake.set_partition_size("outside", 50 * 1024 * 1024 * 1024, partition=p)  # stays in flight
    async with AdminClient.connect(fake.bootstrap) as admin:
        current = (await admin.describe_topics(["outside"]))["outside"].value.partitions[0].replicas
        elsewhere = next(b for b in (1, 2, 3) if b not in current)
        await admin.alter_partition_reassignments({TopicPartition("outside", 0): [elsewhere]})  # someone else
        topic["spec"]["replicationFactor"] = 2
        seen = await reconcile_until(reconciler, topic,
                                     lambda r: "outside kafkaops" in condition(r, "Reconciling").get("message", ""))
        message = condition(seen[-1], "Reconciling")["message"]
        assert "left alone (outside-0)" in message and condition(seen[-1], "Stalled")["status"] == "False"
        moving = await admin.list_partition_reassignments()
        assert moving[TopicPartition("outside", 0)].adding == (elsewhere,)  # its target, not ours
        assert reconciler.clusters.contexts()[0].reassignments.revert("outside")  # stop ours; theirs goes on
        await reconciler.clusters.contexts()[0].reassignments.active("outside").run.wait()


@pytest.mark.parametrize("create_topics_version", [7, 6])
async def test_topic_status_costs_no_metadata_read_of_its_own(create_topics_version) -> None:
    """The status's topic id, partitions and replication factor are the ones Kafka holds, from any
    CreateTopics version, and come from what the reconcile has already read: CreateTopics' answer
    (v7+; before v7 it has no id) or the completion poll that found the new topic led, the poll
    that found added partitions led, the plan's read for a config edit. Metadata per
    reconcile: the plan's read and, after a create or new partitions, one completion poll (at 10,000
    new topics the status's own reads were a third of the operator's Metadata requests)."""
    async with FakeClusterDouble(brokers=3, max_versions={Api.CREATE_TOPICS: create_topics_version}) as cluster:
        clusters = Clusters(SecretReaderDouble(), OperatorSettings(client_overrides={"linger": 0.01, "wait_poll_min": 0.01},
                                                                   retry_delay=1.0, metrics_port=None))
        reconciler = Reconciler(clusters, CatalogDouble(), Metrics())
        try:
            await connect(reconciler, cluster_body(cluster.bootstrap))
            requests = clusters.contexts()[0].engine.batcher.admin.requests_by_api

            async def metadata_sent_by(topic: dict) -> tuple[dict, int]:
                before = requests.get("Metadata", 0)
                result = await reconciler.reconcile(topic)
                assert condition(result, "Ready")["status"] == "True", result.status
                return result.status, requests.get("Metadata", 0) - before

            topic = topic_body("orders", 3, 2)
            created, created_reads = await metadata_sent_by(topic)
            topic["status"] = created
            topic["spec"]["config"] = {"retention.ms": 60000}
            topic["metadata"]["generation"] = 2
            edited, edited_reads = await metadata_sent_by(topic)
            topic["status"] = {**created, **edited}
            topic["spec"]["partitions"] = 5
            topic["metadata"]["generation"] = 3
            grown, grown_reads = await metadata_sent_by(topic)
            async with AdminClient.connect(cluster.bootstrap) as admin:
                info = (await admin.metadata(["orders"])).topics["orders"]
        finally:
            await clusters.close_all()
    assert (created_reads, edited_reads, grown_reads) == (2, 1, 2)
    assert created["topicId"] == edited["topicId"] == grown["topicId"] == str(info.topic_id)
    assert (created["partitions"], created["replicationFactor"]) == (3, 2)
    assert (edited["partitions"], edited["replicationFactor"]) == (3, 2)
    assert (grown["partitions"], grown["replicationFactor"]) == (5, 2) == (len(info.partitions), 2)


async def test_topic_status_reads_metadata_when_what_was_read_is_out_of_date(reconciler, fake) -> None:
    """A run that changed the topic's partitions (or replicas) and has no completion poll of it
    (`led`) must not take the status from the read it planned from: that read is out of date, and
    the status asks Metadata instead."""
    assert condition(await reconciler.reconcile(topic_body("grown", 3, 1)), "Ready")["status"] == "True"
    context = reconciler.clusters.contexts()[0]
    async with AdminClient.connect(fake.bootstrap) as admin:
        await admin.create_partitions([NewPartitions("grown", 5)])
        info = (await admin.metadata(["grown"])).topics["grown"]
    source = Source(None, 0, "KafkaTopic", "team", "grown")
    model = KafkaTopic(source, "grown", "team", ClusterRef("main"), "grown", partitions=5, replication_factor=1)
    before = ObservedTopic("grown", ((0,), (1,), (2,)), topic_id=str(info.topic_id))  # what the plan had read
    grew = StepResult(CreatePartitions(NewPartitions("grown", 5)), StepState.OK)
    unchanged = Outcome(source, "KafkaTopic", "grown", State.UNCHANGED)
    reshaped = Outcome(source, "KafkaTopic", "grown", State.APPLIED, results=(grew,))
    assert not unchanged.reshaped and reshaped.reshaped and reshaped.led is None
    # nothing changed: the plan's read is the status (3 partitions, as it was read)
    assert (await topic_fields(context, model, unchanged, {}, before))["partitions"] == 3
    # partitions added without a poll of them: Metadata, which has 5
    fields = await topic_fields(context, model, reshaped, {}, before)
    assert (fields["partitions"], fields["replicationFactor"], fields["topicId"]) == (5, 1, str(info.topic_id))


def test_claim_key_names_its_fields() -> None:
    topic = body("KafkaTopic", "orders-v1", {"clusterRef": {"name": "main"}, "topicName": "orders", "partitions": 1})
    key = claim_key(topic)
    assert key == ClaimKey("topic", "team", "main", "orders") and str(key) == "topic orders"
    assert (key.what, key.cluster_namespace, key.cluster_name, key.name) == ("topic", "team", "main", "orders")
    broker = claim_key(body("KafkaBrokerConfig", "defaults", {"clusterRef": {"name": "main", "namespace": "kafka"},
                                                               "config": {}}))
    assert broker == ClaimKey("broker", "kafka", "main", "default")
    assert claim_key(body("KafkaTopic", "orphan", {"partitions": 1})) is None  # no clusterRef: claims nothing
    assert {key: 1}[("topic", "team", "main", "orders")] == 1, "still a tuple: kopf's indexes key by it"
