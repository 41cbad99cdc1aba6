"""Builders for the engine tests: manifests as YAML text, observed states by hand."""

from __future__ import annotations

from typing import Any

import yaml

from kafkaops.kafka import ConfigSource
from kafkaops.reconcile import DesiredState, ObservedConfig, ObservedState, ObservedTopic
from kafkaops.kafka import BrokerInfo
from kafkaops.resources import load_text, validate_load

API = "kafkaops.io/v1alpha1"


def doc(kind: str, name: str, spec: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    return {"apiVersion": API, "kind": kind, "metadata": metadata, "spec": spec}


def topic(name: str, partitions: int | None = 3, rf: int | None = 1, config: dict[str, Any] | None = None,
          cluster: str = "dev", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"clusterRef": {"name": cluster}, **spec}
    if partitions is not None:
        body["partitions"] = partitions
    if rf is not None:
        body["replicationFactor"] = rf
    if config:
        body["config"] = config
    return doc("KafkaTopic", name, body)


def kafka_acl(name: str, principal: str, entries: list[dict[str, Any]], cluster: str = "dev") -> dict[str, Any]:
    return doc("KafkaAcl", name, {"clusterRef": {"name": cluster}, "principal": principal, "acls": entries})


def broker_config(name: str, config: dict[str, Any], broker_id: int | None = None, cluster: str = "dev") -> dict[str, Any]:
    spec: dict[str, Any] = {"clusterRef": {"name": cluster}, "config": config}
    if broker_id is not None:
        spec["brokerId"] = broker_id
    return doc("KafkaBrokerConfig", name, spec)


def kafka_cluster(name: str = "dev", bootstrap: str = "127.0.0.1:9092", policy: str = "Retain", cap: int = 10) -> dict[str, Any]:
    return doc("KafkaCluster", name, {"bootstrapServers": [bootstrap],
                                      "topicDeletion": {"policy": policy, "maxDeletionsPerReconcile": cap}})


def yaml_text(*docs: dict[str, Any]) -> str:
    return yaml.safe_dump_all(list(docs), sort_keys=False)


def desired(*docs: dict[str, Any]) -> DesiredState:
    validated = validate_load(load_text(yaml_text(*docs), "test.yaml"))
    assert validated.ok, [str(e) for e in validated.errors]
    clusters = validated.clusters()
    return DesiredState.of(validated.valid, clusters[0] if clusters else None)


def observed_topic(name: str, partitions: int = 3, rf: int = 1, overrides: dict[str, str] | None = None,
                   defaults: dict[str, str] | None = None, internal: bool = False) -> ObservedTopic:
    configs = {k: ObservedConfig(v, ConfigSource.DEFAULT_CONFIG) for k, v in (defaults or {}).items()}
    configs.update({k: ObservedConfig(v, ConfigSource.DYNAMIC_TOPIC_CONFIG) for k, v in (overrides or {}).items()})
    assignment = tuple(tuple((p + r) % 3 + 1 for r in range(rf)) for p in range(partitions))
    return ObservedTopic(name, assignment, internal=internal, configs=configs)


def observed(*topics: ObservedTopic, brokers: int = 3, all_topics: bool = True, **fields: Any) -> ObservedState:
    return ObservedState(
        cluster_id="c1",
        controller_id=1,
        brokers={i: BrokerInfo(i, "127.0.0.1", 9000 + i) for i in range(1, brokers + 1)},
        topics={t.name: t for t in topics},
        all_topic_names=frozenset(t.name for t in topics) if all_topics else None,
        **fields,
    )
