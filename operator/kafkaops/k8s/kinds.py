"""The watched kinds and what the handlers need to know about each."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from kafkaops.frozen import frozen
from kafkaops.reconcile.ownership import broker_owner, topic_owner
from kafkaops.resources.kinds import (
    API_GROUP,
    API_VERSION,
    KAFKA_ACL,
    KAFKA_BROKER_CONFIG,
    KAFKA_CLIENT_QUOTA,
    KAFKA_CLUSTER,
    KAFKA_TOPIC,
    KAFKA_USER,
    PLURALS,
)
from kafkaops.resources.models import KafkaAcl, KafkaBrokerConfig, KafkaTopic
from kafkaops.resources.users import entity_of, entity_text

GROUP, VERSION = API_GROUP, API_VERSION
CLUSTER_PLURAL = PLURALS[KAFKA_CLUSTER]

PAUSED = "kafkaops.io/paused"
MANAGED = "kafkaops.io/managed"
CONFIRM_DELETIONS = "kafkaops.io/confirm-deletions"
FINALIZER = "kafkaops.io/finalizer"
# set by the resync on a resource being deleted whose deletion kopf dropped: the event runs it again
NUDGE = "kafkaops.io/nudge"
STORAGE_PREFIX = "kopf.kafkaops.io"  # kopf's own bookkeeping; user annotations stay kafkaops.io/*
DIFFBASE_FIELD = "lastHandledConfiguration"  # status.<this>: what kopf last handled (k8s/diffbase.py)



class ClaimKey(NamedTuple):
    """What a resource claims on its cluster (one resource manages each): a topic, a principal or
    a broker's configs. A tuple, so kopf's indexes key by it."""

    what: str  # "topic", "principal", "broker", "user" (a KafkaUser's principal) or "quota" (an entity)
    cluster_namespace: str | None
    cluster_name: str
    name: str  # the topic name, the principal, the broker id or "default"

    def __str__(self) -> str:
        return f"{self.what} {self.name}"


CLAIMED = "claimed"  # status field: this resource is the one managing its topic/principal/broker


@frozen(order=True)
class Claim:
    """Who claims a topic / principal / broker. The one already managing it (status.claimed) wins,
    then the oldest, then by namespace/name: the same winner after every restart, even for objects
    created within the same second (creationTimestamp has second resolution)."""

    rank: int  # 0: already manages it
    created: str
    namespace: str | None
    name: str
    uid: str


def annotation(body: Mapping[str, Any], key: str) -> str | None:
    value = ((body.get("metadata") or {}).get("annotations") or {}).get(key)
    return value if isinstance(value, str) else None


def is_paused(body: Mapping[str, Any]) -> bool:
    return (annotation(body, PAUSED) or "").lower() == "true"


def is_unmanaged(body: Mapping[str, Any]) -> bool:
    return (annotation(body, MANAGED) or "").lower() == "false"


def cluster_of(body: Mapping[str, Any]) -> tuple[str | None, str] | None:
    spec = body.get("spec") if isinstance(body.get("spec"), Mapping) else {}
    ref = spec.get("clusterRef") if isinstance(spec.get("clusterRef"), Mapping) else None
    if ref is None or not isinstance(ref.get("name"), str):
        return None
    namespace = ref.get("namespace") or (body.get("metadata") or {}).get("namespace")
    return namespace, ref["name"]


def claim_key(body: Mapping[str, Any]) -> ClaimKey | None:
    """What a resource claims on its cluster: its topic name, its principal, or its broker."""
    cluster = cluster_of(body)
    if cluster is None:
        return None
    spec = body.get("spec") or {}
    metadata = body.get("metadata") or {}
    kind = body.get("kind")
    if kind == KAFKA_TOPIC:
        return ClaimKey("topic", *cluster, str(spec.get("topicName") or metadata.get("name")))
    if kind == KAFKA_ACL:
        return ClaimKey("principal", *cluster, str(spec.get("principal")))
    if kind == KAFKA_BROKER_CONFIG:
        broker = spec.get("brokerId")
        return ClaimKey("broker", *cluster, "default" if broker is None else str(broker))
    if kind == KAFKA_USER:
        return ClaimKey("user", *cluster, str(spec.get("principal") or f"User:{metadata.get('name')}"))
    if kind == KAFKA_CLIENT_QUOTA:
        entity = spec.get("entity") if isinstance(spec.get("entity"), Mapping) else {}
        return ClaimKey("quota", *cluster, entity_text(entity_of(entity)))
    return None


def claim_of(body: Mapping[str, Any]) -> Claim:
    metadata = body.get("metadata") or {}
    status = body.get("status") if isinstance(body.get("status"), Mapping) else {}
    return Claim(0 if status.get(CLAIMED) is True else 1, str(metadata.get("creationTimestamp") or ""),
                 metadata.get("namespace") or "", str(metadata.get("name") or ""), str(metadata.get("uid") or ""))


def generation_of(body: Mapping[str, Any]) -> int | None:
    value = (body.get("metadata") or {}).get("generation")
    return value if isinstance(value, int) else None


def uid_of(body: Mapping[str, Any]) -> str:
    metadata = body.get("metadata") or {}
    return str(metadata.get("uid") or f"{metadata.get('namespace')}/{body.get('kind')}/{metadata.get('name')}")


def winner(mine: Claim, claims: Iterable[Claim]) -> Claim:
    """The claim that wins; the index may hold an older version of `mine` itself, which is skipped."""
    return min([*(c for c in claims if c.uid != mine.uid), mine])


def owner_of(resource: KafkaTopic | KafkaAcl | KafkaBrokerConfig) -> str | None:
    """The ownership entry of a resource's config keys (topics and broker configs; ACLs have none)."""
    if isinstance(resource, KafkaTopic):
        return topic_owner(resource.topic_name)
    if isinstance(resource, KafkaBrokerConfig):
        return broker_owner("" if resource.broker_id is None else str(resource.broker_id))
    return None
