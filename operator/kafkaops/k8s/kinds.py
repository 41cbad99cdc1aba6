"""The watched kinds and what the handlers need to know about each."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kafkaops.resources.kinds import API_GROUP, API_VERSION, KAFKA_ACL, KAFKA_BROKER_CONFIG, KAFKA_TOPIC

GROUP, VERSION = API_GROUP, API_VERSION
PLURALS = {KAFKA_TOPIC: "kafkatopics", KAFKA_ACL: "kafkaacls", KAFKA_BROKER_CONFIG: "kafkabrokerconfigs"}

PAUSED = "kafkaops.io/paused"
MANAGED = "kafkaops.io/managed"
CONFIRM_DELETIONS = "kafkaops.io/confirm-deletions"
FINALIZER = "kafkaops.io/finalizer"

ClaimKey = tuple[str, str | None, str, str]  # (what, cluster namespace, cluster name, claimed name)


CLAIMED = "claimed"  # status field: this resource is the one managing its topic/principal/broker


@dataclass(frozen=True, slots=True, order=True)
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
        return ("topic", *cluster, str(spec.get("topicName") or metadata.get("name")))
    if kind == KAFKA_ACL:
        return ("principal", *cluster, str(spec.get("principal")))
    if kind == KAFKA_BROKER_CONFIG:
        broker = spec.get("brokerId")
        return ("broker", *cluster, "default" if broker is None else str(broker))
    return None


def claim_of(body: Mapping[str, Any]) -> Claim:
    metadata = body.get("metadata") or {}
    status = body.get("status") if isinstance(body.get("status"), Mapping) else {}
    return Claim(0 if status.get(CLAIMED) is True else 1, str(metadata.get("creationTimestamp") or ""),
                 metadata.get("namespace") or "", str(metadata.get("name") or ""), str(metadata.get("uid") or ""))
