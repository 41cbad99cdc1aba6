"""KafkaUser and KafkaClientQuota: models (defaults), schema and rules (each failing with its passing
neighbour), the rules across documents, and inline ACL rules behaving exactly like KafkaAcl's."""

from __future__ import annotations

from typing import Any

import pytest
from resource_helpers import acl, check, client_quota, cluster, rules, user

from kafkaops.resources import (
    DeletionPolicy,
    KafkaAcl,
    KafkaClientQuota,
    KafkaUser,
    PasswordSecretRef,
    ScramType,
    from_custom_resource,
)
from kafkaops.resources.schemas import inlined_schema

SCRAM = {"type": "scram-sha-512", "passwordSecretRef": {"name": "alice-pw"}}
ENTRIES = [{"resource": {"type": "Topic", "name": "orders", "patternType": "Prefixed"}, "operations": ["Read", "Describe"]},
           {"resource": {"type": "Group", "name": "g"}, "operations": ["Read"], "host": "10.0.0.1"}]


def _one(doc: dict[str, Any]) -> Any:
    result = check(cluster(), doc)
    assert result.ok, [str(e) for e in result.errors]
    return result.valid[1]


def test_user_defaults_principal_secret_key_iterations_and_unmanaged_parts() -> None:
    alice = _one(user(authentication=SCRAM))
    assert isinstance(alice, KafkaUser)
    assert (alice.principal, alice.user_name) == ("User:alice", "alice")
    auth = alice.authentication
    assert auth is not None and auth.type is ScramType.SCRAM_SHA_512 and auth.type.sasl_name == "SCRAM-SHA-512"
    assert auth.password_secret_ref == PasswordSecretRef("alice-pw", "password") and not auth.generated
    assert (auth.secret_name, auth.password_key, auth.iterations) == ("alice-pw", "password", 4096)
    assert alice.quotas is None and alice.acl_entries is None and not alice.manages_acls
    assert alice.effective_deletion_policy(None) is DeletionPolicy.RETAIN


def test_generated_password_names_its_secret() -> None:
    bob = _one(user("bob", authentication={"type": "scram-sha-256"}))
    assert bob.authentication.generated and bob.authentication.secret_name == "bob"
    carol = _one(user("carol", authentication={"type": "scram-sha-256", "secretName": "carol-creds", "iterations": 8192}))
    assert (carol.authentication.secret_name, carol.authentication.iterations) == ("carol-creds", 8192)


def test_user_quotas_and_inline_acls_use_the_kafkaacl_model() -> None:
    alice = _one(user(principal="User:svc-a", quotas={"producer_byte_rate": 1024, "request_percentage": 12.5},
                      acls=ENTRIES, deletionPolicy="Delete"))
    twin = _one(acl("twin", principal="User:svc-a", acls=ENTRIES))
    assert isinstance(twin, KafkaAcl)
    assert alice.acl_entries == twin.entries and alice.bindings == twin.bindings and len(alice.bindings) == 3
    assert dict(alice.quotas) == {"producer_byte_rate": 1024.0, "request_percentage": 12.5}
    assert alice.user_name == "svc-a" and alice.deletion_policy is DeletionPolicy.DELETE
    assert _one(user(acls=[])).acl_entries == ()  # manages ACLs: removes them all
    hash(alice)  # frozen models are hashable


@pytest.mark.parametrize("entity, components, text", [
    ({"clientId": "app"}, (("client-id", "app"),), "client-id=app"),
    ({"userDefault": True}, (("user", None),), "user=<default>"),
    ({"clientId": "app", "user": "alice"}, (("user", "alice"), ("client-id", "app")), "user=alice,client-id=app"),
    ({"user": "alice", "clientIdDefault": True}, (("user", "alice"), ("client-id", None)), "user=alice,client-id=<default>"),
    ({"ip": "10.1.2.3"}, (("ip", "10.1.2.3"),), "ip=10.1.2.3"),
])
def test_client_quota_entities(entity: dict[str, Any], components: tuple, text: str) -> None:
    key = "connection_creation_rate" if "ip" in entity else "consumer_byte_rate"
    quota = _one(client_quota(entity=entity, quotas={key: 100}))
    assert isinstance(quota, KafkaClientQuota)
    assert quota.entity == components and quota.entity_text == text and dict(quota.quotas) == {key: 100.0}


