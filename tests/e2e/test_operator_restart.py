"""An operator killed (SIGKILL) in the middle of a 1,000-topic batch and restarted: everything
converges, no topic is created twice, no status is lost."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from kafkaops.kafka import AdminClient
from kafkaops.testing.servers import ServerProcess
from kafkaops.testing.stack import ChildProcess, start_operator

from conftest import Kube, condition, emulator_and_noida, ready, wait_until

pytestmark = pytest.mark.noida
API = "kafkaops.io/v1alpha1"
COUNT = int(__import__("os").environ.get("KAFKAOPS_RESTART_TOPICS", "1000"))


@pytest.fixture(scope="module")
def stack() -> Iterator[tuple[ChildProcess, ServerProcess]]:
    with emulator_and_noida("the restart test needs to kill the operator it started") as both:
        yield both


def kafka_topics(bootstrap: str) -> set[str]:
    async def read() -> set[str]:
        async with AdminClient.connect(bootstrap) as admin:
            return {t for t in (await admin.metadata(None)).topics if t.startswith("restart-")}
    return asyncio.run(read())


def test_operator_killed_mid_batch_converges_after_restart(stack) -> None:
    api, noida = stack
    kube = Kube(api.kubeconfig, "kafka")
    first = start_operator(api.kubeconfig)
    second: ChildProcess | None = None
    try:
        kube.create("kafkaclusters", {"apiVersion": API, "kind": "KafkaCluster", "metadata": {"name": "main"},
                                      "spec": {"bootstrapServers": [noida.bootstrap]}})
        wait_until(ready(kube, "kafkaclusters", "main"), what="cluster Ready")

        def create(i: int) -> None:
            kube.create("kafkatopics", {"apiVersion": API, "kind": "KafkaTopic", "metadata": {"name": f"restart-{i:04d}"},
                                        "spec": {"clusterRef": {"name": "main"}, "partitions": 1, "replicationFactor": 1,
                                                 "config": {"retention.ms": str(3_600_000 + i)}}})

        with ThreadPoolExecutor(8) as pool:
            list(pool.map(create, range(COUNT)))
        # kill it while the batch is in progress: some topics created in Kafka, not all statuses written
        wait_until(lambda: len(kafka_topics(noida.bootstrap)) > 0, timeout=60, what="the first topics in Kafka")
        first.kill()
        half_done = sum(1 for o in kube.list("kafkatopics") if condition(o, "Ready").get("status") == "True")
        assert half_done < COUNT, "the operator finished before it could be killed: nothing was tested"

        second = start_operator(api.kubeconfig)
        started = time.monotonic()

        def all_ready() -> bool:
            items = kube.list("kafkatopics")
            return len(items) == COUNT and all(
                condition(o, "Ready").get("status") == "True" and o["status"].get("observedGeneration") == 1
                for o in items)

        wait_until(all_ready, timeout=180, what=f"all {COUNT} KafkaTopics Ready after the restart")
        print(f"converged {time.monotonic() - started:.1f}s after the restart; {half_done} were Ready before the kill")
        assert kafka_topics(noida.bootstrap) == {f"restart-{i:04d}" for i in range(COUNT)}
        failures = [e for e in kube.events() if e.type == "Warning"]
        assert not [e for e in failures if "ALREADY_EXISTS" in (e.reason or "") + (e.message or "")]
        statuses = [o["status"] for o in kube.list("kafkatopics")]
        wrong = [s for s in statuses if s.get("managedConfigKeys") != ["retention.ms"] or not s.get("lastSyncTime")]
        assert not wrong, wrong[:3]
    finally:
        for process in (first, second):
            if process is not None:
                process.stop()


def handled_as(operator: ChildProcess, name: str, stage: str) -> list[str]:
    """How kopf took `name` ("Creation", "Resuming", "Updating"...), in order, by its debug log.
    `stage` "in progress": every cause kopf started for it; "processed": those followed by some
    "is processed" line (kopf's lines name no object, so it may be another object's: callers wait
    a moment more before reading the object)."""
    lines = operator.log(tail=1 << 40).splitlines()  # the whole log: --verbose writes every body
    causes = []
    for i, line in enumerate(lines):
        if " is in progress: " in line and f"'name': '{name}'" in line:
            done = any(" is processed: " in later for later in lines[i + 1:])
            if stage == "in progress" or done:
                causes.append(line.split("] ", 2)[-1].split(" is in progress")[0].strip())
    return causes


def test_objects_an_older_release_handled_are_resumed_not_recreated_and_their_annotation_moves(stack) -> None:
    """Before k8s/diffbase.py kopf's diff base was the annotation kopf.kafkaops.io/last-handled-configuration.
    An upgraded operator reads it (kopf resumes the object: no creation, no status rewrite) and
    moves it into the status the next time the object changes."""
    import json

    api, noida = stack
    kube = Kube(api.kubeconfig, "kafka")
    legacy = "kopf.kafkaops.io/last-handled-configuration"
    first = start_operator(api.kubeconfig)
    second: ChildProcess | None = None
    try:
        kube.create("kafkaclusters", {"apiVersion": API, "kind": "KafkaCluster", "metadata": {"name": "upgraded"},
                                      "spec": {"bootstrapServers": [noida.bootstrap]}})
        wait_until(ready(kube, "kafkaclusters", "upgraded"), what="cluster Ready")
        kube.create("kafkatopics", {"apiVersion": API, "kind": "KafkaTopic", "metadata": {"name": "upgraded-orders"},
                                    "spec": {"clusterRef": {"name": "upgraded"}, "partitions": 1, "replicationFactor": 1}})
        handled = wait_until(ready(kube, "kafkatopics", "upgraded-orders"), what="topic Ready")
        first.stop()
        # what an older release left: the diff base in an annotation, none in the status
        stored = handled["status"]["lastHandledConfiguration"]
        kube.custom.patch_namespaced_custom_object_status(
            "kafkaops.io", "v1alpha1", "kafka", "kafkatopics", "upgraded-orders",
            {"status": {"lastHandledConfiguration": None}})
        kube.patch("kafkatopics", "upgraded-orders", {"metadata": {"annotations": {legacy: stored + "\n"}}})

        second = start_operator(api.kubeconfig, "--verbose")
        wait_until(lambda: handled_as(second, "upgraded-orders", "processed"), timeout=60,
                   what="the topic handled after the restart")
        assert handled_as(second, "upgraded-orders", "in progress") == ["Resuming"], second.log(6000)
        time.sleep(1.0)  # kopf logs "processed" before its PATCH: a creation would have written by now
        after = kube.get("kafkatopics", "upgraded-orders")
        assert after["metadata"]["annotations"].get(legacy) and "lastHandledConfiguration" not in after["status"]

        kube.patch("kafkatopics", "upgraded-orders", {"spec": {"partitions": 2}})
        wait_until(lambda: (o := ready(kube, "kafkatopics", "upgraded-orders")()) and o["metadata"]["generation"] == 2,
                   what="generation 2 Ready")
        causes = handled_as(second, "upgraded-orders", "in progress")  # an update may be retried: "Updating" again
        assert causes[0] == "Resuming" and "Updating" in causes and "Creation" not in causes, causes
        time.sleep(1.0)
        moved = kube.get("kafkatopics", "upgraded-orders")
        assert legacy not in (moved["metadata"].get("annotations") or {})
        assert json.loads(moved["status"]["lastHandledConfiguration"])["spec"]["partitions"] == 2
    finally:
        for process in (first, second):
            if process is not None:
                process.stop()
