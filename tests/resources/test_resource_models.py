"""Model construction: defaults, normalisation, ACL expansion, custom resources."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from resource_helpers import acl, broker_config, check, cluster, topic

from kafkaops.resources import (
    AclBinding,
    AclOperation,
    AclPermission,
    DeletionPolicy,
    FrozenDict,
    InvalidResourceError,
    KafkaAcl,
    KafkaBrokerConfig,
    KafkaCluster,
    KafkaTopic,
    PatternType,
    ResourceType,
    check_custom_resource,
    from_custom_resource,
)
from kafkaops.resources.schemas import inlined_schema


def only(result: Any) -> Any:
    (resource,) = result.valid
    return resource


def test_topic_defaults() -> None:
    body = topic("orders.events", partitions=None, replicationFactor=None)
    model = only(check(body))
    assert isinstance(model, KafkaTopic)
    assert model.topic_name == "orders.events"  # from metadata.name
    assert model.partitions is None and model.replication_factor is None  # broker defaults
    assert model.deletion_policy is None  # inherit from the cluster
    assert model.config == {} and model.replica_assignment is None
    assert model.source.kind == "KafkaTopic" and model.source.file == "test.yaml" and model.source.index == 0


def test_topic_name_from_spec_and_cluster_namespace_defaults_to_own() -> None:
    model = only(check(topic("daily-rollups", namespace="analytics", topicName="daily_rollups")))
    assert model.topic_name == "daily_rollups" and model.name == "daily-rollups"
    assert model.cluster_ref.name == "main" and model.cluster_ref.namespace == "analytics"
    explicit = topic("t", namespace="analytics")
    explicit["spec"]["clusterRef"]["namespace"] = "kafka"
    assert only(check(explicit)).cluster_ref.namespace == "kafka"


def test_deletion_policy_inherits_from_cluster() -> None:
    result = check(cluster("main", topicDeletion={"policy": "Delete"}), topic("a"), topic("b", deletionPolicy="Retain"))
    main, inherit, retain = result.valid
    assert inherit.effective_deletion_policy(main) == DeletionPolicy.DELETE
    assert retain.effective_deletion_policy(main) == DeletionPolicy.RETAIN
    assert inherit.effective_deletion_policy(None) == DeletionPolicy.RETAIN
    default_cluster = only(check(cluster("x")))
    assert inherit.effective_deletion_policy(default_cluster.spec) == DeletionPolicy.RETAIN


def test_config_values_are_normalised_to_strings() -> None:
    model = only(check(topic(config={"retention.ms": 86400000, "preallocate": True, "min.cleanable.dirty.ratio": 0.25,
                                     "unclean.leader.election.enable": False, "cleanup.policy": "compact"})))
    assert dict(model.config) == {"retention.ms": "86400000", "preallocate": "true", "min.cleanable.dirty.ratio": "0.25",
                                  "unclean.leader.election.enable": "false", "cleanup.policy": "compact"}
    assert isinstance(model.config, FrozenDict)
    assert hash(model) == hash(dataclasses.replace(model))


def test_replica_assignment_gives_partitions_and_replication_factor() -> None:
    model = only(check(topic(partitions=None, replicationFactor=None, replicaAssignment=[[1, 2], [2, 3], [3, 1]])))
    assert model.replica_assignment == ((1, 2), (2, 3), (3, 1))
    assert (model.desired_partitions, model.desired_replication_factor) == (3, 2)
    plain = only(check(topic(partitions=6, replicationFactor=3)))
    assert (plain.desired_partitions, plain.desired_replication_factor) == (6, 3)


def test_acl_expands_to_one_binding_per_operation_with_defaults() -> None:
    model = only(check(acl(principal="User:orders", acls=[
        {"resource": {"type": "Topic", "name": "orders."}, "operations": ["Read", "Write", "Read"]},
        {"resource": {"type": "Group", "name": "orders-", "patternType": "Prefixed"}, "operations": ["Read"],
         "host": "10.0.0.1", "permission": "Deny"},
    ])))
    assert isinstance(model, KafkaAcl)
    assert model.bindings == frozenset({
        AclBinding(ResourceType.TOPIC, "orders.", PatternType.LITERAL, "User:orders", "*", AclOperation.READ,
                   AclPermission.ALLOW),
        AclBinding(ResourceType.TOPIC, "orders.", PatternType.LITERAL, "User:orders", "*", AclOperation.WRITE,
                   AclPermission.ALLOW),
        AclBinding(ResourceType.GROUP, "orders-", PatternType.PREFIXED, "User:orders", "10.0.0.1", AclOperation.READ,
                   AclPermission.DENY),
    })
    assert model.entries[0].operations == (AclOperation.READ, AclOperation.WRITE)
    assert [b.resource_type for b in sorted(model.bindings)] == [ResourceType.GROUP, ResourceType.TOPIC, ResourceType.TOPIC]
    assert str(sorted(model.bindings)[0]) == "Deny User:orders Read on Group:orders- (Prefixed) from 10.0.0.1"


def test_acl_enums_carry_kafka_wire_codes() -> None:
    assert (ResourceType.TOPIC.code, ResourceType.GROUP.code, ResourceType.CLUSTER.code,
            ResourceType.TRANSACTIONAL_ID.code, ResourceType.DELEGATION_TOKEN.code) == (2, 3, 4, 5, 6)
    assert [op.code for op in AclOperation] == [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]
    assert (PatternType.LITERAL.code, PatternType.PREFIXED.code) == (3, 4)
    assert (AclPermission.DENY.code, AclPermission.ALLOW.code) == (2, 3)
    assert AclOperation.READ == "Read"


def test_empty_acl_list_means_no_bindings() -> None:
    assert only(check(acl(acls=[]))).bindings == frozenset()


def test_cluster_defaults() -> None:
    model = only(check(cluster("main", tls={}, sasl={"mechanism": "PLAIN", "credentialsSecretRef": {"name": "creds"}})))
    assert isinstance(model, KafkaCluster)
    spec = model.spec
    assert spec.bootstrap_servers == ("127.0.0.1:9092",)
    assert spec.topic_deletion.policy == DeletionPolicy.RETAIN and spec.topic_deletion.max_deletions_per_reconcile == 10
    assert spec.resync_interval == "5m" and spec.resync_interval_seconds == 300
    assert spec.tls is not None and spec.tls.enabled and spec.tls.verify_hostname and spec.tls.ca_secret_ref is None
    assert spec.sasl is not None and spec.sasl.credentials_secret_ref is not None
    creds = spec.sasl.credentials_secret_ref
    assert (creds.username_key, creds.password_key, creds.token_key) == ("username", "password", "token")
    assert spec.allowed_namespaces is None and spec.replication_throttle is None
    assert only(check(cluster("x", resyncInterval="1h30m"))).spec.resync_interval_seconds == 5400


def test_cluster_admission() -> None:
    model = only(check(cluster("prod", namespace="kafka", allowedNamespaces=[
        {"namespace": "orders", "topicPrefixes": ["orders."]}, {"namespace": "free"}])))
    assert model.admission_problem(None) is None
    assert model.admission_problem("kafka", "anything") is None  # the cluster's own namespace
    assert model.admission_problem("orders", "orders.events") is None
    assert "prefix" in model.admission_problem("orders", "payments.x")
    assert model.admission_problem("free", "whatever") is None
    assert "not in" in model.admission_problem("other")


def test_broker_config_model() -> None:
    default, one = check(broker_config("all", {"log.cleaner.threads": 2}),
                         broker_config("b1", {"log.cleaner.threads": "4"}, broker_id=1)).valid
    assert isinstance(default, KafkaBrokerConfig) and default.is_cluster_default and default.broker_id is None
    assert not one.is_cluster_default and one.broker_id == 1 and one.config == {"log.cleaner.threads": "4"}


def test_models_are_frozen() -> None:
    model = only(check(topic()))
    with pytest.raises(dataclasses.FrozenInstanceError):
        model.partitions = 5  # type: ignore[misc]


def test_from_custom_resource_builds_the_model_with_generation() -> None:
    body = topic("orders", namespace="team-a")
    body["metadata"].update(generation=7, uid="abc", resourceVersion="12")
    body["status"] = {"observedGeneration": 6, "conditions": [{"type": "Ready", "status": "True"}]}
    model = from_custom_resource(body)
    assert isinstance(model, KafkaTopic)
    assert model.generation == 7 and model.source.file is None and model.source.namespace == "team-a"


def test_from_custom_resource_raises_with_every_issue() -> None:
    body = topic("orders", partitions=0, config={"retention.msec": "1"})
    with pytest.raises(InvalidResourceError) as caught:
        from_custom_resource(body)
    rules = {(i.path, i.rule) for i in caught.value.issues}
    assert rules == {("spec.partitions", "InvalidPartitionCount"), ("spec.config.retention.msec", "UnknownConfigKey")}
    assert caught.value.reason in {"InvalidPartitionCount", "UnknownConfigKey"}
    assert "spec.partitions" in caught.value.message
    assert caught.value.issues[0].file is None and caught.value.issues[0].index is None


def test_check_custom_resource_keeps_warnings_of_a_valid_resource() -> None:
    checked = check_custom_resource(topic("internal", topicName="__internal"))
    assert checked.resource is not None and checked.errors == ()
    assert [w.rule for w in checked.warnings] == ["ReservedTopicName"]


def _schema_default(kind: str, *path: str) -> Any:
    node = inlined_schema(kind)["properties"]["spec"]
    for key in path:
        node = node["properties"][key] if "properties" in node else node["items"]["properties"][key]
    return node["default"]


def test_schema_defaults_match_model_defaults() -> None:
    spec = only(check(cluster("main", tls={"caSecretRef": {"name": "ca"}, "clientCertSecretRef": {"name": "c"}},
                              sasl={"mechanism": "PLAIN", "credentialsSecretRef": {"name": "creds"}}))).spec
    assert _schema_default("KafkaCluster", "tls", "enabled") == spec.tls.enabled
    assert _schema_default("KafkaCluster", "tls", "verifyHostname") == spec.tls.verify_hostname
    assert _schema_default("KafkaCluster", "tls", "caSecretRef", "key") == spec.tls.ca_secret_ref.key
    assert _schema_default("KafkaCluster", "tls", "clientCertSecretRef", "certKey") == spec.tls.client_cert_secret_ref.cert_key
    assert _schema_default("KafkaCluster", "tls", "clientCertSecretRef", "keyKey") == spec.tls.client_cert_secret_ref.key_key
    creds = spec.sasl.credentials_secret_ref
    for key, value in (("usernameKey", creds.username_key), ("passwordKey", creds.password_key),
                       ("tokenKey", creds.token_key)):
        assert _schema_default("KafkaCluster", "sasl", "credentialsSecretRef", key) == value
    assert _schema_default("KafkaCluster", "topicDeletion", "policy") == spec.topic_deletion.policy
    assert _schema_default("KafkaCluster", "topicDeletion", "maxDeletionsPerReconcile") == \
        spec.topic_deletion.max_deletions_per_reconcile
    assert _schema_default("KafkaCluster", "resyncInterval") == spec.resync_interval
    entry = only(check(acl())).entries[0]
    assert _schema_default("KafkaAcl", "acls", "resource", "patternType") == entry.pattern_type
    assert _schema_default("KafkaAcl", "acls", "host") == entry.host
    assert _schema_default("KafkaAcl", "acls", "permission") == entry.permission