# (rule, path, failing document, passing neighbour)
PAIRS: list[tuple[str, str, dict[str, Any], dict[str, Any]]] = [
    ("InvalidPrincipal", "spec.principal", user(principal="alice"), user(principal="User:alice")),
    ("PrincipalNotUser", "spec.principal", user(principal="Group:ops", authentication=SCRAM),
     user(principal="Group:ops", acls=ENTRIES)),
    ("PrincipalNotUser", "spec.principal", user(principal="Group:ops", quotas={"producer_byte_rate": 1}),
     user(principal="User:ops", quotas={"producer_byte_rate": 1})),
    ("SecretNameWithPasswordRef", "spec.authentication.secretName",
     user(authentication={**SCRAM, "secretName": "x"}), user(authentication={"type": "scram-sha-512", "secretName": "x"})),
    ("SchemaViolation", "spec.authentication.type", user(authentication={"type": "plain"}),
     user(authentication={"type": "scram-sha-256"})),
    ("SchemaViolation", "spec.authentication.iterations", user(authentication={"type": "scram-sha-256", "iterations": 100}),
     user(authentication={"type": "scram-sha-256", "iterations": 16384})),
    ("SchemaViolation", "spec.quotas.producer_byte_rate", user(quotas={"producer_byte_rate": 0}),
     user(quotas={"producer_byte_rate": 1})),
    ("QuotaKeyNotValidForEntity", "spec.quotas.connection_creation_rate", user(quotas={"connection_creation_rate": 5}),
     user(quotas={"request_percentage": 5})),
    ("QuotaNotInteger", "spec.quotas.consumer_byte_rate", user(quotas={"consumer_byte_rate": 10.5}),
     user(quotas={"consumer_byte_rate": 10.0})),
    ("OperationNotValidForResource", "spec.acls[0].operations[0]",
     user(acls=[{"resource": {"type": "Group", "name": "g"}, "operations": ["Write"]}]),
     user(acls=[{"resource": {"type": "Group", "name": "g"}, "operations": ["Read"]}])),
    ("InvalidAclHost", "spec.acls[0].host", user(acls=[{**ENTRIES[1], "host": "example.com"}]), user(acls=[ENTRIES[1]])),
    ("InvalidClusterResourceName", "spec.acls[0].resource.name",
     user(acls=[{"resource": {"type": "Cluster", "name": "c"}, "operations": ["Describe"]}]),
     user(acls=[{"resource": {"type": "Cluster", "name": "kafka-cluster"}, "operations": ["Describe"]}])),
    ("ConflictingQuotaEntity", "spec.entity.userDefault", client_quota(entity={"user": "a", "userDefault": True}),
     client_quota(entity={"user": "a", "userDefault": False})),
    ("EmptyQuotaEntity", "spec.entity", client_quota(entity={"userDefault": False}), client_quota(entity={"userDefault": True})),
    ("InvalidQuotaEntity", "spec.entity",
     client_quota(entity={"ip": "10.0.0.1", "user": "a"}, quotas={"connection_creation_rate": 1}),
     client_quota(entity={"ip": "10.0.0.1"}, quotas={"connection_creation_rate": 1})),
    ("InvalidIpAddress", "spec.entity.ip", client_quota(entity={"ip": "ten"}, quotas={"connection_creation_rate": 1}),
     client_quota(entity={"ip": "::1"}, quotas={"connection_creation_rate": 1})),
    ("QuotaKeyNotValidForEntity", "spec.quotas.producer_byte_rate",
     client_quota(entity={"ipDefault": True}, quotas={"producer_byte_rate": 1}),
     client_quota(entity={"ipDefault": True}, quotas={"connection_creation_rate": 1})),
    ("QuotaKeyNotValidForEntity", "spec.quotas.connection_creation_rate",
     client_quota(entity={"clientId": "a"}, quotas={"connection_creation_rate": 1}),
     client_quota(entity={"clientId": "a"}, quotas={"controller_mutation_rate": 1.5})),
    ("QuotaNotInteger", "spec.quotas.connection_creation_rate",
     client_quota(entity={"ip": "10.0.0.1"}, quotas={"connection_creation_rate": 1.5}),
     client_quota(entity={"ip": "10.0.0.1"}, quotas={"connection_creation_rate": 2})),
    ("EmptyQuotaEntity", "spec.entity", client_quota(entity={}), client_quota(entity={"clientIdDefault": True})),
]


