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
