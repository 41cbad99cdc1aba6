"""What the API holds, as the operator's watch cache knows it: KafkaClusters, the resources of
each cluster, and who claims what.

The Reconciler asks the catalog whether a resource's KafkaCluster exists; it never infers that
from which connections happen to be open ("gone" means the object is absent from the API; "not
connected yet" means wait). In the operator the catalog reads kopf's indexes, which kopf fills
from the API before any handler runs, so the answer is right from the first event after a start.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from kafkaops.k8s.context import ClusterKey
from kafkaops.k8s.kinds import DIFFBASE_FIELD, STORAGE_PREFIX, Claim, claim_key
from kafkaops.resources.kinds import KAFKA_ACL, KAFKA_BROKER_CONFIG, KAFKA_CLIENT_QUOTA, KAFKA_TOPIC, KAFKA_USER

Body = Mapping[str, Any]
CLAIM, CLUSTER = "claim", "cluster"  # the two kinds of key of the per-kind indexes
KIND_INDEXES = {KAFKA_TOPIC: "topic_index", KAFKA_ACL: "acl_index", KAFKA_BROKER_CONFIG: "broker_config_index",
                KAFKA_USER: "user_index", KAFKA_CLIENT_QUOTA: "client_quota_index"}


KOPF_PREFIXES = (f"{STORAGE_PREFIX}/", "kopf.zalando.org/")  # ours, and kopf's default


def index_copy(body: Mapping[str, Any]) -> dict[str, Any]:
    """The copy of an object the indexes keep (one per object, for as long as it exists): plain
    dicts and lists, without what no reader of the catalog uses (`metadata.managedFields`, kopf's
    own annotations and its diff base in the status), with keys and short values shared between
    objects (`sys.intern`): a plain deep copy of 10,000 KafkaTopics as the emulator serves them held
    57 MiB, this one 24 MiB (tracemalloc; the operator's RSS in docs/benchmarks.md)."""
    metadata = body.get("metadata")
    if isinstance(metadata, Mapping):
        kept = {k: v for k, v in metadata.items() if k != "managedFields"}
        annotations = metadata.get("annotations")
        if isinstance(annotations, Mapping):
            kept["annotations"] = {k: v for k, v in annotations.items() if not k.startswith(KOPF_PREFIXES)}
        body = {**body, "metadata": kept}
    status = body.get("status")
    if isinstance(status, Mapping) and DIFFBASE_FIELD in status:
        body = {**body, "status": {k: v for k, v in status.items() if k != DIFFBASE_FIELD}}
    return _shared(body)


def _shared(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {sys.intern(str(k)): _shared(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_shared(v) for v in value]
    if isinstance(value, str) and len(value) <= 64:
        return sys.intern(value)
    return value


class Catalog(Protocol):
    def cluster(self, key: ClusterKey) -> Body | None:
        """The KafkaCluster object `key` as last seen in the API, or None when there is none."""

    def resources(self, key: ClusterKey) -> list[Body]:
        """The resources of every kind (KIND_INDEXES) that reference cluster `key`."""

    def claims(self, body: Body) -> list[Claim]:
        """Everyone claiming what `body` claims (its topic, principal or broker)."""


class IndexCatalog:
    """A catalog over kopf's indexes (mappings of key -> collection of values), bound by the
    handlers from the keyword arguments kopf passes them (the same live index objects each time)."""

    INDEXES = ("cluster_objects", *KIND_INDEXES.values())

    def __init__(self) -> None:
        self._indexes: dict[str, Mapping[Any, Iterable[Any]]] = {}

    def bind(self, kwargs: Mapping[str, Any]) -> IndexCatalog:
        for name in self.INDEXES:
            if name in kwargs:
                self._indexes[name] = kwargs[name]
        return self

    def _get(self, index: str, key: Any) -> list[Any]:
        return list(self._indexes.get(index, {}).get(key, ()))

    def cluster(self, key: ClusterKey) -> Body | None:
        found = self._get("cluster_objects", key)
        return found[-1] if found else None

    def cluster_keys(self) -> list[ClusterKey]:
        """Every KafkaCluster in the API, as the watch cache knows them."""
        index = self._indexes.get("cluster_objects", {})
        return [key for key in list(index) if index.get(key)]

    def resources(self, key: ClusterKey) -> list[Body]:
        return [body for index in KIND_INDEXES.values() for body in self._get(index, (CLUSTER, key))]

    def claims(self, body: Body) -> list[Claim]:
        key = claim_key(body)
        index = KIND_INDEXES.get(str(body.get("kind")))
        return self._get(index, (CLAIM, key)) if key is not None and index else []
