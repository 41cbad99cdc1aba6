"""export of users and quotas (pure): a KafkaUser per SCRAM user with a password placeholder (never
a password), its user quotas inside, a KafkaClientQuota per other entity; every document validates
and planning the export against the same observed state changes nothing."""

from __future__ import annotations

import yaml

from kafkaops.kafka import BrokerInfo, KafkaError, QuotaEntity, ScramCredentialInfo, ScramMechanism
from kafkaops.kafka.errors import ErrorCode
from kafkaops.reconcile import DesiredState, plan
from kafkaops.reconcile.export import QUOTAS, USERS, export_documents, files_by_kind, to_yaml
from kafkaops.reconcile.observed import ObservedState
from kafkaops.resources import load_text, validate_load

SHA256, SHA512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512
SCRAM = {
    "alice": (ScramCredentialInfo(SHA512, 4096),),
    "bob": (ScramCredentialInfo(SHA256, 8192), ScramCredentialInfo(SHA512, 4096)),
    "CN=svc,O=acme": (ScramCredentialInfo(SHA256, 4096),),
}
QUOTA_VALUES = {
    QuotaEntity.of(user="alice"): {"producer_byte_rate": 1048576.0, "request_percentage": 12.5},
    QuotaEntity.of(user="carol"): {"consumer_byte_rate": 10.0},  # no credential: a KafkaClientQuota
    QuotaEntity.of(user=None, client_id="app"): {"controller_mutation_rate": 3.0},
    QuotaEntity.of(client_id=None): {"consumer_byte_rate": 2048.0},
    QuotaEntity.of(ip="10.0.0.7"): {"connection_creation_rate": 5.0},
    QuotaEntity.of(ip=None): {"connection_creation_rate": 50.0},
}


def observed(**fields) -> ObservedState:
    base = dict(cluster_id="c1", controller_id=1, brokers={1: BrokerInfo(1, "h", 9092)}, topics={},
                scram=SCRAM, quotas=QUOTA_VALUES, acls={})
    return ObservedState(**{**base, **fields})


def test_users_and_quotas_export_validate_and_plan_no_changes() -> None:
    result = export_documents(observed(), cluster_name="prod", bootstrap_servers=["kafka:9092"],
                              include=frozenset({USERS, QUOTAS}))
    users = {d["metadata"]["name"]: d["spec"] for d in result.of_kind("KafkaUser")}
    assert set(users) == {"alice", "bob", "user-cn-svc-o-acme"}
    assert users["alice"]["authentication"] == {"type": "scram-sha-512", "passwordSecretRef": {
        "name": "alice-password", "key": "password"}}
    assert users["alice"]["quotas"] == {"producer_byte_rate": 1048576, "request_percentage": 12.5}
    assert users["bob"]["authentication"]["type"] == "scram-sha-512" and "iterations" not in users["bob"]["authentication"]
    assert users["user-cn-svc-o-acme"]["principal"] == "User:CN=svc,O=acme"
    assert any("user bob: its SCRAM-SHA-256 credential is not exported" in n for n in result.notes)
    entities = sorted(str(d["spec"]["entity"]) for d in result.of_kind("KafkaClientQuota"))
    assert entities == sorted(str(e) for e in ({"user": "carol"}, {"userDefault": True, "clientId": "app"},
                                               {"clientIdDefault": True}, {"ip": "10.0.0.7"}, {"ipDefault": True}))

    text = to_yaml(result.documents, origin=result.origin)
    assert text.count("# placeholder: create this Secret") == 3
    validated = validate_load(load_text(text, "export.yaml"))
    assert validated.ok, [str(e) for e in validated.errors]
    desired = DesiredState.of(validated.valid, validated.clusters()[0])
    made = plan(desired, observed())
    assert not made.has_changes and not made.problems, [r for r in made.resources if r.pending]
    assert list(files_by_kind(result, frozenset({USERS, QUOTAS}))) == ["cluster.yaml", "users.yaml", "quotas.yaml"]


def test_user_quotas_become_client_quotas_when_users_are_not_exported() -> None:
    result = export_documents(observed(), cluster_name="prod", bootstrap_servers=["kafka:9092"],
                              include=frozenset({QUOTAS}))
    assert not result.of_kind("KafkaUser")
    assert {"user": "alice"} in [d["spec"]["entity"] for d in result.of_kind("KafkaClientQuota")]


def test_unreadable_users_and_quotas_are_notes() -> None:
    unsupported = KafkaError.of(ErrorCode.unsupported_version, "the broker does not support DescribeClientQuotas")
    result = export_documents(observed(scram=None, scram_error=unsupported, quotas=None, quotas_error=unsupported),
                              cluster_name="prod", bootstrap_servers=["kafka:9092"], include=frozenset({USERS, QUOTAS}))
    assert [d["kind"] for d in result.documents] == ["KafkaCluster"]
    assert any(n.startswith("users not exported") for n in result.notes)
    assert any(n.startswith("client quotas not exported") and "DescribeClientQuotas" in n for n in result.notes)
    assert yaml.safe_load(to_yaml(result.documents))["kind"] == "KafkaCluster"
