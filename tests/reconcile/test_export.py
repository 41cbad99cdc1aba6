"""`kafkaops export`: the pure export (hand-built observed states) and export-then-plan on
noida and on the fake cluster double. The contract: what is exported validates, and planning
it against the cluster it came from reports no changes."""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Iterator
from dataclasses import replace

import pytest
import yaml
from click.testing import CliRunner

from kafkaops import kafka
from kafkaops.cli import export as export_cli
from kafkaops.cli.main import cli
from kafkaops.cli.targets import client_settings
from kafkaops.kafka import (
    AdminClient,
    AlterConfigOp,
    Batcher,
    ConfigResource,
    ConfigSource,
    KafkaError,
    NewTopic,
)
from kafkaops.reconcile import DesiredState, Engine, RunOptions
from kafkaops.reconcile.acls import split_acls
from kafkaops.reconcile.export import (
    ACLS,
    TOPICS,
    ClusterAccess,
    ExportResult,
    export_documents,
    files_by_kind,
    is_k8s_name,
    principal_resource_names,
    sanitise,
    to_yaml,
    topic_resource_names,
)
from kafkaops.kafka import BrokerInfo
from kafkaops.reconcile.observed import ObservedConfig, ObservedState, ObservedTopic
from kafkaops.reconcile.plan import plan
from kafkaops.resources import KafkaAcl, KafkaCluster, KafkaTopic, ValidatedSet, load_and_validate, load_text
from kafkaops.resources.acl import AclBinding, AclOperation, AclPermission, PatternType, ResourceType
from kafkaops.resources.validation import validate_set
from kafkaops.testing.fake_cluster import FakeClusterDouble

SECRET = "hunter2-do-not-print"


# --- builders ----------------------------------------------------------------------------------


def cfg(value: str | None, source: ConfigSource = ConfigSource.DYNAMIC_TOPIC_CONFIG, sensitive: bool = False) -> ObservedConfig:
    return ObservedConfig(value, source, sensitive)


def topic(name: str, partitions: int = 3, rf: int = 1, internal: bool = False, **configs: ObservedConfig) -> ObservedTopic:
    replicas = tuple(range(1, rf + 1))
    return ObservedTopic(name, tuple(replicas for _ in range(partitions)), internal=internal,
                         configs={k.replace("_", "."): v for k, v in configs.items()})


def binding(principal: str, rtype: ResourceType, name: str, op: AclOperation, pattern: PatternType = PatternType.LITERAL,
            host: str = "*", permission: AclPermission = AclPermission.ALLOW) -> AclBinding:
    return AclBinding(rtype, name, pattern, principal, host, op, permission)


def state(topics: list[ObservedTopic] = (), acls: list[AclBinding] | None = (),
          broker_configs: dict[str, dict[str, ObservedConfig]] | None = None, acls_error: KafkaError | None = None,
          brokers: int = 3) -> ObservedState:
    by_principal: dict[str, frozenset[AclBinding]] | None = None
    if acls is not None:
        grouped: dict[str, set[AclBinding]] = {}
        for b in acls:
            grouped.setdefault(b.principal, set()).add(b)
        by_principal = {p: frozenset(bs) for p, bs in grouped.items()}
    return ObservedState(
        cluster_id="test-cluster-id",
        controller_id=1,
        brokers={i: BrokerInfo(i, "127.0.0.1", 9091 + i) for i in range(1, brokers + 1)},
        topics={t.name: t for t in topics},
        all_topic_names=frozenset(t.name for t in topics),
        acls=by_principal,
        acls_error=acls_error,
        broker_configs=broker_configs or {},
    )


def export(observed: ObservedState, **kwargs) -> ExportResult:
    kwargs.setdefault("cluster_name", "prod")
    kwargs.setdefault("bootstrap_servers", ["127.0.0.1:9092"])
    return export_documents(observed, **kwargs)


def validated(result: ExportResult) -> ValidatedSet:
    """The export as `kafkaops validate` sees it; fails the test on any error."""
    loaded = load_text(to_yaml(result.documents, origin=result.origin), "export.yaml")
    checked = validate_set(loaded.documents, loaded.errors)
    assert not checked.errors, [str(e) for e in checked.errors]
    assert len(checked.valid) == len(result.documents)
    return checked


def desired_of(checked: ValidatedSet) -> DesiredState:
    return DesiredState.of(r for r in checked.valid if not isinstance(r, KafkaCluster))


