"""Doubles and body builders shared by the operator's decision tests (no Kubernetes, no kopf)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

from kafkaops.k8s.kinds import Claim, claim_key, claim_of, cluster_of
from kafkaops.k8s.reconciler import Reconciler, Result
from kafkaops.k8s.secrets import SecretForbidden, SecretNotFound

API = "kafkaops.io/v1alpha1"
_uids = itertools.count(1)


class SecretReaderDouble:
    def __init__(self, secrets: dict | None = None, forbidden: set | None = None) -> None:
        self.secrets = secrets or {}
        self.forbidden = forbidden or set()

    async def read(self, namespace: str, name: str):
        if (namespace, name) in self.forbidden:
            raise SecretForbidden(f"Secret {namespace}/{name}: forbidden")
        if (namespace, name) not in self.secrets:
            raise SecretNotFound(f"Secret {namespace}/{name} not found")
        return self.secrets[(namespace, name)]


class CatalogDouble:
    """The operator's watch cache of the API, holding what a test put in it."""

    def __init__(self) -> None:
        self.clusters: dict[tuple[str | None, str], Mapping[str, Any]] = {}
        self.objects: dict[str, Mapping[str, Any]] = {}
        self._claims: tuple[int, dict] | None = None

    def add(self, body: Mapping[str, Any]) -> Mapping[str, Any]:
        metadata = body["metadata"]
        if body["kind"] == "KafkaCluster":
            self.clusters[(metadata.get("namespace"), metadata["name"])] = body
        else:
            self.objects[metadata["uid"]] = body
            self._claims = None
        return body

    def remove(self, body: Mapping[str, Any]) -> None:
        metadata = body["metadata"]
        if body["kind"] == "KafkaCluster":
            self.clusters.pop((metadata.get("namespace"), metadata["name"]), None)
        else:
            self.objects.pop(metadata["uid"], None)
            self._claims = None

    def cluster(self, key):
        return self.clusters.get(key)

    def resources(self, key):
        return [b for b in self.objects.values() if cluster_of(b) == key]

    def claims(self, body) -> list[Claim]:
        key = claim_key(body)
        if key is None:
            return []
        if self._claims is None or self._claims[0] != len(self.objects):  # an index, as kopf keeps one
            index: dict = {}
            for held in self.objects.values():
                index.setdefault(claim_key(held), []).append(claim_of(held))
            self._claims = (len(self.objects), index)
        return list(self._claims[1].get(key, ()))


async def connect(reconciler: Reconciler, cluster: dict) -> Result:
    """A KafkaCluster appears in the API (the catalog) and its handler runs."""
    reconciler.catalog.add(cluster)
    return await reconciler.cluster_changed(cluster)


def body(kind: str, name: str, spec: dict, namespace: str = "team", created: str | None = None, **metadata) -> dict:
    uid = next(_uids)
    return {"apiVersion": API, "kind": kind,
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{uid}", "generation": 1,
                         "creationTimestamp": created or f"2026-01-01T00:00:{uid % 60:02d}Z", **metadata},
            "spec": spec}


def cluster_body(bootstrap: str, name: str = "main", **spec) -> dict:
    return body("KafkaCluster", name, {"bootstrapServers": bootstrap.split(","), **spec}, namespace="team")


def topic_body(name: str, partitions: int = 1, rf: int = 1, config: dict | None = None, cluster: str = "main",
               **kw) -> dict:
    spec = {"clusterRef": {"name": cluster}, "partitions": partitions, "replicationFactor": rf}
    if config:
        spec["config"] = config
    return body("KafkaTopic", name, spec, **kw)


def condition(result: Result | Mapping[str, Any], type_: str) -> dict:
    status = result.status if isinstance(result, Result) else result
    return next(c for c in status["conditions"] if c["type"] == type_)


def after(body_: dict, result: Result) -> dict:
    """The resource as the API holds it once `result` was written (an unchanged status is kept)."""
    return {**body_, "status": result.status} if result.status is not None else body_