@pytest.mark.parametrize("rule, path, bad, good", PAIRS, ids=[f"{p[0]}-{i}" for i, p in enumerate(PAIRS)])
def test_rule_fails_bad_and_passes_good(rule: str, path: str, bad: dict[str, Any], good: dict[str, Any]) -> None:
    failed = check(cluster(), bad)
    assert (path, rule) in rules(failed), [str(e) for e in failed.errors]
    assert failed.invalid and len(failed.valid) == 1
    passed = check(cluster(), good)
    assert passed.ok, [str(e) for e in passed.errors]


def test_errors_name_the_resource_the_field_and_the_reason() -> None:
    result = check(cluster(), client_quota("q1", entity={"clientId": "a"}, quotas={"connection_creation_rate": 1}),
                   file="quotas.yaml")
    (issue,) = result.errors
    text = str(issue)
    assert "quotas.yaml[1] KafkaClientQuota/q1" in text and "spec.quotas.connection_creation_rate" in text
    assert "does not apply to a client-id entity" in text and "QuotaKeyNotValidForEntity" in text


def test_a_principal_has_one_acl_owner_one_user_and_each_quota_entity_one_resource() -> None:
    result = check(cluster(), user("svc", acls=ENTRIES), acl("svc-acl", principal="User:svc", acls=ENTRIES),
                   user("svc2", principal="User:svc"),
                   user("dup", quotas={"producer_byte_rate": 1}), client_quota("dup-q", entity={"user": "dup"}),
                   client_quota("a", entity={"clientIdDefault": True}), client_quota("b", entity={"clientIdDefault": True}))
    found = rules(result)
    assert ("spec.acls", "DuplicateAclPrincipal") in found and ("spec.principal", "DuplicateAclPrincipal") in found
    assert ("metadata.name", "DuplicateUser") in found and ("spec.principal", "DuplicateUser") in found
    assert ("spec.quotas", "DuplicateQuotaEntity") in found and ("spec.entity", "DuplicateQuotaEntity") in found
    assert len(result.valid) == 1  # the cluster only


def test_a_user_without_acls_leaves_the_principal_to_a_kafkaacl() -> None:
    result = check(cluster(), user("svc", authentication=SCRAM), acl("svc-acl", principal="User:svc", acls=ENTRIES))
    assert result.ok and len(result.valid) == 3


def test_custom_resource_round_trip_and_unknown_cluster_ref() -> None:
    body = user("web", namespace="team", authentication={"type": "scram-sha-256"})
    model = from_custom_resource(body)
    assert isinstance(model, KafkaUser) and model.cluster_ref.namespace == "team"
    result = check(cluster(), user(cluster_name="nope"))
    assert ("spec.clusterRef.name", "UnknownClusterRef") in rules(result)


def test_schema_defaults_match_model_defaults() -> None:
    spec = inlined_schema("KafkaUser")["properties"]["spec"]["properties"]["authentication"]["properties"]
    auth = _one(user(authentication=SCRAM)).authentication
    assert spec["passwordSecretRef"]["properties"]["key"]["default"] == auth.password_key
    assert spec["iterations"]["default"] == auth.iterations
