"""The operator's lifecycle decisions without Kubernetes: start-up order, restarts, deletions
around a restart, a KafkaCluster that is really gone, and an outage. The catalog double stands
for kopf's watch cache; status writes and Events outside handlers are recorded."""

from __future__ import annotations

import asyncio
import time

import pytest

from kafkaops.k8s.context import Clusters, Connection, OperatorSettings
from kafkaops.k8s.metrics import Metrics
from kafkaops.k8s.reconciler import Reconciler
from kafkaops.kafka import AdminClient
from kafkaops.testing.fake_cluster import FakeClusterDouble

from k8s_helpers import CatalogDouble, SecretReaderDouble, after, cluster_body, condition, connect, topic_body

SETTINGS = OperatorSettings(client_overrides={"linger": 0.01, "wait_poll_min": 0.01, "connect_attempts": 1,
                                              "connect_timeout": 0.5, "retry_attempts": 1, "request_timeout": 2.0},
                            retry_delay=1.0, metrics_port=None, cluster_wait=5.0, reconnect_min=0.05,
                            reconnect_max=0.2)


class Recorder:
    """Status writes and Events made outside a handler (the API and kopf.event, as doubles); a
    write lands in the catalog, as the watch would bring it back."""

    def __init__(self, catalog: CatalogDouble | None = None) -> None:
        self.catalog = catalog
        self.writes: list[tuple[str, str, dict]] = []
        self.events: list[tuple[str, str, str]] = []
        self.annotated: list[tuple[str, str, dict]] = []

    async def write(self, plural: str, namespace: str, name: str, status) -> None:
        self.writes.append((plural, name, dict(status)))
        if self.catalog is not None:
            for held in [*self.catalog.clusters.values(), *self.catalog.objects.values()]:
                if held["metadata"]["name"] == name and held["kind"].lower() + "s" == plural:
                    self.catalog.add({**held, "status": {**(held.get("status") or {}), **status}})

    def post(self, body, note) -> None:
        self.events.append((body["metadata"]["name"], note.type, note.reason))

    async def annotate(self, plural: str, namespace: str, name: str, annotations) -> None:
        self.annotated.append((plural, name, dict(annotations)))


def operator(catalog: CatalogDouble, recorder: Recorder) -> Reconciler:
    """A freshly started operator process over the same API (catalog)."""
    return Reconciler(Clusters(SecretReaderDouble(), SETTINGS), catalog, Metrics(), status_writer=recorder.write,
                      event_poster=recorder.post, annotator=recorder.annotate)


