"""Small builders for kafkaops manifests in tests (imported by the tests in this folder)."""

from __future__ import annotations

import copy
from typing import Any

import yaml

from kafkaops.resources import ValidatedSet, load_text, validate_load

API = "kafkaops.io/v1alpha1"


def cluster(name: str = "main", namespace: str | None = None, **spec: Any) -> dict[str, Any]:
    body = {"bootstrapServers": ["127.0.0.1:9092"], **spec}
    return _doc("KafkaCluster", name, namespace, body)


def topic(name: str = "orders", cluster_name: str = "main", namespace: str | None = None, **spec: Any) -> dict[str, Any]:
    body = {"clusterRef": {"name": cluster_name}, "partitions": 3, "replicationFactor": 3, **spec}
    return _doc("KafkaTopic", name, namespace, {k: v for k, v in body.items() if v is not None})


def acl(name: str = "orders", principal: str = "User:orders", acls: list[Any] | None = None,
        cluster_name: str = "main", namespace: str | None = None) -> dict[str, Any]:
    entries = acls if acls is not None else [{"resource": {"type": "Topic", "name": "orders"}, "operations": ["Read"]}]
    return _doc("KafkaAcl", name, namespace, {"clusterRef": {"name": cluster_name}, "principal": principal, "acls": entries})


def broker_config(name: str = "brokers", config: dict[str, Any] | None = None, broker_id: int | None = None,
                  cluster_name: str = "main", namespace: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"clusterRef": {"name": cluster_name}, "config": config or {"log.cleaner.threads": 2}}
    if broker_id is not None:
        body["brokerId"] = broker_id
    return _doc("KafkaBrokerConfig", name, namespace, body)


def _doc(kind: str, name: str, namespace: str | None, spec: dict[str, Any]) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    return {"apiVersion": API, "kind": kind, "metadata": metadata, "spec": copy.deepcopy(spec)}


def dump(*docs: dict[str, Any]) -> str:
    return yaml.safe_dump_all(docs, sort_keys=False)


def check(*docs: dict[str, Any], file: str = "test.yaml") -> ValidatedSet:
    """Validate the documents as one YAML file named `file`."""
    return validate_load(load_text(dump(*docs), file))


def rules(result: ValidatedSet, severity: str = "error") -> set[tuple[str, str]]:
    """{(path, rule)} of the errors (or warnings) of a result."""
    items = result.errors if severity == "error" else result.warnings
    return {(issue.path, issue.rule) for issue in items}


def user(name: str = "alice", cluster_name: str = "main", namespace: str | None = None, **spec: Any) -> dict[str, Any]:
    body = {"clusterRef": {"name": cluster_name}, **spec}
    return _doc("KafkaUser", name, namespace, {k: v for k, v in body.items() if v is not None})


def client_quota(name: str = "quota", entity: dict[str, Any] | None = None, quotas: dict[str, Any] | None = None,
                 cluster_name: str = "main", namespace: str | None = None, **spec: Any) -> dict[str, Any]:
    body = {"clusterRef": {"name": cluster_name}, "entity": entity if entity is not None else {"clientId": "app"},
            "quotas": quotas if quotas is not None else {"producer_byte_rate": 1024}, **spec}
    return _doc("KafkaClientQuota", name, namespace, body)
