"""Semantic rules, one at a time (negative and positive), plus the rules across documents.

The invalid corpus (test_resource_corpus.py) holds one failing manifest per
case; here each rule also gets its passing neighbour, and the warnings and
cross-document rules, which need several documents, are checked.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from resource_helpers import acl, broker_config, check, cluster, rules, topic
from test_user_resources import PAIRS as USER_PAIRS

from kafkaops.resources import Severity, ValidationIssue, load_text, validate_documents
from kafkaops.resources import config_types, loader, schema_check
from kafkaops.resources import rules as rules_module
from kafkaops.resources import user_rules
from kafkaops.resources import set_rules as set_rules_module
from kafkaops.resources.rules import bootstrap_problem, topic_name_problem

CORPUS = Path(__file__).parent / "corpus"


# --- per-document rules: (rule, failing manifest, passing manifest, path) -----------------------

def _acl_entry(type_: str, name: str, *ops: str, **extra: Any) -> list[dict[str, Any]]:
    return [{"resource": {"type": type_, "name": name}, "operations": list(ops), **extra}]


PAIRS: list[tuple[str, str, dict[str, Any], dict[str, Any]]] = [
    ("InvalidTopicName", "spec.topicName", topic(topicName="a" * 250), topic(topicName="a" * 249)),
    ("InvalidTopicName", "spec.topicName", topic(topicName="orders events"), topic(topicName="Orders_events-v1.2")),
    ("InvalidTopicName", "spec.topicName", topic(topicName=".."), topic(topicName="...")),
    ("InvalidResourceName", "metadata.name", topic("Orders"), topic("orders")),
    ("InvalidNamespace", "metadata.namespace", topic(namespace="Team_A"), topic(namespace="team-a")),
    ("InvalidPartitionCount", "spec.partitions", topic(partitions=0), topic(partitions=1)),
    ("InvalidReplicationFactor", "spec.replicationFactor", topic(replicationFactor=0), topic(replicationFactor=1)),
    ("InvalidReplicationFactor", "spec.replicationFactor", topic(replicationFactor=32768),
     topic(replicationFactor=32767)),
    ("ReplicaAssignmentConflict", "spec.replicaAssignment", topic(replicaAssignment=[[1]]),
     topic(partitions=None, replicationFactor=None, replicaAssignment=[[1]])),
    ("UnevenReplicaAssignment", "spec.replicaAssignment[2]",
     topic(partitions=None, replicationFactor=None, replicaAssignment=[[1, 2], [2, 3], [3]]),
     topic(partitions=None, replicationFactor=None, replicaAssignment=[[1, 2], [2, 3], [3, 1]])),
    ("DuplicateReplica", "spec.replicaAssignment[0][2]",
     topic(partitions=None, replicationFactor=None, replicaAssignment=[[1, 2, 1]]),
     topic(partitions=None, replicationFactor=None, replicaAssignment=[[1, 2, 0]])),
    ("InvalidBrokerId", "spec.replicaAssignment[0][0]",
     topic(partitions=None, replicationFactor=None, replicaAssignment=[[-1]]),
     topic(partitions=None, replicationFactor=None, replicaAssignment=[[0]])),
    ("EmptyReplicaAssignment", "spec.replicaAssignment",
     topic(partitions=None, replicationFactor=None, replicaAssignment=[]),
     topic(partitions=None, replicationFactor=None, replicaAssignment=[[0]])),
    ("UnknownConfigKey", "spec.config.retention.msec", topic(config={"retention.msec": "1"}),
     topic(config={"retention.ms": "1"})),
    ("InvalidConfigValue", "spec.config.retention.ms", topic(config={"retention.ms": "1 week"}),
     topic(config={"retention.ms": " 604800000 "})),
    ("InvalidConfigValue", "spec.config.cleanup.policy", topic(config={"cleanup.policy": "compact,compact"}),
     topic(config={"cleanup.policy": "compact, delete"})),
    ("InvalidConfigValue", "spec.config.min.cleanable.dirty.ratio", topic(config={"min.cleanable.dirty.ratio": "half"}),
     topic(config={"min.cleanable.dirty.ratio": ".5"})),
    ("InvalidConfigValue", "spec.config.preallocate", topic(config={"preallocate": "yes"}),
     topic(config={"preallocate": "TRUE"})),
    ("InvalidConfigValue", "spec.config.compression.gzip.level", topic(config={"compression.gzip.level": 10}),
     topic(config={"compression.gzip.level": 9})),
    ("InvalidConfigValue", "spec.config.follower.replication.throttled.replicas",
     topic(config={"follower.replication.throttled.replicas": "0:a"}),
     topic(config={"follower.replication.throttled.replicas": "0:1, 1:2"})),
    ("ConfigValueOutOfRange", "spec.config.retention.ms", topic(config={"retention.ms": -2}),
     topic(config={"retention.ms": -1})),
    ("ConfigValueOutOfRange", "spec.config.min.cleanable.dirty.ratio", topic(config={"min.cleanable.dirty.ratio": -0.1}),
     topic(config={"min.cleanable.dirty.ratio": 0})),
    ("ConfigValueOutOfRange", "spec.config.compression.zstd.level", topic(config={"compression.zstd.level": 23}),
     topic(config={"compression.zstd.level": 22})),
    ("MinInsyncAboveReplicationFactor", "spec.config.min.insync.replicas",
     topic(replicationFactor=2, config={"min.insync.replicas": 3}),
     topic(replicationFactor=3, config={"min.insync.replicas": 3})),
    ("MinInsyncAboveReplicationFactor", "spec.config.min.insync.replicas",
     topic(partitions=None, replicationFactor=None, replicaAssignment=[[1]], config={"min.insync.replicas": 2}),
     topic(partitions=None, replicationFactor=None, config={"min.insync.replicas": 2})),  # broker default RF: unknown
    ("CompactionLagConflict", "spec.config.min.compaction.lag.ms",
     topic(config={"min.compaction.lag.ms": 2, "max.compaction.lag.ms": 1}),
     topic(config={"min.compaction.lag.ms": 1, "max.compaction.lag.ms": 1})),
    ("RemoteStorageRequiresDeletePolicy", "spec.config.remote.storage.enable",
     topic(config={"remote.storage.enable": True, "cleanup.policy": "delete,compact"}),
     topic(config={"remote.storage.enable": False, "cleanup.policy": "compact"})),
    ("LocalRetentionExceedsRetention", "spec.config.local.retention.bytes",
     topic(config={"remote.storage.enable": "true", "retention.bytes": 10, "local.retention.bytes": -1}),
     topic(config={"remote.storage.enable": "true", "retention.bytes": 10, "local.retention.bytes": 10})),
    ("InvalidPrincipal", "spec.principal", acl(principal="User"), acl(principal="User:*")),
    ("InvalidPrincipal", "spec.principal", acl(principal=":orders"), acl(principal="Group:orders")),
    ("InvalidAclHost", "spec.acls[0].host", acl(acls=_acl_entry("Topic", "t", "Read", host="10.0.0.300")),
     acl(acls=_acl_entry("Topic", "t", "Read", host="::1"))),
    ("OperationNotValidForResource", "spec.acls[0].operations[0]", acl(acls=_acl_entry("Topic", "t", "IdempotentWrite")),
     acl(acls=_acl_entry("Cluster", "kafka-cluster", "IdempotentWrite"))),
    ("OperationNotValidForResource", "spec.acls[0].operations[1]",
     acl(acls=_acl_entry("Group", "g", "Read", "CreateTokens")), acl(acls=_acl_entry("Group", "g", "Read", "Delete"))),
    ("InvalidClusterResourceName", "spec.acls[0].resource.name", acl(acls=_acl_entry("Cluster", "*", "Describe")),
     acl(acls=_acl_entry("Cluster", "kafka-cluster", "Describe"))),
    ("InvalidBrokerId", "spec.brokerId", broker_config(broker_id=-1), broker_config(broker_id=0)),
    ("InvalidBrokerConfigKey", "spec.config.log..retention", broker_config(config={"log..retention": 1}),
     broker_config(config={"log.retention.ms": 1})),
    ("InvalidConfigValue", "spec.config.log.preallocate", broker_config(config={"log.preallocate": "maybe"}),
     broker_config(config={"log.preallocate": True})),
    ("InvalidBootstrapServer", "spec.bootstrapServers[0]", cluster(bootstrapServers=["::1:9092"]),
     cluster(bootstrapServers=["[::1]:9092"])),
    ("InvalidBootstrapServer", "spec.bootstrapServers[0]", cluster(bootstrapServers=["a:1,b:2"]),
     cluster(bootstrapServers=["a:1", "b:2"])),
    ("InvalidDuration", "spec.resyncInterval", cluster(resyncInterval="5"), cluster(resyncInterval="500ms")),
    ("InvalidMaxDeletions", "spec.topicDeletion.maxDeletionsPerReconcile",
     cluster(topicDeletion={"maxDeletionsPerReconcile": -5}), cluster(topicDeletion={"maxDeletionsPerReconcile": 0})),
    ("InvalidSaslMechanism", "spec.sasl.mechanism", cluster(sasl={"mechanism": "scram-sha-512"}),
     cluster(sasl={"mechanism": "SCRAM-SHA-512"})),
    ("InvalidReplicationThrottle", "spec.replicationThrottle", cluster(replicationThrottle=-1),
     cluster(replicationThrottle=1)),
    ("InvalidTopicPrefix", "spec.allowedNamespaces[0].topicPrefixes[0]",
     cluster(allowedNamespaces=[{"namespace": "a", "topicPrefixes": ["a/"]}]),
     cluster(allowedNamespaces=[{"namespace": "a", "topicPrefixes": ["a."]}])),
    ("SchemaViolation", "spec.partitions", topic(partitions="3"), topic(partitions=3)),
    ("SchemaViolation", "spec.clusterRef.name", topic(clusterRef={"name": ""}), topic(clusterRef={"name": "main"})),
]


@pytest.mark.parametrize(("rule", "path", "bad", "good"), PAIRS, ids=[f"{p[0]}-{i}" for i, p in enumerate(PAIRS)])
def test_rule_fails_bad_and_passes_good(rule: str, path: str, bad: dict[str, Any], good: dict[str, Any]) -> None:
    failing = check(bad)
    assert (path, rule) in rules(failing), [str(i) for i in failing.errors]
    assert failing.valid == () and len(failing.invalid) == 1
    passing = check(good)
    assert passing.errors == (), [str(i) for i in passing.errors]
    assert len(passing.valid) == 1


# --- warnings: reported, but the resource stays valid ---------------------------------------------

WARNINGS: list[tuple[str, str, dict[str, Any], dict[str, Any]]] = [
    ("ReservedTopicName", "spec.topicName", topic(topicName="__offsets"), topic(topicName="_offsets")),
    ("DeprecatedConfigKey", "spec.config.message.format.version", topic(config={"message.format.version": "2.8"}),
     topic(config={"message.timestamp.type": "CreateTime"})),
    ("DeprecatedConfigKey", "spec.config.message.timestamp.difference.max.ms",
     topic(config={"message.timestamp.difference.max.ms": 1}), topic(config={"message.timestamp.before.max.ms": 1})),
    ("RejectedByKafka4", "spec.config.segment.bytes", topic(config={"segment.bytes": 1048575}),
     topic(config={"segment.bytes": 1048576})),
    ("UnquotedConfigValue", "spec.config.message.format.version", topic(config={"message.format.version": 3.0}),
     topic(config={"compression.type": "lz4"})),
    ("UnknownBrokerConfigKey", "spec.config.log.cleaner.thread", broker_config(config={"log.cleaner.thread": 1}),
     broker_config(config={"log.cleaner.threads": 1})),
    ("UnknownBrokerConfigKey", "spec.config.retention.ms", broker_config(config={"retention.ms": 1}),
     broker_config(config={"listener.name.internal.ssl.keystore.type": "PKCS12"})),
    ("DuplicateAclBinding", "spec.acls[1].operations[0]",
     acl(acls=_acl_entry("Topic", "t", "Read") + _acl_entry("Topic", "t", "Read", host="*")),
     acl(acls=_acl_entry("Topic", "t", "Read") + _acl_entry("Topic", "t", "Read", permission="Deny"))),
    ("RedundantAclOperation", "spec.acls[0].operations", acl(acls=_acl_entry("Topic", "t", "All", "Read")),
     acl(acls=_acl_entry("Topic", "t", "All"))),
    ("WildcardWithPrefixedPattern", "spec.acls[0].resource.name",
     acl(acls=[{"resource": {"type": "Topic", "name": "*", "patternType": "Prefixed"}, "operations": ["Read"]}]),
     acl(acls=[{"resource": {"type": "Topic", "name": "*", "patternType": "Literal"}, "operations": ["Read"]}])),
]


@pytest.mark.parametrize(("rule", "path", "bad", "good"), WARNINGS, ids=[f"{w[0]}-{i}" for i, w in enumerate(WARNINGS)])
def test_warning_is_reported_but_resource_stays_valid(rule: str, path: str, bad: dict[str, Any],
                                                      good: dict[str, Any]) -> None:
    warned = check(bad)
    assert warned.errors == () and len(warned.valid) == 1
    assert (path, rule) in rules(warned, "warning")
    assert check(good).warnings == ()


def test_did_you_mean_suggestions() -> None:
    result = check(topic(config={"retention.msec": 1, "message.max.bytes": 1, "log.segment.bytes": 1048576,
                                 "zzz": 1}),
                   broker_config(config={"log.cleaner.thread": 1}))
    reasons = {i.path: i.reason for i in result.issues}
    assert reasons["spec.config.retention.msec"].endswith("did you mean retention.ms?")
    assert reasons["spec.config.message.max.bytes"].endswith("did you mean max.message.bytes?")
    assert reasons["spec.config.log.segment.bytes"].endswith("did you mean segment.bytes?")
    assert "did you mean" not in reasons["spec.config.zzz"]
    assert reasons["spec.config.log.cleaner.thread"].endswith("did you mean log.cleaner.threads?")
    misspelt = check(topic(partiton=3))
    assert ("spec.partiton", "SchemaViolation") in rules(misspelt)
    assert "did you mean 'partitions'?" in misspelt.errors[0].reason


def test_every_error_of_a_document_is_collected_with_its_path() -> None:
    bad = topic(partitions=0, replicationFactor=0, topicName="a b", deletionPolicy="Keep",
                config={"retention.ms": "x", "segment.bytes": 1, "nope": 1})
    assert rules(check(bad)) == {
        ("spec.partitions", "InvalidPartitionCount"),
        ("spec.replicationFactor", "InvalidReplicationFactor"),
        ("spec.topicName", "InvalidTopicName"),
        ("spec.deletionPolicy", "SchemaViolation"),
        ("spec.config.retention.ms", "InvalidConfigValue"),
        ("spec.config.segment.bytes", "ConfigValueOutOfRange"),
        ("spec.config.nope", "UnknownConfigKey"),
    }


def test_one_issue_per_path_when_a_rule_and_the_schema_agree() -> None:
    issues = check(topic(partitions=0)).errors
    assert [(i.path, i.rule) for i in issues] == [("spec.partitions", "InvalidPartitionCount")]


def test_missing_required_fields_are_named_one_by_one() -> None:
    body = acl()
    del body["spec"]["principal"], body["spec"]["acls"]
    assert rules(check(body)) == {("spec.principal", "SchemaViolation"), ("spec.acls", "SchemaViolation")}


def test_wrong_types_say_what_was_expected() -> None:
    result = check(cluster(bootstrapServers="a:1,b:2"), topic(config={"retention.ms": None}))
    reasons = {i.path: i.reason for i in result.errors}
    assert reasons["spec.bootstrapServers"] == "expected array, got string 'a:1,b:2'; give a list with one host:port per item"
    assert "cannot be empty (null)" in reasons["spec.config.retention.ms"]


def test_status_from_kubernetes_is_accepted() -> None:
    body = topic()
    body["status"] = {"observedGeneration": 2, "conditions": [{"type": "Ready", "status": "True", "reason": "Synced"}],
                      "topicId": "abc", "partitions": 3, "somethingNew": {"x": 1}}
    assert check(body).errors == ()


def test_issue_names_file_index_kind_name_path_line_and_rule() -> None:
    text = "apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n---\n" + \
        "apiVersion: kafkaops.io/v1alpha1\nkind: KafkaTopic\nmetadata:\n  name: orders\nspec:\n" \
        "  clusterRef: {name: main}\n  config:\n    retention.ms: forever\n"
    from kafkaops.resources import validate_load
    (issue,) = validate_load(load_text(text, "teams/orders.yaml")).errors
    assert isinstance(issue, ValidationIssue)
    assert (issue.severity, issue.file, issue.index, issue.kind, issue.name, issue.path, issue.rule, issue.line) == (
        Severity.ERROR, "teams/orders.yaml", 1, "KafkaTopic", "orders", "spec.config.retention.ms",
        "InvalidConfigValue", 12)
    assert str(issue) == ("teams/orders.yaml[1] KafkaTopic/orders: spec.config.retention.ms: 'forever' is not a valid "
                          "long (a whole number from -9223372036854775808 to 9223372036854775807) (InvalidConfigValue)")
    assert issue.to_dict()["line"] == 12 and issue.to_dict()["namespace"] is None


def test_validate_documents_is_pure_and_lists_every_issue() -> None:
    docs = load_text("\n---\n".join([_yaml(topic("a", partitions=0)), _yaml(topic("b"))]), "x.yaml").documents
    first = validate_documents(docs)
    assert first == validate_documents(docs)
    assert [(i.index, i.rule) for i in first] == [(0, "InvalidPartitionCount")]


def _yaml(doc: dict[str, Any]) -> str:
    import yaml

    return yaml.safe_dump(doc)


def test_helpers() -> None:
    assert topic_name_problem("a" * 249) is None and topic_name_problem("") is not None
    assert bootstrap_problem("kafka:9092") is None and bootstrap_problem("[::1]:9092") is None
    assert bootstrap_problem("[nothex]:9092") is not None and bootstrap_problem(":9092") is not None
    assert bootstrap_problem("-bad-:9092") is not None


# --- one bad item never stops the others -----------------------------------------------------------

def test_batch_is_split_into_valid_and_invalid() -> None:
    result = check(cluster(), topic("good-1"), topic("bad", partitions=0), acl(principal="nobody"), topic("good-2"),
                   broker_config())
    assert [r.name for r in result.valid] == ["main", "good-1", "good-2", "brokers"]
    assert sorted(s.name for s in result.invalid) == ["bad", "orders"]
    bad_source = next(s for s in result.invalid if s.name == "bad")
    assert [i.rule for i in result.invalid[bad_source]] == ["InvalidPartitionCount"]
    assert result.issues_for(bad_source) == result.invalid[bad_source]
    assert not result.ok
    assert len(result.topics()) == 2 and len(result.clusters()) == 1 and result.acls() == ()
    assert len(result.broker_configs()) == 1


def test_yaml_errors_are_kept_without_invalidating_other_documents() -> None:
    from kafkaops.resources import validate_load

    text = _yaml(topic("good")) + "---\nkind: [\n"
    result = validate_load(load_text(text, "x.yaml"))
    assert [r.name for r in result.valid] == ["good"] and result.invalid == {}
    assert [e.rule for e in result.errors] == ["YamlSyntaxError"]


# --- rules across documents -------------------------------------------------------------------------

def test_duplicate_topic_across_files_names_both_places() -> None:
    text_a = _yaml(cluster())
    text_b = _yaml(topic("orders"))
    text_c = _yaml(topic("orders-again", topicName="orders"))
    from kafkaops.resources import validate_set

    docs = (load_text(text_a, "a.yaml").documents + load_text(text_b, "teams/b.yaml").documents
            + load_text(text_c, "teams/c.yaml").documents)
    result = validate_set(docs)
    dupes = [i for i in result.errors if i.rule == "DuplicateTopic"]
    assert {(i.file, i.path) for i in dupes} == {("teams/b.yaml", "metadata.name"), ("teams/c.yaml", "spec.topicName")}
    assert "teams/c.yaml[0] KafkaTopic/orders-again" in next(i.reason for i in dupes if i.file == "teams/b.yaml")
    assert "teams/b.yaml[0] KafkaTopic/orders" in next(i.reason for i in dupes if i.file == "teams/c.yaml")
    assert [r.name for r in result.valid] == ["main"]


def test_same_topic_name_on_two_clusters_is_fine() -> None:
    assert check(cluster("a"), cluster("b"), topic("t1", "a", topicName="x"), topic("t2", "b", topicName="x")).ok


def test_duplicate_acl_principal_and_broker_config_and_cluster() -> None:
    result = check(cluster("main"), cluster("main"), acl("a", "User:x"), acl("b", "User:x"), acl("c", "User:y"),
                   broker_config("d1"), broker_config("d2"), broker_config("b1", broker_id=1),
                   broker_config("b1-again", broker_id=1), broker_config("b2", broker_id=2))
    found = [(i.name, i.path, i.rule) for i in result.errors]
    assert found.count(("main", "metadata.name", "DuplicateCluster")) == 2
    assert {("a", "spec.principal", "DuplicateAclPrincipal"), ("b", "spec.principal", "DuplicateAclPrincipal"),
            ("d1", "spec", "DuplicateBrokerConfig"), ("d2", "spec", "DuplicateBrokerConfig"),
            ("b1", "spec.brokerId", "DuplicateBrokerConfig"),
            ("b1-again", "spec.brokerId", "DuplicateBrokerConfig")} <= set(found)
    assert {r.name for r in result.valid} == {"c", "b2"}


def test_duplicate_kubernetes_object_in_one_namespace() -> None:
    result = check(cluster(), topic("t", namespace="ns", topicName="one"), topic("t", namespace="ns", topicName="two"),
                   topic("t", namespace="other", topicName="three"))
    assert [(i.to_dict()["namespace"], i.name, i.rule) for i in result.errors] == [
        ("ns", "t", "DuplicateResourceName"), ("ns", "t", "DuplicateResourceName")]


def test_unknown_cluster_ref_only_when_clusters_are_in_the_set() -> None:
    assert ("spec.clusterRef.name", "UnknownClusterRef") in rules(check(cluster("main"), topic(cluster_name="other")))
    alone = check(topic(cluster_name="other"))  # e.g. kafkaops apply --bootstrap-server: no KafkaCluster at all
    assert alone.ok and len(alone.valid) == 1


def test_cluster_ref_namespaces() -> None:
    in_kafka = cluster("prod", namespace="kafka")
    ok_ref = topic("a", "prod", namespace="team")
    ok_ref["spec"]["clusterRef"]["namespace"] = "kafka"
    same_ns = topic("b", "prod", namespace="kafka")
    wrong_ns = topic("c", "prod", namespace="team")  # defaults to its own namespace: team/prod does not exist
    no_ns = topic("d", "prod")  # files without namespaces match by name
    result = check(in_kafka, ok_ref, same_ns, wrong_ns, no_ns)
    assert [(i.name, i.rule) for i in result.errors] == [("c", "UnknownClusterRef")]
    assert "in namespace 'team'" in result.errors[0].reason


def test_topic_name_collision_is_a_warning_naming_the_other() -> None:
    result = check(cluster(), topic("a", topicName="orders.events"), topic("b", topicName="orders_events"))
    assert result.ok and len(result.valid) == 3
    assert [(i.name, i.rule) for i in result.warnings] == [("a", "TopicNameCollision"), ("b", "TopicNameCollision")]
    assert "'orders_events'" in result.warnings[0].reason


def test_allowed_namespaces_and_topic_prefixes() -> None:
    prod = cluster("prod", namespace="kafka", allowedNamespaces=[{"namespace": "orders", "topicPrefixes": ["orders."]}])

    def ref(doc: dict[str, Any]) -> dict[str, Any]:
        doc["spec"]["clusterRef"]["namespace"] = "kafka"
        return doc

    result = check(
        prod,
        ref(topic("orders.ok", "prod", namespace="orders")),
        ref(topic("payments.x", "prod", namespace="orders")),
        ref(topic("anything", "prod", namespace="payments")),
        ref(acl("acl", "User:x", cluster_name="prod", namespace="payments")),
        topic("platform.internal", "prod", namespace="kafka"),
    )
    assert sorted((i.name, i.path, i.rule) for i in result.errors) == [
        ("acl", "spec.clusterRef", "NamespaceNotAllowed"),
        ("anything", "spec.clusterRef", "NamespaceNotAllowed"),
        ("payments.x", "metadata.name", "TopicPrefixNotAllowed"),
    ]
    assert {r.name for r in result.valid} == {"prod", "orders.ok", "platform.internal"}


# --- every rule is exercised ------------------------------------------------------------------------

def _rule_constants(module: Any) -> set[str]:
    camel = re.compile(r"(?:[A-Z][a-z0-9]*)+")
    return {value for name, value in vars(module).items()
            if name.isupper() and not name.startswith("KAFKA_") and isinstance(value, str) and camel.fullmatch(value)}


def test_every_rule_is_exercised_by_a_test_or_the_corpus() -> None:
    corpus_rules = {m.group(1) for f in (CORPUS / "invalid").glob("*.yaml")
                    for m in [re.search(r"^# expect: \S+ (\S+)$", f.read_text(), re.M)] if m}
    tested = ({p[0] for p in PAIRS} | {w[0] for w in WARNINGS} | corpus_rules | {p[0] for p in USER_PAIRS}
              | {"DuplicateUser", "DuplicateQuotaEntity"}  # test_user_resources.py
              | {"DuplicateTopic", "DuplicateAclPrincipal", "DuplicateBrokerConfig", "DuplicateCluster",
                 "DuplicateResourceName", "UnknownClusterRef", "TopicNameCollision", "NamespaceNotAllowed",
                 "TopicPrefixNotAllowed", "SchemaViolation"}
              | {"YamlSyntaxError", "DuplicateYamlKey", "UnknownKind", "UnsupportedApiVersion", "FileNotFound",
                 "UnreadableFile"})  # test_resource_loader.py
    declared = _rule_constants(rules_module) | _rule_constants(set_rules_module) | _rule_constants(config_types)
    declared |= _rule_constants(loader) | _rule_constants(schema_check) | _rule_constants(user_rules)
    declared -= {"SASL_MECHANISMS"}
    assert len(declared) > 40
    assert declared - tested == set()
