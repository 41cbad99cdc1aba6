"""`kafkaops convert --from strimzi`: Strimzi's own examples (tests/resources/strimzi/) and hand-made
v1beta2 documents in, kafkaops manifests that `kafkaops validate` accepts out; every field that is not
converted is reported with its path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kafkaops.cli.main import cli
from kafkaops.resources.convert_strimzi import ConvertOptions, StrimziDocument, convert, documents_of

STRIMZI = Path(__file__).resolve().parent / "strimzi"
EXAMPLES = sorted(STRIMZI.glob("*.yaml"))
KAFKA_CLUSTER = {"apiVersion": "kafkaops.io/v1alpha1", "kind": "KafkaCluster", "metadata": {"name": "prod"},
                 "spec": {"bootstrapServers": ["kafka:9092"]}}


def run(*args: str, stdin: str | None = None) -> Any:
    return CliRunner().invoke(cli, list(args), input=stdin)


def one(obj: dict[str, Any], **options: Any) -> tuple[dict[str, Any] | None, list[tuple[str, str, str]]]:
    """Convert one document: (manifest or None, [(severity, path, rule)])."""
    result = convert([StrimziDocument("in.yaml", 0, obj)], ConvertOptions(**options))
    manifest = result.converted[0].manifest if result.converted else None
    return manifest, [(str(i.severity), i.path, i.rule) for i in result.issues]


def strimzi(kind: str, spec: dict[str, Any], version: str = "v1beta2", **metadata: Any) -> dict[str, Any]:
    meta = {"name": "orders", "labels": {"strimzi.io/cluster": "my-cluster"}} | metadata
    return {"apiVersion": f"kafka.strimzi.io/{version}", "kind": kind, "metadata": meta, "spec": spec}


# --- Strimzi's own examples ------------------------------------------------------------------------

def test_the_example_topic_converts_exactly() -> None:
    result = run("convert", "--from", "strimzi", "-f", str(STRIMZI / "topic-kafka-topic.yaml"))
    assert result.exit_code == 0, result.output
    assert yaml.safe_load(result.stdout) == {
        "apiVersion": "kafkaops.io/v1alpha1", "kind": "KafkaTopic", "metadata": {"name": "my-topic"},
        "spec": {"clusterRef": {"name": "my-cluster"}, "partitions": 1, "replicationFactor": 1,
                 "config": {"retention.ms": 7200000, "segment.bytes": 1073741824}, "deletionPolicy": "Retain"}}
    assert result.stderr.strip() == ("converted 1 KafkaTopic and 0 KafkaAcls from 1 document; "
                                     "0 not converted or skipped (listed above), 0 errors")


def test_the_example_user_converts_exactly_and_reports_its_authentication() -> None:
    result = run("convert", "--from", "strimzi", "-f", str(STRIMZI / "user-kafka-user.yaml"), "--cluster", "prod")
    assert result.exit_code == 0, result.output
    assert yaml.safe_load(result.stdout) == {
        "apiVersion": "kafkaops.io/v1alpha1", "kind": "KafkaAcl", "metadata": {"name": "my-user"},
        "spec": {"clusterRef": {"name": "prod"}, "principal": "User:CN=my-user", "acls": [
            {"resource": {"type": "Topic", "name": "my-topic"}, "operations": ["Describe", "Read"]},
            {"resource": {"type": "Group", "name": "my-group"}, "operations": ["Read"]},
            {"resource": {"type": "Topic", "name": "my-topic"}, "operations": ["Create", "Write"]},
        ]}}
    (authentication, duplicate, summary) = result.stderr.strip().splitlines()
    where = f"{STRIMZI / 'user-kafka-user.yaml'}[0] KafkaUser/my-user"
    # The example grants Describe on my-topic in two rules; kafkaops lists a binding once.
    assert duplicate == (f"{where}: spec.authorization.acls[2].operations: Describe on my-topic is already granted "
                         "by spec.authorization.acls[0]: listed once (DuplicateAclBinding)")
    assert authentication.startswith(f"{where}: spec.authentication: not converted: kafkaops manages ACLs, not users")
    assert authentication.endswith("(NotConverted)")
    assert summary.startswith("converted 0 KafkaTopics and 1 KafkaAcl from 1 document; 2 not converted")


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_every_example_converts_and_passes_kafkaops_validate(tmp_path: Path, example: Path) -> None:
    out = tmp_path / "out"
    result = run("convert", "--from", "strimzi", "-f", str(example), "--cluster", "prod", "--output-dir", str(out))
    assert result.exit_code == 0, result.output
    written = sorted(out.rglob("*.yaml"))
    source = yaml.safe_load(example.read_text())
    expected_kind = "kafkatopic" if source["kind"] == "KafkaTopic" else "kafkaacl"
    assert [p.name for p in written] == [f"{expected_kind}-{source['metadata']['name']}.yaml"]
    (out / "cluster.yaml").write_text(yaml.safe_dump(KAFKA_CLUSTER))
    validated = run("validate", "--strict", str(out))
    assert validated.exit_code == 0, validated.output
    assert "0 errors, 0 warnings" in validated.output


def test_scram_users_keep_their_plain_name_as_principal() -> None:
    result = run("convert", "--from", "strimzi", "-f", str(STRIMZI / "security-scram-sha-512-auth-user.yaml"))
    assert yaml.safe_load(result.stdout)["spec"]["principal"] == "User:my-user"


def test_one_principal_twice_is_an_error_and_output_once(tmp_path: Path) -> None:
    # Two examples describe the same TLS user my-user: kafkaops allows one KafkaAcl per principal.
    result = run("convert", "--from", "strimzi", "-f", str(STRIMZI / "user-kafka-user.yaml"),
                 "-f", str(STRIMZI / "security-tls-auth-user.yaml"), "--output-dir", str(tmp_path))
    assert result.exit_code == 1
    assert "security-tls-auth-user.yaml[0] KafkaUser/my-user: spec.principal: User:CN=my-user on cluster " \
           "my-cluster is also converted from" in result.stderr
    assert [p.name for p in tmp_path.rglob("*.yaml")] == ["kafkaacl-my-user.yaml"]


# --- the mapping, field by field ---------------------------------------------------------------------

def test_topic_fields_and_what_is_reported() -> None:
    obj = strimzi("KafkaTopic", {"topicName": "orders.v1", "partitions": 12, "replicas": 3,
                                 "config": {"cleanup.policy": ["compact", "delete"], "retention.ms": "604800000",
                                            "unclean.leader.election.enable": False, "bad": {"a": 1}},
                                 "extra": 1},
                  namespace="kafka", uid="u-1", resourceVersion="7", generation=3, finalizers=["strimzi.io/topic-operator"],
                  annotations={"strimzi.io/pause-reconciliation": "true", "team": "orders",
                               "strimzi.io/something-new": "x",
                               "kubectl.kubernetes.io/last-applied-configuration": "{}"})
    obj["status"] = {"topicName": "orders.v1"}
    manifest, issues = one(obj)
    assert manifest == {
        "apiVersion": "kafkaops.io/v1alpha1", "kind": "KafkaTopic",
        "metadata": {"name": "orders", "namespace": "kafka",
                     "annotations": {"kafkaops.io/paused": "true", "team": "orders"}},
        "spec": {"clusterRef": {"name": "my-cluster"}, "topicName": "orders.v1", "partitions": 12,
                 "replicationFactor": 3, "config": {"cleanup.policy": "compact,delete", "retention.ms": "604800000",
                                                    "unclean.leader.election.enable": False},
                 "deletionPolicy": "Retain"}}
    assert sorted(issues) == sorted([
        ("warning", "status", "ServerField"),
        ("warning", "metadata.annotations[kubectl.kubernetes.io/last-applied-configuration]", "ServerField"),
        ("warning", "metadata.annotations[strimzi.io/something-new]", "NotConverted"),
        ("warning", "metadata.uid", "ServerField"),
        ("warning", "metadata.resourceVersion", "ServerField"),
        ("warning", "metadata.generation", "ServerField"),
        ("warning", "metadata.finalizers", "ServerField"),
        ("warning", "spec.config[bad]", "NotConverted"),
        ("warning", "spec.extra", "NotConverted"),
    ])


def test_managed_false_releases_and_deletion_policy_is_optional() -> None:
    obj = strimzi("KafkaTopic", {"partitions": 1}, annotations={"strimzi.io/managed": "false"})
    manifest, issues = one(obj, deletion_policy=None)
    assert manifest is not None and issues == []
    assert manifest["metadata"]["annotations"] == {"kafkaops.io/managed": "false"}
    assert "deletionPolicy" not in manifest["spec"]


def test_user_rules_every_variant() -> None:
    obj = strimzi("KafkaUser", {
        "authentication": {"type": "tls-external"},
        "quotas": {"producerByteRate": 1024},
        "template": {"secret": {"metadata": {"labels": {"a": "b"}}}},
        "authorization": {"type": "simple", "acls": [
            {"resource": {"type": "topic", "name": "orders-", "patternType": "prefix"},
             "operations": ["Read", "DESCRIBE"], "host": "10.0.0.1"},
            {"resource": {"type": "cluster"}, "operations": ["IdempotentWrite"]},
            {"resource": {"type": "transactionalId", "name": "tx-orders"}, "operation": "Write"},
            {"resource": {"type": "group", "name": "*", "patternType": "literal"}, "operations": ["Read"],
             "type": "deny"},
        ]}})
    manifest, issues = one(obj)
    assert manifest is not None
    assert manifest["spec"] == {"clusterRef": {"name": "my-cluster"}, "principal": "User:CN=orders", "acls": [
        {"resource": {"type": "Topic", "name": "orders-", "patternType": "Prefixed"},
         "operations": ["Read", "Describe"], "host": "10.0.0.1"},
        {"resource": {"type": "Cluster", "name": "kafka-cluster"}, "operations": ["IdempotentWrite"]},
        {"resource": {"type": "TransactionalId", "name": "tx-orders"}, "operations": ["Write"]},
        {"resource": {"type": "Group", "name": "*"}, "operations": ["Read"], "permission": "Deny"},
    ]}
    assert sorted(issues) == [("warning", "spec.authentication", "NotConverted"),
                              ("warning", "spec.quotas", "NotConverted"),
                              ("warning", "spec.template", "NotConverted")]


@pytest.mark.parametrize("obj,path,rule", [
    (strimzi("KafkaTopic", {"partitions": 1}, labels={}), "metadata.labels", "NoClusterRef"),
    (strimzi("KafkaUser", {"authorization": {"type": "opa"}}), "spec.authorization.type", "InvalidStrimziResource"),
    (strimzi("KafkaUser", {"authorization": {"type": "simple", "acls": [
        {"resource": {"type": "topic", "name": "a"}, "operations": ["Fly"]}]}}),
     "spec.authorization.acls[0].operations[0]", "InvalidStrimziResource"),
    (strimzi("KafkaUser", {"authorization": {"type": "simple", "acls": [
        {"resource": {"type": "topic"}, "operations": ["Read"]}]}}),
     "spec.authorization.acls[0].resource.name", "InvalidStrimziResource"),
    (strimzi("KafkaUser", {"authorization": {"type": "simple", "acls": [
        {"resource": {"type": "delegationToken", "name": "x"}, "operations": ["Read"]}]}}),
     "spec.authorization.acls[0].resource.type", "InvalidStrimziResource"),
    (strimzi("KafkaTopic", {"partitions": 1}, version="v1alpha9"), "apiVersion", "InvalidStrimziResource"),
], ids=["no-cluster", "opa", "operation", "no-name", "resource-type", "version"])
def test_what_cannot_be_converted_is_an_error_and_not_output(obj: dict[str, Any], path: str, rule: str) -> None:
    manifest, issues = one(obj)
    assert manifest is None
    assert ("error", path, rule) in issues


def test_cluster_option_overrides_the_label_and_supplies_a_missing_one() -> None:
    assert one(strimzi("KafkaTopic", {}), cluster="prod")[0]["spec"]["clusterRef"] == {"name": "prod"}
    assert one(strimzi("KafkaTopic", {}, labels={}), cluster="prod")[0]["spec"]["clusterRef"] == {"name": "prod"}


def test_user_without_authorization_outputs_nothing_and_says_so() -> None:
    manifest, issues = one(strimzi("KafkaUser", {"authentication": {"type": "scram-sha-512"}}))
    assert manifest is None
    assert ("warning", "spec", "NotConverted") in issues


def test_other_kinds_are_reported_as_skipped() -> None:
    result = convert(documents_of("in.yaml", [
        {"apiVersion": "kafka.strimzi.io/v1", "kind": "Kafka", "metadata": {"name": "my-cluster"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}},
    ]))
    assert result.converted == ()
    assert [(i.index, i.rule, i.is_error) for i in result.issues] == [(0, "SkippedKind", False),
                                                                      (1, "SkippedKind", False)]


# --- the command --------------------------------------------------------------------------------------

def test_kubectl_get_list_from_stdin() -> None:
    listed = {"apiVersion": "v1", "kind": "List", "items": [
        strimzi("KafkaTopic", {"partitions": 3}, name="a", namespace="kafka", uid="1"),
        strimzi("KafkaTopic", {"partitions": 6}, name="b", namespace="kafka", uid="2"),
    ]}
    result = run("convert", "--from", "strimzi", "-f", "-", "--deletion-policy", "none", stdin=yaml.safe_dump(listed))
    assert result.exit_code == 0, result.output
    docs = list(yaml.safe_load_all(result.stdout))
    assert [(d["metadata"]["name"], d["spec"]["partitions"]) for d in docs] == [("a", 3), ("b", 6)]
    assert all("deletionPolicy" not in d["spec"] for d in docs)
    assert "<stdin>[1] KafkaTopic/b: metadata.uid: not converted" in result.stderr


def test_output_dir_uses_namespaces_and_errors_exit_1_but_keep_the_rest(tmp_path: Path) -> None:
    source = tmp_path / "in.yaml"
    source.write_text(yaml.safe_dump_all([strimzi("KafkaTopic", {"partitions": 3}, namespace="kafka"),
                                          strimzi("KafkaTopic", {"partitions": 3}, name="lost", labels={})]))
    out = tmp_path / "out"
    result = run("convert", "--from", "strimzi", "-f", str(source), "--output-dir", str(out))
    assert result.exit_code == 1
    assert [p.relative_to(out).as_posix() for p in out.rglob("*.yaml")] == ["kafka/kafkatopic-orders.yaml"]
    assert f"{source}[1] KafkaTopic/lost: metadata.labels: no strimzi.io/cluster label" in result.stderr
    assert result.stderr.strip().splitlines()[-1].endswith(f"1 error; wrote 1 file under {out}")


def test_bad_yaml_and_missing_files_are_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [unclosed\n")
    result = run("convert", "--from", "strimzi", "-f", str(bad))
    assert result.exit_code == 1 and f"{bad}: not valid YAML" in result.stderr
    missing = run("convert", "--from", "strimzi", "-f", str(tmp_path / "nope.yaml"))
    assert missing.exit_code == 1 and "no such file or directory" in missing.output  # usage errors exit 1
