"""What the lifecycle e2e tests and bench/lifecycle_bench.py share: building many KafkaTopics
fast, and a record of what the API held before and after an operator restart (writes show as
changed resourceVersions; transitions as not-Ready conditions; Events as new Event objects)."""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from conftest import Kube, condition

API = "kafkaops.io/v1alpha1"


def cluster(name: str, bootstrap: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": API, "kind": "KafkaCluster", "metadata": {"name": name},
            "spec": {"bootstrapServers": [bootstrap], **spec}}


def topic(name: str, cluster_name: str = "main", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": API, "kind": "KafkaTopic", "metadata": {"name": name},
            "spec": {"clusterRef": {"name": cluster_name}, "partitions": 1, "replicationFactor": 1, **spec}}


def create_all(kube: Kube, plural: str, bodies: Iterable[dict[str, Any]], threads: int = 8) -> None:
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda b: kube.create(plural, b), bodies))


def all_ready(kube: Kube, plural: str, count: int) -> bool:
    items = kube.list(plural)
    return len(items) == count and all(
        condition(o, "Ready").get("status") == "True"
        and o.get("status", {}).get("observedGeneration") == o["metadata"].get("generation") for o in items)


@dataclass(frozen=True)
class ApiState:
    versions: dict[str, str]  # "plural/name" -> resourceVersion
    not_ready: frozenset[str]
    events: int
    warnings: tuple[str, ...]

    @classmethod
    def read(cls, kube: Kube, plurals: Iterable[str] = ("kafkaclusters", "kafkatopics")) -> ApiState:
        versions: dict[str, str] = {}
        not_ready: set[str] = set()
        for plural in plurals:
            for item in kube.list(plural):
                key = f"{plural}/{item['metadata']['name']}"
                versions[key] = item["metadata"]["resourceVersion"]
                if condition(item, "Ready").get("status") != "True":
                    not_ready.add(key)
        events = kube.events()
        return cls(versions, frozenset(not_ready), len(events),
                   tuple(f"{e.reason}: {e.message}" for e in events if e.type == "Warning"))

    def written_since(self, before: ApiState) -> list[str]:
        return sorted(k for k, v in self.versions.items() if before.versions.get(k) != v)


class ReadyWatch:
    """Follows one plural with a watch stream in a thread: when each object was first seen Ready,
    how many writes (MODIFIED) arrived, and which objects were seen not Ready after being Ready."""

    def __init__(self, kube: Kube, plural: str) -> None:
        import threading

        self.kube, self.plural = kube, plural
        self.first_ready: dict[str, float] = {}
        self.modified = 0
        self.left_ready: set[str] = set()
        self._ready: set[str] = set()
        self._stop = threading.Event()
        listing = kube.custom.list_namespaced_custom_object("kafkaops.io", "v1alpha1", kube.namespace, plural)
        for item in listing["items"]:
            self._see(item, modified=False)
        self._version = listing["metadata"]["resourceVersion"]
        self._thread = threading.Thread(target=self._follow, daemon=True)
        self._thread.start()

    def _see(self, item: dict[str, Any], modified: bool) -> None:
        import time

        name = item["metadata"]["name"]
        self.modified += modified
        is_ready = condition(item, "Ready").get("status") == "True"
        if is_ready:
            self.first_ready.setdefault(name, time.monotonic())
            self._ready.add(name)
        elif name in self._ready:
            self.left_ready.add(name)
            self._ready.discard(name)

    def _follow(self) -> None:
        from kubernetes import watch

        while not self._stop.is_set():
            stream = watch.Watch()
            try:
                for event in stream.stream(self.kube.custom.list_namespaced_custom_object, "kafkaops.io", "v1alpha1",
                                           self.kube.namespace, self.plural, resource_version=self._version,
                                           timeout_seconds=5):
                    item = event["object"]
                    self._version = item["metadata"]["resourceVersion"]
                    if event["type"] in ("ADDED", "MODIFIED"):
                        self._see(item, modified=event["type"] == "MODIFIED")
                    if self._stop.is_set():
                        break
            except Exception:  # a stream cut by the server: resume from the last version seen
                continue

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