def spec_of(result: ExportResult, kind: str, name: str) -> dict:
    return next(d["spec"] for d in result.of_kind(kind) if d["metadata"]["name"] == name)


def assert_no_secret(result: ExportResult, secret: str = SECRET) -> None:
    assert secret not in to_yaml(result.documents, origin=result.origin)
    assert not any(secret in note for note in result.notes)


# --- the pure export -----------------------------------------------------------------------------


def test_topic_exports_only_overrides_and_plans_no_changes():
    observed = state([topic(
        "orders.v1", partitions=6, rf=3,
        retention_ms=cfg("604800000"),
        cleanup_policy=cfg("compact,delete"),
        segment_ms=cfg("604800000", ConfigSource.DEFAULT_CONFIG),
        compression_type=cfg("producer", ConfigSource.STATIC_BROKER_CONFIG),
        min_insync_replicas=cfg("2", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
    )])
    result = export(observed)
    spec = spec_of(result, "KafkaTopic", "orders.v1")
    assert spec == {"clusterRef": {"name": "prod"}, "partitions": 6, "replicationFactor": 3,
                    "config": {"cleanup.policy": "compact,delete", "retention.ms": "604800000"}}
    assert result.notes == ()
    checked = validated(result)
    assert not plan(desired_of(checked), observed).has_changes


def test_cluster_document_comes_first_and_carries_tls_and_sasl_but_no_credentials():
    result = export(state(), cluster_name="prod", bootstrap_servers=["k1:9093", "k2:9093"],
                    access=ClusterAccess(tls=True, verify_hostname=False, sasl_mechanism="SCRAM-SHA-512"))
    cluster = result.documents[0]
    assert cluster["kind"] == "KafkaCluster" and cluster["metadata"] == {"name": "prod"}
    assert cluster["spec"] == {"bootstrapServers": ["k1:9093", "k2:9093"],
                               "tls": {"enabled": True, "verifyHostname": False},
                               "sasl": {"mechanism": "SCRAM-SHA-512"}}
    assert "topicDeletion" not in cluster["spec"]  # Retain, the default
    checked = validated(result)
    assert checked.clusters()[0].spec.topic_deletion.policy == "Retain"


def test_cluster_access_of_security_settings():
    sasl_ssl = kafka.SecuritySettings(protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-256", sasl_username="u",
                                      sasl_password=SECRET)
    assert ClusterAccess.of(sasl_ssl) == ClusterAccess(tls=True, verify_hostname=True, sasl_mechanism="SCRAM-SHA-256")
    assert SECRET not in repr(ClusterAccess.of(sasl_ssl))
    assert ClusterAccess.of(kafka.SecuritySettings()) == ClusterAccess()


def test_invalid_cluster_name_or_bootstrap_is_refused():
    with pytest.raises(ValueError, match="not a valid Kubernetes name"):
        export(state(), cluster_name="Prod_1")
    with pytest.raises(ValueError, match="would not validate"):
        export(state(), bootstrap_servers=["kafka:notaport"])
    with pytest.raises(ValueError, match="cannot include"):
        export(state(), include=frozenset({"topics", "users"}))


def test_sensitive_configs_are_never_written_and_are_noted_by_name():
    observed = state(
        [topic("secrets.topic", **{"retention_ms": cfg("1000"), "some_password": cfg(SECRET)})],
        broker_configs={
            "": {"log.retention.ms": cfg("86400000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
                 "sasl.jaas.config": cfg(None, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, sensitive=True)},
            # flagged by name although the broker did not flag it (defence in depth)
            "2": {"listener.name.internal.ssl.keystore.password": cfg(SECRET, ConfigSource.DYNAMIC_BROKER_CONFIG)},
        },
    )
    result = export(observed)
    assert spec_of(result, "KafkaTopic", "secrets.topic")["config"] == {"retention.ms": "1000"}
    defaults = spec_of(result, "KafkaBrokerConfig", "prod-broker-defaults")
    assert defaults["config"] == {"log.retention.ms": "86400000"} and "brokerId" not in defaults
    assert not any(d["spec"].get("brokerId") == 2 for d in result.of_kind("KafkaBrokerConfig"))  # nothing else left
    notes = "\n".join(result.notes)
    for key in ("some.password", "sasl.jaas.config", "listener.name.internal.ssl.keystore.password"):
        assert f"sensitive config {key} not exported" in notes
    assert_no_secret(result)
    checked = validated(result)
    assert not plan(desired_of(checked), observed).has_changes


def test_broker_configs_one_per_broker_with_overrides_in_order():
    observed = state(broker_configs={
        "": {"log.cleaner.threads": cfg("2", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
             "num.io.threads": cfg("8", ConfigSource.STATIC_BROKER_CONFIG)},
        "10": {"log.cleaner.threads": cfg("4", ConfigSource.DYNAMIC_BROKER_CONFIG)},
        "2": {"log.cleaner.threads": cfg("3", ConfigSource.DYNAMIC_BROKER_CONFIG),
              "log.retention.ms": cfg("1000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)},  # inherited: not broker 2's
        "3": {"log.cleaner.threads": cfg("2", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)},  # nothing of its own
    }, brokers=10)
    result = export(observed)
    configs = result.of_kind("KafkaBrokerConfig")
    assert [d["metadata"]["name"] for d in configs] == ["prod-broker-defaults", "prod-broker-2", "prod-broker-10"]
    assert [d["spec"].get("brokerId") for d in configs] == [None, 2, 10]
    assert configs[1]["spec"]["config"] == {"log.cleaner.threads": "3"}
    checked = validated(result)
    assert not plan(desired_of(checked), observed).has_changes


def test_config_values_validation_would_reject_are_dropped_with_a_note():
    observed = state(
        [topic("odd", rf=1, min_insync_replicas=cfg("2"), retention_ms=cfg("1000"), no_such_key=cfg("1"),
               min_compaction_lag_ms=cfg("5000"), max_compaction_lag_ms=cfg("10"))],
        broker_configs={"": {"log.cleaner.threads": cfg("many", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)}},
    )
    result = export(observed)
    config = spec_of(result, "KafkaTopic", "odd")["config"]
    assert "retention.ms" in config and "max.compaction.lag.ms" in config
    assert not {"min.insync.replicas", "no.such.key", "min.compaction.lag.ms"} & set(config)
    notes = "\n".join(result.notes)
    assert "config min.insync.replicas not exported" in notes and "MinInsyncAboveReplicationFactor" in notes
    assert "config no.such.key not exported" in notes and "config min.compaction.lag.ms not exported" in notes
    assert not result.of_kind("KafkaBrokerConfig")  # its only key was invalid: no empty document
    assert "config log.cleaner.threads not exported" in notes
    checked = validated(result)
    assert not plan(desired_of(checked), observed).has_changes


def test_names_that_are_not_kubernetes_names_are_sanitised_with_a_hash_and_topic_name():
    names = ["orders.v1", "Orders.V1", "orders_v1", "orders-v1", "__weird__", "x" * 249, "a..b"]
    observed = state([topic(n) for n in names])
    result = export(observed, include_internal=True)
    by_topic = {d["spec"].get("topicName", d["metadata"]["name"]): d for d in result.of_kind("KafkaTopic")}
    assert set(by_topic) == set(names)
    assert by_topic["orders.v1"]["metadata"]["name"] == "orders.v1" and "topicName" not in by_topic["orders.v1"]["spec"]
    assert by_topic["orders-v1"]["metadata"]["name"] == "orders-v1"
    assert re.fullmatch(r"orders\.v1-[0-9a-f]{8}", by_topic["Orders.V1"]["metadata"]["name"])
    assert re.fullmatch(r"orders-v1-[0-9a-f]{8}", by_topic["orders_v1"]["metadata"]["name"])
    assert re.fullmatch(r"weird-[0-9a-f]{8}", by_topic["__weird__"]["metadata"]["name"])
    assert re.fullmatch(r"a\.b-[0-9a-f]{8}", by_topic["a..b"]["metadata"]["name"])
    resource_names = [d["metadata"]["name"] for d in by_topic.values()]
    assert len(set(resource_names)) == len(names) and all(is_k8s_name(n) for n in resource_names)
    # stable: the same name whatever else is exported, and in any order
    assert topic_resource_names(reversed(names)) == topic_resource_names(names)
    assert topic_resource_names(["Orders.V1"])["Orders.V1"] == by_topic["Orders.V1"]["metadata"]["name"]
    checked = validated(result)
    assert not plan(desired_of(checked), observed).has_changes


def test_sanitise_and_principal_names():
    assert sanitise("User:orders-svc") == "user-orders-svc"
    assert sanitise("User:CN=svc,OU=Teams,O=Acme") == "user-cn-svc-ou-teams-o-acme"
    assert sanitise("--.__..") == "x"
    assert is_k8s_name(sanitise("A" * 400)) and len(sanitise("A" * 400)) == 253
    names = principal_resource_names(["User:orders-svc", "User:Bob", "User:bob", "Group:ops"])
    assert names["User:orders-svc"] == "user-orders-svc" and names["Group:ops"] == "group-ops"
    # principals that sanitise alike all get a hash: neither wins the plain name by order
    assert re.fullmatch(r"user-bob-[0-9a-f]{8}", names["User:Bob"])
    assert re.fullmatch(r"user-bob-[0-9a-f]{8}", names["User:bob"])
    assert names["User:Bob"] != names["User:bob"]


def test_acls_grouped_per_principal_with_sorted_operations_and_defaults_left_out():
    svc = "User:orders-svc"
    bindings = [
        binding(svc, ResourceType.TOPIC, "orders.", AclOperation.WRITE, PatternType.PREFIXED),
        binding(svc, ResourceType.TOPIC, "orders.", AclOperation.READ, PatternType.PREFIXED),
        binding(svc, ResourceType.TOPIC, "orders.", AclOperation.DESCRIBE, PatternType.PREFIXED),
        binding(svc, ResourceType.GROUP, "orders", AclOperation.READ),
        binding(svc, ResourceType.CLUSTER, "kafka-cluster", AclOperation.IDEMPOTENT_WRITE),
        binding(svc, ResourceType.TOPIC, "payments", AclOperation.READ, permission=AclPermission.DENY),
        binding(svc, ResourceType.TOPIC, "orders.", AclOperation.READ, PatternType.PREFIXED, host="10.0.0.7"),
        binding("User:Analytics", ResourceType.TOPIC, "*", AclOperation.READ),
    ]
    observed = state(acls=bindings)
    result = export(observed)
    assert [d["spec"]["principal"] for d in result.of_kind("KafkaAcl")] == ["User:Analytics", svc]
    spec = spec_of(result, "KafkaAcl", "user-orders-svc")
    assert spec["acls"] == [
        {"resource": {"type": "Cluster", "name": "kafka-cluster"}, "operations": ["IdempotentWrite"]},
        {"resource": {"type": "Group", "name": "orders"}, "operations": ["Read"]},
        {"resource": {"type": "Topic", "name": "orders.", "patternType": "Prefixed"},
         "operations": ["Describe", "Read", "Write"]},
        {"resource": {"type": "Topic", "name": "orders.", "patternType": "Prefixed"}, "operations": ["Read"],
         "host": "10.0.0.7"},
        {"resource": {"type": "Topic", "name": "payments"}, "operations": ["Read"], "permission": "Deny"},
    ]
    assert "resource: {type: Topic, name: orders., patternType: Prefixed}" in to_yaml(result.documents)
    checked = validated(result)
    acl = next(a for a in checked.acls() if a.principal == svc)
    assert acl.bindings == frozenset(b for b in bindings if b.principal == svc)
    assert not plan(desired_of(checked), observed).has_changes


def test_a_principal_with_a_binding_that_would_not_validate_is_skipped_whole():
    bindings = [
        binding("User:hosty", ResourceType.TOPIC, "a", AclOperation.READ),
        binding("User:hosty", ResourceType.TOPIC, "a", AclOperation.WRITE, host="build-agent.local"),
        binding("User:odd", ResourceType.CLUSTER, "kafka-cluster", AclOperation.READ),  # Read means nothing on Cluster
        binding("User:fine", ResourceType.TOPIC, "a", AclOperation.READ),
    ]
    observed = state(acls=bindings)
    result = export(observed)
    assert [d["spec"]["principal"] for d in result.of_kind("KafkaAcl")] == ["User:fine"]
    notes = "\n".join(result.notes)
    assert "ACLs of User:hosty not exported" in notes and "InvalidAclHost" in notes
    assert "ACLs of User:odd not exported" in notes and "OperationNotValidForResource" in notes
    # a partial KafkaAcl for User:hosty would have made plan delete its other binding; none does
    checked = validated(result)
    assert not plan(desired_of(checked), observed).has_changes


def test_acl_bindings_manifests_cannot_express_are_noted():
    wire = [
        kafka.AclBinding(kafka.ResourceType.TOPIC, "t", kafka.PatternType.LITERAL, "User:a", "*",
                         kafka.AclOperation.READ, kafka.AclPermission.ALLOW),
        kafka.AclBinding(kafka.ResourceType.USER, "bob", kafka.PatternType.LITERAL, "User:a", "*",
                         kafka.AclOperation.ALL, kafka.AclPermission.ALLOW),
    ]
    acls, unmapped = split_acls(wire)
    assert set(acls) == {"User:a"} and len(acls["User:a"]) == 1
    assert unmapped == (wire[1],)
    observed = state()
    observed = replace(observed, acls=acls)
    result = export(observed, unmapped_acls=unmapped)
    assert spec_of(result, "KafkaAcl", "user-a")["acls"] == [{"resource": {"type": "Topic", "name": "t"},
                                                              "operations": ["Read"]}]
    assert any("USER:bob" in note and "manifests cannot express" in note for note in result.notes)
    validated(result)


def test_acls_that_cannot_be_read_are_noted_and_the_rest_exported():
    error = KafkaError(54, "SECURITY_DISABLED", "No Authorizer is configured", False)
    result = export(state([topic("a")], acls=None, acls_error=error))
    assert not result.of_kind("KafkaAcl") and result.of_kind("KafkaTopic")
    assert any("ACLs not exported" in n and "SECURITY_DISABLED" in n for n in result.notes)


def test_internal_topics_are_left_out_unless_asked_for():
    observed = state([topic("__consumer_offsets", internal=True), topic("_schemas"), topic("connect-offsets"),
                      topic("my-internal-looking", internal=True), topic("orders")])
    result = export(observed)
    assert [d["metadata"]["name"] for d in result.of_kind("KafkaTopic")] == ["orders"]
    note = next(n for n in result.notes if "internal" in n)
    assert "4 internal or platform topic(s)" in note and "__consumer_offsets" in note and "--include-internal" in note
    everything = export(observed, include_internal=True)
    assert len(everything.of_kind("KafkaTopic")) == 5
    assert not plan(desired_of(validated(everything)), observed).has_changes


def test_topics_regex_is_searched_and_selects_topics_only():
    observed = state([topic("orders.v1"), topic("legacy.orders"), topic("payments")],
                     acls=[binding("User:a", ResourceType.TOPIC, "payments", AclOperation.READ)])
    result = export(observed, topics=re.compile(r"orders"))
    assert [d["metadata"]["name"] for d in result.of_kind("KafkaTopic")] == ["legacy.orders", "orders.v1"]
    assert len(result.of_kind("KafkaAcl")) == 1  # not filtered by the topic regex
    anchored = export(observed, topics=re.compile(r"^orders"))
    assert [d["metadata"]["name"] for d in anchored.of_kind("KafkaTopic")] == ["orders.v1"]


def test_include_selects_kinds_and_the_cluster_is_always_there():
    observed = state([topic("a")], acls=[binding("User:a", ResourceType.TOPIC, "a", AclOperation.READ)],
                     broker_configs={"": {"log.cleaner.threads": cfg("2", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)}})
    kinds = lambda result: [d["kind"] for d in result.documents]  # noqa: E731
    assert kinds(export(observed)) == ["KafkaCluster", "KafkaTopic", "KafkaAcl", "KafkaBrokerConfig"]
    assert kinds(export(observed, include=frozenset({TOPICS}))) == ["KafkaCluster", "KafkaTopic"]
    assert kinds(export(observed, include=frozenset({ACLS}))) == ["KafkaCluster", "KafkaAcl"]
    assert kinds(export(observed, include=frozenset())) == ["KafkaCluster"]


def test_topics_that_could_not_be_read_are_noted_not_exported():
    error = KafkaError(29, "TOPIC_AUTHORIZATION_FAILED", None, False)
    unreadable = ObservedTopic("locked", ((1,),), configs=None, configs_error=error)
    observed = state([unreadable, topic("open")])
    observed = replace(observed, topic_errors={"hidden": error})
    result = export(observed)
    assert [d["metadata"]["name"] for d in result.of_kind("KafkaTopic")] == ["open"]
    notes = "\n".join(result.notes)
    assert "topic locked not exported" in notes and "topic hidden not exported" in notes


def test_yaml_is_deterministic_with_a_header_and_splits_by_kind():
    observed = state([topic("b", retention_ms=cfg("1")), topic("a", segment_ms=cfg("60000"))],
                     acls=[binding("User:a", ResourceType.TOPIC, "a", AclOperation.READ)])
    first = export(observed)
    text = to_yaml(first.documents, origin=first.origin)
    assert text == to_yaml(export(observed).documents, origin=first.origin)
    assert text.startswith("# Exported by `kafkaops export` from 127.0.0.1:9092, cluster id test-cluster-id "
                           "(KafkaCluster prod).\n")
    assert [d["kind"] for d in yaml.safe_load_all(text)] == ["KafkaCluster", "KafkaTopic", "KafkaTopic", "KafkaAcl"]
    assert list(yaml.safe_load_all(text))[1]["metadata"]["name"] == "a"
    assert list(yaml.safe_load_all(text))[0] == {"apiVersion": "kafkaops.io/v1alpha1", "kind": "KafkaCluster",
                                                 "metadata": {"name": "prod"},
                                                 "spec": {"bootstrapServers": ["127.0.0.1:9092"]}}
    files = files_by_kind(first)
    assert list(files) == ["cluster.yaml", "topics.yaml", "acls.yaml", "broker-configs.yaml"]
    assert "Nothing of this kind" in files["broker-configs.yaml"]
    assert list(files_by_kind(first, frozenset({TOPICS}))) == ["cluster.yaml", "topics.yaml"]
    loaded = [load_text(t, n) for n, t in files.items()]
    checked = validate_set([d for part in loaded for d in part.documents])
    assert not checked.errors and len(checked.valid) == 4


# --- against servers: export, validate, plan reports no changes ---------------------------------


async def plan_export(admin: AdminClient, result: ExportResult) -> None:
    """Validate the export and plan it against the cluster it came from: nothing to do."""
    checked = validated(result)
    engine = Engine(Batcher(admin), cluster="exported")
    planned = await engine.plan(desired_of(checked), RunOptions(all_topics=False))
    pending = [(r.kind, r.name, r.changes, r.problem) for r in planned.plan.pending]
    assert not planned.plan.has_changes, pending
    assert not planned.plan.problems, pending


@pytest.mark.noida
async def test_export_then_plan_on_noida(noida, unique):
    async with AdminClient.connect(noida.bootstrap, linger=0.01) as admin:
        created = await admin.create_topics([
            NewTopic(f"{unique}.orders", 3, 1, {"retention.ms": "3600000", "cleanup.policy": "compact,delete"}),
            NewTopic(f"{unique}.plain", 1, 1),
            NewTopic(f"{unique}_Mixed.Case", 2, 1, {"max.message.bytes": "2000000"}),
        ])
        assert created.all_ok, created.failed()
        read = await export_cli.read_for_export(client_settings(noida.bootstrap, None), re.compile(f"^{unique}"))
        result = export_documents(read.observed, cluster_name="noida", bootstrap_servers=[noida.bootstrap],
                                  topics=re.compile(f"^{unique}"), unmapped_acls=read.unmapped_acls)
        topics = {d["spec"].get("topicName", d["metadata"]["name"]): d["spec"] for d in result.of_kind("KafkaTopic")}
        assert set(topics) == {f"{unique}.orders", f"{unique}.plain", f"{unique}_Mixed.Case"}
        assert topics[f"{unique}.orders"]["config"] == {"retention.ms": "3600000", "cleanup.policy": "compact,delete"}
        assert "config" not in topics[f"{unique}.plain"]
        assert any("SECURITY_DISABLED" in n for n in result.notes)  # noida has no authorizer
        await plan_export(admin, result)


async def test_export_then_plan_on_the_fake_cluster_with_acls_and_broker_configs(unique):
    async with FakeClusterDouble(brokers=3, acls_enabled=True, tick_interval=None) as double:
        async with AdminClient.connect(double.bootstrap, linger=0.01, retry_backoff=0.01) as admin:
            created = await admin.create_topics([
                NewTopic(f"{unique}.events", 6, 3, {"retention.ms": "86400000", "min.insync.replicas": "2"}),
                NewTopic(f"{unique}.State_V1", 2, 2, {"cleanup.policy": "compact"}),
            ])
            assert created.all_ok, created.failed()
            W = kafka
            wire = [
                W.AclBinding(W.ResourceType.TOPIC, f"{unique}.", W.PatternType.PREFIXED, "User:orders-svc", "*",
                             op, W.AclPermission.ALLOW)
                for op in (W.AclOperation.READ, W.AclOperation.WRITE, W.AclOperation.DESCRIBE)
            ] + [
                W.AclBinding(W.ResourceType.GROUP, "orders", W.PatternType.LITERAL, "User:orders-svc", "*",
                             W.AclOperation.READ, W.AclPermission.ALLOW),
                W.AclBinding(W.ResourceType.TOPIC, "payments", W.PatternType.LITERAL, "User:orders-svc", "10.1.2.3",
                             W.AclOperation.READ, W.AclPermission.DENY),
                W.AclBinding(W.ResourceType.CLUSTER, "kafka-cluster", W.PatternType.LITERAL, "User:Admin", "*",
                             W.AclOperation.ALL, W.AclPermission.ALLOW),
                W.AclBinding(W.ResourceType.USER, "bob", W.PatternType.LITERAL, "User:Admin", "*",
                             W.AclOperation.ALL, W.AclPermission.ALLOW),
            ]
            made = await admin.create_acls(wire)
            assert made.all_ok, made.failed()
            altered = await admin.incremental_alter_configs({
                ConfigResource.broker(None): [AlterConfigOp("log.retention.ms", "604800000")],
                ConfigResource.broker(1): [AlterConfigOp("log.cleaner.threads", "2"),
                                           AlterConfigOp("ssl.keystore.password", SECRET)],
            })
            assert altered.all_ok, altered.failed()

            read = await export_cli.read_for_export(client_settings(double.bootstrap, None))
            result = export_documents(read.observed, cluster_name="fake",
                                      bootstrap_servers=double.bootstrap.split(","), unmapped_acls=read.unmapped_acls)
            topics = {d["spec"].get("topicName", d["metadata"]["name"]): d["spec"] for d in result.of_kind("KafkaTopic")}
            assert list(topics) == [f"{unique}.State_V1", f"{unique}.events"]  # sorted by topic name
            assert topics[f"{unique}.events"]["config"] == {"min.insync.replicas": "2", "retention.ms": "86400000"}
            assert (topics[f"{unique}.events"]["partitions"], topics[f"{unique}.events"]["replicationFactor"]) == (6, 3)
            assert {d["spec"]["principal"] for d in result.of_kind("KafkaAcl")} == {"User:Admin", "User:orders-svc"}
            configs = {d["spec"].get("brokerId"): d["spec"]["config"] for d in result.of_kind("KafkaBrokerConfig")}
            assert configs == {None: {"log.retention.ms": "604800000"}, 1: {"log.cleaner.threads": "2"}}
            notes = "\n".join(result.notes)
            assert "sensitive config ssl.keystore.password not exported" in notes
            assert "USER:bob" in notes
            assert_no_secret(result)
            await plan_export(admin, result)

            # the check is not vacuous: drift after the export shows up in the same plan
            await admin.incremental_alter_configs({ConfigResource.topic(f"{unique}.events"):
                                                   [AlterConfigOp("retention.ms", "1000")]})
            planned = await Engine(Batcher(admin)).plan(desired_of(validated(result)), RunOptions(all_topics=False))
            assert [r.name for r in planned.plan.pending] == [f"{unique}.events"]


# --- the command ------------------------------------------------------------------------------------


def test_cli_writes_one_file_per_kind_that_validates(noida, unique, tmp_path):
    async def setup() -> None:
        async with AdminClient.connect(noida.bootstrap, linger=0.01) as admin:
            created = await admin.create_topics([NewTopic(f"{unique}.cli", 2, 1, {"retention.ms": "120000"}),
                                                 NewTopic(f"{unique}.Cli_Upper", 1, 1)])
            assert created.all_ok, created.failed()

    asyncio.run(setup())
    out = tmp_path / "adopted"
    result = CliRunner().invoke(cli, ["export", "--bootstrap-server", noida.bootstrap, "--topics", f"^{unique}",
                                      "--cluster", "noida", "--output-dir", f"{out}/"])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == ["acls.yaml", "broker-configs.yaml", "cluster.yaml", "topics.yaml"]
    assert "SECURITY_DISABLED" in result.stderr and "exported 2 topics" in result.stderr
    assert result.stdout == ""  # YAML went to the files, notes to stderr
    checked = load_and_validate([out])
    assert not checked.errors, [str(e) for e in checked.errors]
    assert {t.topic_name for t in checked.topics()} == {f"{unique}.cli", f"{unique}.Cli_Upper"}
    assert checked.clusters()[0].name == "noida" and not checked.acls()
    assert all(isinstance(t, KafkaTopic) and t.cluster_ref.name == "noida" for t in checked.topics())

    again = CliRunner().invoke(cli, ["export", "--bootstrap-server", noida.bootstrap, "--topics", f"^{unique}\\.cli$",
                                     "--include", "topics"])
    assert again.exit_code == 0, again.output
    docs = list(yaml.safe_load_all(again.stdout))
    assert [d["kind"] for d in docs] == ["KafkaCluster", "KafkaTopic"] and docs[0]["metadata"]["name"] == "exported"
    assert again.stdout.startswith("# Exported by `kafkaops export` from ")


@pytest.fixture
def fake_cluster_in_thread() -> Iterator[str]:
    """A FakeClusterDouble serving from its own event loop in a thread (the command runs asyncio.run)."""
    ready = threading.Event()
    box: dict[str, object] = {}

    def serve() -> None:
        async def main() -> None:
            stop = asyncio.Event()
            box["loop"], box["stop"] = asyncio.get_running_loop(), stop
            async with FakeClusterDouble(brokers=3, acls_enabled=True, tick_interval=None) as double:
                async with AdminClient.connect(double.bootstrap, linger=0.01) as admin:
                    await admin.create_topics([NewTopic("orders.v1", 3, 2, {"retention.ms": "60000"})])
                    await admin.create_acls([kafka.AclBinding(
                        kafka.ResourceType.TOPIC, "orders.", kafka.PatternType.PREFIXED, "User:orders", "*",
                        kafka.AclOperation.READ, kafka.AclPermission.ALLOW)])
                box["bootstrap"] = double.bootstrap
                ready.set()
                await stop.wait()

        asyncio.run(main())

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    assert ready.wait(10)
    yield str(box["bootstrap"])
    box["loop"].call_soon_threadsafe(box["stop"].set)  # type: ignore[attr-defined]
    thread.join(10)


def test_cli_single_file_with_acls_from_the_fake_cluster(fake_cluster_in_thread, tmp_path):
    target = tmp_path / "nested" / "all.yaml"
    result = CliRunner().invoke(cli, ["export", "--bootstrap-server", fake_cluster_in_thread, "--out", str(target)])
    assert result.exit_code == 0, result.output
    checked = load_and_validate([target])
    assert not checked.errors, [str(e) for e in checked.errors]
    assert [a.principal for a in checked.acls()] == ["User:orders"]
    assert isinstance(checked.acls()[0], KafkaAcl)
    assert [t.topic_name for t in checked.topics()] == ["orders.v1"]
    assert checked.clusters()[0].spec.bootstrap_servers == tuple(fake_cluster_in_thread.split(","))


def test_cli_connection_error_is_one_line_and_exit_1(monkeypatch):
    fast = lambda bootstrap, config, **_: client_settings(bootstrap, config, retry_attempts=1,  # noqa: E731
                                                          retry_backoff=0.01, connect_timeout=1.0)
    monkeypatch.setattr(export_cli, "client_settings", fast)
    result = CliRunner().invoke(cli, ["export", "--bootstrap-server", "127.0.0.1:1"])
    assert result.exit_code == 1
    assert result.stderr.startswith("error: cannot export from 127.0.0.1:1: ")
    assert result.stderr.count("\n") == 1 and result.stdout == ""


def test_cli_rejects_bad_options_before_connecting():
    runner = CliRunner()
    for args, message in ((["--include", "topics,users"], "users: choose from"),
                          (["--topics", "("], "not a valid regular expression"),
                          (["--cluster", "Prod"], "not a valid Kubernetes name"),
                          (["--cluster-name", "Prod"], "not a valid Kubernetes name")):  # the old spelling
        result = runner.invoke(cli, ["export", "--bootstrap-server", "127.0.0.1:1", *args])
        assert result.exit_code == 1 and message in result.stderr, result.output  # usage errors exit 1
    assert "--include-internal" in runner.invoke(cli, ["export", "--help"]).stdout

