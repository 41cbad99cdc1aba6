"""`kafkaops run --worker-limit N` (KAFKAOPS_WORKER_LIMIT): at most N resources of a kind are handled at
once. With 1, handling is strictly one object after another, so every topic goes out in its own
CreateTopics request, and nothing waits on a slot forever: a topic parked until its KafkaCluster
exists does not hold it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kafkaops.testing.servers import ServerProcess, free_port
from kafkaops.testing.stack import ChildProcess, start_operator

from conftest import Kube, admin_requests_by_api, emulator_and_noida, ready, wait_until
from lifecycle_helpers import cluster, topic

pytestmark = pytest.mark.noida
TOPICS = 6


@pytest.fixture(scope="module")
def stack() -> Iterator[tuple[ChildProcess, ServerProcess]]:
    with emulator_and_noida("this test starts its own operator with a worker limit") as both:
        yield both


def create_topics_sent(port: int) -> int:
    return admin_requests_by_api(port).get("CreateTopics", 0)


def test_worker_limit_one_handles_topics_one_at_a_time(stack) -> None:
    api, noida = stack
    kube = Kube(api.kubeconfig, "kafka")
    port = free_port()
    operator = start_operator(api.kubeconfig, "--metrics-port", str(port), env={"KAFKAOPS_WORKER_LIMIT": "1"})
    try:
        kube.create("kafkaclusters", cluster("main", noida.bootstrap))
        wait_until(ready(kube, "kafkaclusters", "main"), timeout=60, what="cluster Ready")
        kube.create("kafkatopics", topic("parked", "later"))  # its cluster does not exist yet
        before = create_topics_sent(port)
        for i in range(TOPICS):
            kube.create("kafkatopics", topic(f"limited-{i}"))
        for i in range(TOPICS):
            wait_until(ready(kube, "kafkatopics", f"limited-{i}"), timeout=90, what=f"limited-{i} Ready")
        # created together, handled one by one: one request each (without the limit: one or two in all)
        assert create_topics_sent(port) - before == TOPICS

        kube.create("kafkaclusters", cluster("later", noida.bootstrap))
        wait_until(ready(kube, "kafkatopics", "parked"), timeout=90, what="the parked topic Ready")
    finally:
        operator.stop()


def test_a_restart_with_more_resources_than_the_limit_handles_them(stack) -> None:
    """At a start kopf gives every existing object a worker to fill its indexes, and each waits
    until all are indexed: with fewer slots than objects the first workers waited forever for the
    rest (kopf issue #1243; k8s/kopf_patches.py, the sixth fix). Restarted with 20 KafkaTopics and a
    limit of 5, an edit and a new topic are handled."""
    api, noida = stack
    kube = Kube(api.kubeconfig, "kafka")
    operator = start_operator(api.kubeconfig)
    try:
        kube.create("kafkaclusters", cluster("restarted", noida.bootstrap))
        for i in range(20):
            kube.create("kafkatopics", topic(f"kept-{i}", "restarted"))
        for i in range(20):
            wait_until(ready(kube, "kafkatopics", f"kept-{i}"), timeout=90, what=f"kept-{i} Ready")
    finally:
        operator.stop()
    operator = start_operator(api.kubeconfig, env={"KAFKAOPS_WORKER_LIMIT": "5"})
    try:
        kube.patch("kafkatopics", "kept-0", {"spec": {"config": {"retention.ms": 7200000}}})
        kube.create("kafkatopics", topic("after-restart", "restarted"))
        wait_until(ready(kube, "kafkatopics", "after-restart"), timeout=60, what="the new topic Ready")
        wait_until(lambda: (kube.get("kafkatopics", "kept-0") or {}).get("status", {}).get("observedGeneration") == 2,
                   timeout=60, what="the edit handled")
    finally:
        operator.stop()


def test_resources_retrying_do_not_hold_every_slot(stack) -> None:
    """kopf slept through a retry delay inside the object's worker, so the limit's worth of objects
    retrying held every slot (k8s/kopf_patches.py, the sixth fix). With a limit of 1, a deletion
    that waits for the deletion cap retries on and on; a new topic is still handled."""
    api, noida = stack
    kube = Kube(api.kubeconfig, "kafka")
    operator = start_operator(api.kubeconfig, env={"KAFKAOPS_WORKER_LIMIT": "1"})
    try:
        kube.create("kafkaclusters", cluster("capped", noida.bootstrap,
                                             topicDeletion={"policy": "Delete", "maxDeletionsPerReconcile": 1}))
        for name in ("gone-0", "gone-1"):
            kube.create("kafkatopics", topic(name, "capped"))
        for name in ("gone-0", "gone-1"):
            wait_until(ready(kube, "kafkatopics", name), timeout=60, what=f"{name} Ready")
        kube.delete("kafkatopics", "gone-0")
        kube.delete("kafkatopics", "gone-1")
        def left() -> list[str]:
            return [n for n in ("gone-0", "gone-1") if kube.get("kafkatopics", n)]

        waiting = wait_until(lambda: len(left()) == 1 and left(), timeout=30, what="one deletion done, one capped")
        kube.create("kafkatopics", topic("meanwhile", "capped"))
        wait_until(ready(kube, "kafkatopics", "meanwhile"), timeout=30, what="a new topic Ready while one retries")
        assert kube.get("kafkatopics", waiting[0]) is not None, "the capped deletion is still waiting"
    finally:
        operator.stop()
