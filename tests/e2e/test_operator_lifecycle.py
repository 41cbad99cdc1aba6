"""Operator lifecycle end to end (the real `kafkaops run` processes, the API emulator, noida-db):
resources created before their KafkaCluster, a kill -9 and restart with everything Ready,
deletions around a restart, a leader handover between two replicas, and a quiet log.

The bounds are wide (shared machines); the figures are printed, and bench/lifecycle_bench.py
records them at scale in docs/benchmarks.md."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Iterator

import pytest
import yaml

from kafkaops.kafka import AdminClient, NewTopic
from kafkaops.testing.servers import ServerProcess, free_port, start_noida
from kafkaops.testing.stack import ChildProcess, start_dev_cluster, start_emulator, start_operator

from conftest import REAL_KUBECONFIG, ROOT, Kube, condition, emulator_and_noida, peers_settled, ready, wait_until
from lifecycle_helpers import ApiState, all_ready, cluster, create_all, topic

pytestmark = pytest.mark.noida
RESYNCED = "compared with Kafka in one bulk read"


@pytest.fixture
def stack() -> Iterator[tuple[ChildProcess, ServerProcess]]:
    with emulator_and_noida("these tests kill and restart the operator they started") as both:
        yield both


def kafka_topics(bootstrap: str, prefix: str) -> set[str]:
    async def read() -> set[str]:
        async with AdminClient.connect(bootstrap) as admin:
            return {t for t in (await admin.metadata(None)).topics if t.startswith(prefix)}
    return asyncio.run(read())


def errors_in(log: str) -> list[str]:
    return [line for line in log.splitlines() if " ERROR " in line or '"level": "error"' in line.lower()]


def settled_after_start(operator: ChildProcess, since: int = 0) -> None:
    """The restarted operator connected and compared everything in its first bulk resync."""
    wait_until(lambda: RESYNCED in operator.log(10**8)[since:], timeout=90, what="the first resync after the start")
    time.sleep(2)  # resume handlers that would write have had time to


def test_resources_created_before_their_cluster_are_ready_right_after_it_connects(stack) -> None:
    api, noida = stack
    kube = Kube(api.kubeconfig, "kafka")
    operator = start_operator(api.kubeconfig)
    try:
        create_all(kube, "kafkatopics", [topic(f"early-{i:03d}") for i in range(500)])
        wait_until(lambda: all(condition(o, "Ready").get("reason") == "ClusterNotFound" for o in kube.list("kafkatopics"))
                   and len(kube.list("kafkatopics")) == 500, timeout=120, what="500 topics waiting for their cluster")
        kube.create("kafkaclusters", cluster("main", noida.bootstrap))
        wait_until(ready(kube, "kafkaclusters", "main"), timeout=30, what="the cluster Ready")
        connected = time.monotonic()
        wait_until(lambda: all_ready(kube, "kafkatopics", 500), timeout=120, what="500 topics Ready")
        print(f"500 KafkaTopics Ready {time.monotonic() - connected:.1f}s after their KafkaCluster")
        assert len(kafka_topics(noida.bootstrap, "early-")) == 500
        warnings = [e for e in kube.events() if e.type == "Warning"]
        assert len(warnings) == 0, [f"{e.reason}: {e.message}" for e in warnings[:5]]
        assert errors_in(operator.log(10**8)) == []
    finally:
        operator.stop()


def test_a_restart_with_everything_ready_is_invisible(stack) -> None:
    api, noida = stack
    kube = Kube(api.kubeconfig, "kafka")
    first = start_operator(api.kubeconfig)
    second: ChildProcess | None = None
    try:
        kube.create("kafkaclusters", cluster("main", noida.bootstrap))
        create_all(kube, "kafkatopics", [topic(f"steady-{i:03d}", config={"retention.ms": str(3_600_000 + i)})
                                         for i in range(300)])
        wait_until(lambda: all_ready(kube, "kafkatopics", 300), timeout=120, what="300 topics Ready")
        settled_after_start(first)
        first.kill()
        before = ApiState.read(kube)
        second = start_operator(api.kubeconfig)
        settled_after_start(second)
        after = ApiState.read(kube)
        assert after.written_since(before) == [], "a restart with nothing changed writes nothing"
        assert after.not_ready == before.not_ready == frozenset()
        assert after.events == before.events, "no Event"
        assert errors_in(second.log(10**8)) == [], errors_in(second.log(10**8))[:5]
        # the restarted operator is live: an edit right after the restart is applied
        kube.patch("kafkatopics", "steady-007", {"spec": {"config": {"retention.ms": "7200000"}}})
        edited = time.monotonic()
        wait_until(ready(kube, "kafkatopics", "steady-007"), timeout=30, what="the edit Ready")
        print(f"edit after the restart Ready in {time.monotonic() - edited:.2f}s")
    finally:
        for process in (first, second):
            if process is not None:
                process.stop()


def test_deletions_around_a_restart_all_delete_in_kafka(stack) -> None:
    api, noida = stack
    kube = Kube(api.kubeconfig, "kafka")
    first = start_operator(api.kubeconfig)
    second: ChildProcess | None = None
    try:
        kube.create("kafkaclusters", cluster("main", noida.bootstrap,
                                             topicDeletion={"policy": "Delete", "maxDeletionsPerReconcile": 100}))
        create_all(kube, "kafkatopics", [topic(f"gone-{i:02d}") for i in range(30)])
        wait_until(lambda: all_ready(kube, "kafkatopics", 30), timeout=60, what="30 topics Ready")
        for i in range(0, 10):  # just before the crash
            kube.delete("kafkatopics", f"gone-{i:02d}")
        first.kill()
        for i in range(10, 20):  # while no operator runs
            kube.delete("kafkatopics", f"gone-{i:02d}")
        second = start_operator(api.kubeconfig)
        for i in range(20, 30):  # while it starts
            kube.delete("kafkatopics", f"gone-{i:02d}")
        wait_until(lambda: kube.list("kafkatopics") == [], timeout=90, what="every KafkaTopic gone from the API")
        assert kafka_topics(noida.bootstrap, "gone-") == set(), "every topic deleted in Kafka"
        assert not [e for e in kube.events() if e.reason == "ClusterNotFound"]
        assert errors_in(second.log(10**8)) == []
    finally:
        for process in (first, second):
            if process is not None:
                process.stop()


def test_a_leader_handover_between_two_replicas_is_invisible(stack) -> None:
    api, noida = stack
    kube = Kube(api.kubeconfig, "kafka")
    kube.custom.create_cluster_custom_object("kopf.dev", "v1", "clusterkopfpeerings",
                                             {"apiVersion": "kopf.dev/v1", "kind": "ClusterKopfPeering",
                                              "metadata": {"name": "kafkaops"}})
    lifetime = ["--peering-lifetime", "10"]  # short for the test; long enough for a loaded machine
    leader = start_operator(api.kubeconfig, *lifetime, peering="kafkaops", priority=100)
    standby: ChildProcess | None = None
    try:
        standby = start_operator(api.kubeconfig, *lifetime, peering="kafkaops", priority=50)
        peers_settled([leader], [leader, standby])
        kube.create("kafkaclusters", cluster("main", noida.bootstrap))
        create_all(kube, "kafkatopics", [topic(f"ha-{i:03d}") for i in range(100)])
        wait_until(lambda: all_ready(kube, "kafkatopics", 100), timeout=90, what="100 topics Ready")
        assert RESYNCED not in standby.log(10**8), "the standby stayed paused"
        settled_after_start(leader)
        leader.kill()
        before = ApiState.read(kube)
        settled_after_start(standby)  # it takes over once the dead leader's peering record expires
        after = ApiState.read(kube)
        assert after.written_since(before) == [] and after.events == before.events
        assert errors_in(standby.log(10**8)) == []
    finally:
        for process in (leader, standby):
            if process is not None:
                process.stop()


def test_a_namespace_deleted_with_its_credentials_secret_still_deletes_its_topics() -> None:
    """Soak finding: the namespace holds the KafkaCluster, its SASL Secret and Delete-policy topics,
    and is deleted while no operator runs. The Secret carries kafkaops.io/credentials-in-use, so the
    next operator can still read it, log in, delete the topics in Kafka and let the cluster go; then
    the finalizer comes off the Secret and the namespace is gone."""
    if REAL_KUBECONFIG:
        pytest.skip("KAFKAOPS_E2E_KUBECONFIG is set: this test deletes a namespace of its own emulator")
    password = "e2e-Secret-Pa55-" + os.urandom(4).hex()
    kafka = start_dev_cluster("--control-port", "0", env={"KAFKAOPS_DEV_SASL_USERS": f"ops:{password}"})
    first: ChildProcess | None = None
    second: ChildProcess | None = None
    try:
        with start_emulator(ROOT / "crds", namespaces=["kafka", "side"]) as api:
            kube, side = Kube(api.kubeconfig, "kafka"), Kube(api.kubeconfig, "side")
            side.core.create_namespaced_secret("side", {
                "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds"},
                "stringData": {"username": "ops", "password": password}})
            first = start_operator(api.kubeconfig)
            side.create("kafkaclusters", {**cluster("side", kafka.url), "spec": {
                "bootstrapServers": kafka.url.split(","), "topicDeletion": {"policy": "Delete"},
                "sasl": {"mechanism": "SCRAM-SHA-512", "credentialsSecretRef": {"name": "creds"}}}})
            create_all(side, "kafkatopics", [topic(f"sasl-{i}", cluster_name="side") for i in range(3)])
            wait_until(lambda: all_ready(side, "kafkatopics", 3), timeout=90, what="3 topics Ready")
            secret = side.core.read_namespaced_secret("creds", "side")
            assert "kafkaops.io/credentials-in-use" in (secret.metadata.finalizers or []), secret.metadata
            first.kill()
            kube.core.delete_namespace("side")
            second = start_operator(api.kubeconfig)
            wait_until(lambda: "side" not in {n.metadata.name for n in kube.core.list_namespace().items}, timeout=90,
                       what="the namespace gone")
            state = json.loads(urllib.request.urlopen(kafka.control_url + "/state", timeout=10).read())
            assert not [t for t in state["topics"] if t.startswith("sasl-")], "Delete-policy topics deleted in Kafka"
            logs = first.log() + second.log()
            assert password not in logs
    finally:
        for process in (first, second, kafka):
            if process is not None:
                process.stop()


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
@pytest.mark.parametrize("typo", ["secret", "bootstrap"])
def test_a_namespace_deleted_when_its_cluster_never_connected_is_gone(typo: str, tmp_path) -> None:
    """A KafkaCluster with a typo (a credentials Secret that does not exist, or a bootstrap address
    nothing listens on), a Delete-policy topic waiting for it, and the user gives up: `kubectl
    delete namespace`. The cluster will never connect (a Namespace being deleted takes no new
    Secret, and a cluster being deleted gets no new address) and the topic was never applied: it
    is released without touching Kafka (docs/reliability.md, finding 19), the cluster then goes,
    and so does the Namespace. A topic of the same name made in Kafka by someone else stays."""
    if REAL_KUBECONFIG:
        pytest.skip("KAFKAOPS_E2E_KUBECONFIG is set: this test deletes a namespace of its own emulator")
    with start_noida() as noida, start_emulator(ROOT / "crds", namespaces=["kafka", "typo"]) as api:
        kube, typo_ns = Kube(api.kubeconfig, "kafka"), Kube(api.kubeconfig, "typo")
        asyncio.run(create_in_kafka(noida.bootstrap, "typo-orders"))
        operator = start_operator(api.kubeconfig)
        kubectl = [shutil.which("kubectl"), "--kubeconfig", str(api.kubeconfig)]
        if typo == "secret":
            spec, waiting_for = {"sasl": {"mechanism": "SCRAM-SHA-512",
                                          "credentialsSecretRef": {"name": "kafka-credentails"}}}, "kafka-credentails"
            address = noida.bootstrap
        else:
            spec, waiting_for, address = {}, "ClusterUnreachable", f"127.0.0.1:{free_port()}"
        try:
            manifest = tmp_path / "typo.yaml"
            manifest.write_text(yaml.safe_dump_all([
                cluster("typo", address, topicDeletion={"policy": "Delete"}, **spec),
                topic("typo-orders", cluster_name="typo")]))
            subprocess.run([*kubectl, "-n", "typo", "apply", "-f", str(manifest)], check=True, capture_output=True,
                           timeout=60)
            waiting = wait_until(lambda: [o for o in typo_ns.list("kafkatopics") if waiting_for in
                                          condition(o, "Ready").get("message", "")], timeout=60,
                                 what="the topic waiting for its cluster")
            assert "kafkaops.io/finalizer" in waiting[0]["metadata"].get("finalizers", []), waiting[0]["metadata"]
            subprocess.run([*kubectl, "delete", "namespace", "typo", "--wait=false"], check=True, capture_output=True,
                           timeout=60)
            wait_until(lambda: "typo" not in {n.metadata.name for n in kube.core.list_namespace().items}, timeout=60,
                       what="the namespace gone")
            gone = subprocess.run([*kubectl, "get", "namespace", "typo"], capture_output=True, text=True, timeout=60)
            assert gone.returncode != 0 and "NotFound" in gone.stderr, gone.stderr
            assert "released without touching Kafka: no apply of it was ever recorded" in operator.log()
            assert kafka_topics(noida.bootstrap, "typo-") == {"typo-orders"}, "Kafka was not touched"
        finally:
            operator.stop()


async def create_in_kafka(bootstrap: str, name: str) -> None:
    async with AdminClient.connect(bootstrap) as admin:
        assert not (await admin.create_topics([NewTopic(name, 1, 1)])).failed()


def test_deleting_a_namespace_with_its_cluster_deletes_its_topics_in_kafka() -> None:
    """Soak finding 2: a namespace holding a KafkaCluster and Delete-policy topics, deleted at once
    while no operator runs: the next one finds the cluster and its topics all terminating. The
    cluster's finalizer waits for its topics, which are deleted in Kafka; nothing is released as
    "cluster gone"."""
    if REAL_KUBECONFIG:
        pytest.skip("KAFKAOPS_E2E_KUBECONFIG is set: this test deletes a namespace of its own emulator")
    with start_noida() as noida, start_emulator(ROOT / "crds", namespaces=["kafka", "side"]) as api:
        kube, side = Kube(api.kubeconfig, "kafka"), Kube(api.kubeconfig, "side")
        first = start_operator(api.kubeconfig)
        second: ChildProcess | None = None
        try:
            side.create("kafkaclusters", cluster("side", noida.bootstrap,
                                                 topicDeletion={"policy": "Delete", "maxDeletionsPerReconcile": 50}))
            create_all(side, "kafkatopics", [topic(f"side-{i}", cluster_name="side") for i in range(5)])
            wait_until(lambda: all_ready(side, "kafkatopics", 5), timeout=90, what="5 topics Ready")
            first.kill()
            kube.core.delete_namespace("side")
            second = start_operator(api.kubeconfig)
            wait_until(lambda: "side" not in {n.metadata.name for n in kube.core.list_namespace().items}, timeout=90,
                       what="the namespace gone")
            assert kafka_topics(noida.bootstrap, "side-") == set(), "Delete-policy topics deleted in Kafka"
            assert not [e for e in side.events() if e.reason == "ClusterNotFound"]
        finally:
            for process in (first, second):
                if process is not None:
                    process.stop()