async def wait_for(predicate, timeout: float = 10.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


async def topics_in(bootstrap: str) -> set[str]:
    async with AdminClient.connect(bootstrap) as admin:
        return set((await admin.metadata(None)).topics)


@pytest.fixture
async def fake():
    async with FakeClusterDouble(brokers=3) as cluster:
        yield cluster


async def test_resources_created_before_their_cluster_run_the_moment_it_connects(fake) -> None:
    catalog, recorder = CatalogDouble(), Recorder()
    reconciler = operator(catalog, recorder)
    try:
        topics = [catalog.add(topic_body(f"early-{i}")) for i in range(20)]
        early = [await reconciler.reconcile(t) for t in topics]
        assert all(condition(r, "Ready")["reason"] == "ClusterNotFound" and r.retry_after is None for r in early)
        assert all(r.event is None for r in early), "waiting is not an Event per resource"
        assert len(reconciler.waiting) == 20
        for topic, result in zip(topics, early):
            catalog.add(after(topic, result))
        await connect(reconciler, cluster_body(fake.bootstrap))
        await wait_for(lambda: len([w for w in recorder.writes if w[0] == "kafkatopics"]) == 20, what="20 writes")
        ready = [w for w in recorder.writes if w[0] == "kafkatopics" and condition(w[2], "Ready")["status"] == "True"]
        assert len(ready) == 20 and len(reconciler.waiting) == 0
        assert {f"early-{i}" for i in range(20)} <= await topics_in(fake.bootstrap)
        assert sorted(e for e in recorder.events if e[0].startswith("early-")) == sorted(
            (f"early-{i}", "Normal", "Applied") for i in range(20)), "one Event each: the topic was created"
    finally:
        await reconciler.close()


@pytest.fixture
async def zk_fake():
    """A cluster that names the same controller in every Metadata answer (kraft mode names a
    random broker, as KRaft does, and the KafkaCluster's status, which shows it, would change)."""
    async with FakeClusterDouble(brokers=3, mode="zk") as cluster:
        yield cluster


async def test_a_restart_with_everything_ready_writes_nothing_and_sends_nothing_per_resource(zk_fake) -> None:
    fake = zk_fake
    catalog = CatalogDouble()
    first = operator(catalog, Recorder(catalog))
    await connect(first, cluster_body(fake.bootstrap))
    assert condition(catalog.cluster(("team", "main"))["status"], "Ready")["status"] == "True"
    topics = [catalog.add(topic_body(f"kept-{i}", config={"retention.ms": 3600000})) for i in range(10)]
    for topic in topics:
        catalog.add(after(topic, await first.reconcile(topic)))
    await first.close()

    recorder = Recorder()
    second = operator(catalog, recorder)  # the restarted process: the resume handlers run first
    try:
        resumed = [await second.reconcile(t, resuming=True) for t in catalog.objects.values()]
        assert all(r.status is None and r.event is None and r.retry_after is None for r in resumed)
        assert second.clusters.contexts() == [], "a settled resource's resume sends nothing at all"
        cluster_result = await second.cluster_changed(catalog.cluster(("team", "main")))
        assert cluster_result.status is None and cluster_result.event is None
        context = second.clusters.contexts()[0]
        sent = dict(context.admin.requests_by_api)
        assert "CreateTopics" not in sent and "DescribeConfigs" not in sent, sent
        assert await second.resync_cluster(context) == 0  # one bulk read compares them all
        assert context.admin.requests_by_api.get("DescribeConfigs", 0) - sent.get("DescribeConfigs", 0) == 1
        assert recorder.writes == [] and recorder.events == []
    finally:
        await second.close()


async def test_a_deletion_right_after_a_restart_deletes_in_kafka(fake) -> None:
    catalog, recorder = CatalogDouble(), Recorder()
    first = operator(catalog, recorder)
    await connect(first, cluster_body(fake.bootstrap, topicDeletion={"policy": "Delete"}))
    doomed = catalog.add(topic_body("doomed"))
    catalog.add(after(doomed, await first.reconcile(doomed)))
    await first.close()

    second = operator(catalog, Recorder())  # no handler of the KafkaCluster has run yet
    try:
        assert second.clusters.contexts() == []
        removed = await second.remove(catalog.objects[doomed["metadata"]["uid"]])
        assert removed.release and removed.event is not None and removed.event.reason == "Deleted", removed
        assert "doomed" not in await topics_in(fake.bootstrap)
    finally:
        await second.close()


async def test_a_kafkacluster_that_is_gone_releases_with_a_warning(fake) -> None:
    catalog = CatalogDouble()
    reconciler = operator(catalog, Recorder())
    cluster = cluster_body(fake.bootstrap, topicDeletion={"policy": "Delete"})
    await connect(reconciler, cluster)
    topic = catalog.add(topic_body("orphaned"))
    await reconciler.reconcile(topic)
    catalog.remove(cluster)
    await reconciler.cluster_deleted(cluster)
    try:
        removed = await reconciler.remove(topic)
        assert removed.release and removed.event.type == "Warning" and removed.event.reason == "ClusterNotFound"
        assert "orphaned" in await topics_in(fake.bootstrap), "released without touching Kafka"
    finally:
        await reconciler.close()


async def test_a_deletion_while_the_cluster_is_down_waits_and_keeps_the_finalizer() -> None:
    catalog = CatalogDouble()
    reconciler = Reconciler(Clusters(SecretReaderDouble(), OperatorSettings(
        client_overrides=SETTINGS.client_overrides, metrics_port=None, cluster_wait=0.5, reconnect_min=0.05,
        reconnect_max=0.1)), catalog, Metrics())
    try:
        catalog.add(cluster_body("127.0.0.1:1", topicDeletion={"policy": "Delete"}))
        topic = catalog.add(topic_body("later"))
        removed = await reconciler.remove(topic)
        assert not removed.release and removed.retry_after is not None
        assert condition(removed, "Reconciling")["reason"] == "ClusterNotReady"
        assert "kafkaops.io/managed=false" in condition(removed, "Reconciling")["message"]
    finally:
        await reconciler.close()


async def test_an_outage_is_one_transition_per_cluster_and_resources_come_back_without_events(fake) -> None:
    catalog = CatalogDouble()
    recorder = Recorder(catalog)
    reconciler = operator(catalog, recorder)
    try:
        cluster = cluster_body(fake.bootstrap)
        catalog.add(after(cluster, await connect(reconciler, cluster)))
        topics = [catalog.add(topic_body(f"steady-{i}")) for i in range(5)]
        for topic in topics:
            catalog.add(after(topic, await reconciler.reconcile(topic)))
        context = reconciler.clusters.contexts()[0]
        await reconciler.resync_cluster(context)
        recorder.writes.clear(), recorder.events.clear()

        for broker in (1, 2, 3):
            await fake.stop_broker(broker)
        await reconciler.resync_cluster(context)  # the periodic bulk read meets the outage
        await wait_for(lambda: context.state is Connection.DOWN, what="the cluster down")
        await wait_for(lambda: len(reconciler.waiting) == 5, what="5 resources waiting")
        down = [w for w in recorder.writes if w[0] == "kafkatopics"]
        assert len(down) == 5 and all(condition(w[2], "Ready")["reason"] == "ClusterNotReady" for w in down)
        assert [e for e in recorder.events if e[0] != "main"] == [], "no Event per resource"
        assert [e for e in recorder.events if e[0] == "main"] == [("main", "Warning", "ClusterUnreachable")]

        recorder.writes.clear(), recorder.events.clear()
        for broker in (1, 2, 3):
            await fake.start_broker(broker)
        await wait_for(lambda: len([w for w in recorder.writes if w[0] == "kafkatopics"]) == 5, what="5 back")
        back = [w for w in recorder.writes if w[0] == "kafkatopics"]
        assert all(condition(w[2], "Ready")["status"] == "True" for w in back)
        assert [e for e in recorder.events if e[0] != "main"] == [], "coming back is not an Event per resource"
        assert [e for e in recorder.events if e[0] == "main"] == [("main", "Normal", "Connected")]
    finally:
        await reconciler.close()


async def test_a_status_write_refused_after_waiting_is_tried_again(fake) -> None:
    """The API refuses the write of a resource that waited for its cluster (after the client's own
    retries): the resource is parked again and written later, not left "waiting" for ever."""
    catalog = CatalogDouble()
    recorder = Recorder(catalog)
    refusals = 2

    async def flaky_write(plural, namespace, name, status) -> None:
        nonlocal refusals
        if plural == "kafkatopics" and refusals:
            refusals -= 1
            raise ConnectionError("the API server went away")
        await recorder.write(plural, namespace, name, status)

    settings = OperatorSettings(client_overrides=SETTINGS.client_overrides, retry_delay=0.2, metrics_port=None,
                                cluster_wait=5.0)
    reconciler = Reconciler(Clusters(SecretReaderDouble(), settings), catalog, Metrics(), status_writer=flaky_write,
                            event_poster=recorder.post)
    try:
        topic = catalog.add(topic_body("patient"))
        catalog.add(after(topic, await reconciler.reconcile(topic)))
        await connect(reconciler, cluster_body(fake.bootstrap))
        await wait_for(lambda: any(w[0] == "kafkatopics" for w in recorder.writes), what="the write, at last")
        assert refusals == 0 and condition(recorder.writes[-1][2], "Ready")["status"] == "True"
        assert len(reconciler.waiting) == 0
    finally:
        await reconciler.close()


async def test_a_namespace_deleted_with_its_cluster_deletes_its_topics_first(fake) -> None:
    """Deleting a namespace deletes its KafkaCluster and its KafkaTopics at once: the cluster's
    finalizer holds it until the topics are gone, so Delete-policy topics are deleted in Kafka."""
    catalog = CatalogDouble()
    reconciler = operator(catalog, Recorder(catalog))
    cluster = catalog.add(cluster_body(fake.bootstrap, topicDeletion={"policy": "Delete"}))
    await reconciler.cluster_changed(cluster)
    topic = catalog.add(topic_body("in-namespace"))
    await reconciler.reconcile(topic)
    try:
        terminating = {**catalog.cluster(("team", "main")), "metadata": {
            **cluster["metadata"], "deletionTimestamp": "2026-11-25T19:00:00Z"}}
        catalog.add(terminating)
        held = await reconciler.cluster_deleted(terminating)
        assert not held.release and held.retry_after
        assert condition(held, "Reconciling")["reason"] == "ResourcesRemain"
        assert "KafkaTopic team/in-namespace" in condition(held, "Reconciling")["message"]
        removed = await reconciler.remove({**topic, "metadata": {**topic["metadata"],
                                                                  "deletionTimestamp": "2026-11-25T19:00:00Z"}})
        assert removed.release and removed.event.reason == "Deleted"
        assert "in-namespace" not in await topics_in(fake.bootstrap)
        catalog.remove(topic)
        assert (await reconciler.cluster_deleted(terminating)).release
        assert reconciler.clusters.contexts() == []
        unmanaged = {**terminating, "metadata": {**terminating["metadata"],
                                                 "annotations": {"kafkaops.io/managed": "false"}}}
        catalog.add(topic_body("still-here"))
        assert (await reconciler.cluster_deleted(unmanaged)).release, "the escape: let it go now"
    finally:
        await reconciler.close()


async def test_an_edit_kopf_lost_is_reconciled_by_the_resync(fake) -> None:
    """Soak, 1-hour run: kopf's own status patch after a handler was refused (409), so the edit's
    generation was never handled and no further event came. Two resyncs later it is reconciled."""
    catalog = CatalogDouble()
    recorder = Recorder(catalog)
    reconciler = operator(catalog, recorder)
    try:
        await connect(reconciler, cluster_body(fake.bootstrap))
        topic = catalog.add(topic_body("lost-edit", partitions=1))
        catalog.add(after(topic, await reconciler.reconcile(topic)))
        uid = topic["metadata"]["uid"]
        edited = {**catalog.objects[uid], "spec": {**topic["spec"], "partitions": 3},
                  "metadata": {**topic["metadata"], "generation": 2}}
        catalog.add(edited)  # the edit is in the API; no handler ran for it
        context = reconciler.clusters.contexts()[0]
        await reconciler.resync_cluster(context)
        assert not [w for w in recorder.writes if w[1] == "lost-edit"], "one resync: it may be in a handler"
        await reconciler.resync_cluster(context)
        written = [w for w in recorder.writes if w[1] == "lost-edit"]
        assert written and written[-1][2]["observedGeneration"] == 2
        async with AdminClient.connect(fake.bootstrap) as admin:
            assert len((await admin.describe_topics(["lost-edit"]))["lost-edit"].value.partitions) == 3
    finally:
        await reconciler.close()


async def test_a_retry_kopf_dropped_is_reconciled_by_the_resync(fake) -> None:
    """Soak: kopf's patch after a handler that asked for a retry was refused (409); the retry was
    dropped with it, so the resource stayed Reconciling at its generation with no event to come."""
    catalog = CatalogDouble()
    recorder = Recorder(catalog)
    reconciler = operator(catalog, recorder)
    try:
        await connect(reconciler, cluster_body(fake.bootstrap))
        topic = catalog.add(topic_body("dropped-retry"))
        topic["metadata"]["resourceVersion"] = "7"
        topic["status"] = {"observedGeneration": 1, "conditions": [
            {"type": "Ready", "status": "False", "reason": "Retrying", "message": "throttled; retrying"},
            {"type": "Reconciling", "status": "True", "reason": "Retrying", "message": "throttled; retrying"}]}
        context = reconciler.clusters.contexts()[0]
        await reconciler.resync_cluster(context)
        assert not [w for w in recorder.writes if w[1] == "dropped-retry"], "one resync: kopf may retry it"
        await reconciler.resync_cluster(context)
        written = [w for w in recorder.writes if w[1] == "dropped-retry"]
        assert written and condition(written[-1][2], "Ready")["status"] == "True"
        assert "dropped-retry" in fake.state.topics
    finally:
        await reconciler.close()


async def test_a_deletion_kopf_dropped_is_nudged_by_the_resync(fake) -> None:
    """Soak: kopf's patch removing the finalizer failed (409) and no event came again; the resync
    nudges the object (an annotation) so kopf runs the deletion again. A resource that changed
    between the two resyncs (someone is working on it) is left alone."""
    catalog = CatalogDouble()
    recorder = Recorder(catalog)
    reconciler = operator(catalog, recorder)
    try:
        await connect(reconciler, cluster_body(fake.bootstrap))
        stuck, busy = (catalog.add(topic_body(name)) for name in ("stuck-deletion", "busy-deletion"))
        for item in (stuck, busy):
            item["metadata"].update(deletionTimestamp="2026-01-01T00:00:00Z", finalizers=["kafkaops.io/finalizer"],
                                    resourceVersion="10")
        context = reconciler.clusters.contexts()[0]
        await reconciler.resync_cluster(context)
        assert recorder.annotated == []
        busy["metadata"]["resourceVersion"] = "11"
        await reconciler.resync_cluster(context)
        assert [(plural, name) for plural, name, _ in recorder.annotated] == [("kafkatopics", "stuck-deletion")]
        assert "kafkaops.io/nudge" in recorder.annotated[0][2]
    finally:
        await reconciler.close()
