"""Planning KafkaUser and KafkaClientQuota (pure): when a credential is upserted (missing, other
iterations, a password whose fingerprint does not match), ownership of quota keys and mechanisms,
inline ACLs planned exactly like a KafkaAcl, read problems only for the resources that need the
read, removal, and no password anywhere in a plan."""

from __future__ import annotations

from kafkaops.kafka import KafkaError, QuotaEntity, ScramCredentialInfo, ScramMechanism
from kafkaops.kafka.errors import ErrorCode, UnsupportedFeature
from kafkaops.kafka.security import Secret
from kafkaops.reconcile import Action, Ownership, plan
from kafkaops.reconcile.actions import AlterQuotas, CreateAcls, DeleteAcls, DeleteScramCredential, UpsertScramCredential
from kafkaops.reconcile.plan import plan_removal
from kafkaops.reconcile.principals import (
    PASSWORD_UNAVAILABLE,
    password_fingerprint,
    password_matches,
    quota_owner,
    scram_ownership_changes,
    scram_owner,
)
from kafkaops.resources.acl import AclBinding, AclOperation, AclPermission, PatternType, ResourceType

from engine_helpers import client_quota, desired, desired_with_passwords, kafka_acl, kafka_user, observed, topic

SHA512, SHA256 = ScramMechanism.SCRAM_SHA_512, ScramMechanism.SCRAM_SHA_256
PASSWORD = "correct-horse-battery-staple"
AUTH = {"type": "scram-sha-512", "passwordSecretRef": {"name": "alice-pw"}}
ENTRY = {"resource": {"type": "Topic", "name": "orders"}, "operations": ["Read"]}
ALICE = QuotaEntity.of(user="alice")


def seen(scram=None, quotas=None, acls=None, **fields):
    return observed(scram={} if scram is None else scram, quotas={} if quotas is None else quotas,
                    acls={} if acls is None else acls, **fields)


def owned_password(password: str = PASSWORD, mechanism: ScramMechanism = SHA512) -> Ownership:
    return Ownership({scram_owner("alice"): {mechanism.sasl_name: password_fingerprint(Secret(password))}})


def only(made):
    assert len(made.resources) == 1, made.resources
    return made.resources[0]


def test_fingerprints_match_only_their_password_and_never_contain_it() -> None:
    stored = password_fingerprint(Secret(PASSWORD))
    assert stored.startswith("pbkdf2-sha256$4096$") and PASSWORD not in stored
    assert password_matches(Secret(PASSWORD), stored) and not password_matches(Secret("other"), stored)
    assert password_fingerprint(Secret(PASSWORD)) != stored  # salted
    assert not password_matches(Secret(PASSWORD), None) and not password_matches(Secret(PASSWORD), "scrypt$00$00")


def test_a_new_user_gets_its_credential_quotas_and_acls() -> None:
    state = desired_with_passwords({"alice": PASSWORD}, kafka_user(
        "alice", authentication=AUTH, quotas={"producer_byte_rate": 1024}, acls=[ENTRY]))
    r = only(plan(state, seen()))
    assert r.action is Action.CREATE and r.problem is None and r.name == "User:alice"
    upsert, quotas, acls = r.steps
    assert isinstance(upsert, UpsertScramCredential) and (upsert.user, upsert.mechanism, upsert.iterations) == (
        "alice", SHA512, 4096)
    assert password_matches(Secret(PASSWORD), upsert.fingerprint)
    assert isinstance(quotas, AlterQuotas) and quotas.alteration.entity == ALICE
    assert dict(quotas.alteration.ops) == {"producer_byte_rate": 1024.0}
    assert isinstance(acls, CreateAcls) and [b.principal for b in acls.bindings] == ["User:alice"]
    assert r.owner == quota_owner(ALICE) and r.owned_keys == {"producer_byte_rate"}
    assert [str(c) for c in r.changes][:2] == ["credential.SCRAM-SHA-512: + 4096 iterations",
                                               "quota.producer_byte_rate: + 1024"]
    assert PASSWORD not in repr(r) and PASSWORD not in str([str(c) for c in r.changes])


def test_a_matching_fingerprint_means_no_change() -> None:
    state = desired_with_passwords({"alice": PASSWORD}, kafka_user("alice", authentication=AUTH))
    current = seen(scram={"alice": (ScramCredentialInfo(SHA512, 4096),)})
    assert only(plan(state, current, owned_password())).action is Action.NONE


def test_a_changed_or_unknown_password_or_other_iterations_upsert_once() -> None:
    current = seen(scram={"alice": (ScramCredentialInfo(SHA512, 4096),)})
    rotated = desired_with_passwords({"alice": "new-password"}, kafka_user("alice", authentication=AUTH))
    r = only(plan(rotated, current, owned_password()))
    assert r.action is Action.UPDATE and [type(s) for s in r.steps] == [UpsertScramCredential]
    assert [str(c) for c in r.changes] == ["credential.SCRAM-SHA-512.password: (sensitive) -> (sensitive)"]
    # no fingerprint remembered (first run against an existing credential): upserted, then remembered
    assert [type(s) for s in only(plan(rotated, current)).steps] == [UpsertScramCredential]
    more = desired_with_passwords({"alice": PASSWORD}, kafka_user("alice", authentication={**AUTH, "iterations": 8192}))
    r = only(plan(more, current, owned_password()))
    assert [str(c) for c in r.changes] == ["credential.SCRAM-SHA-512.iterations: 4096 -> 8192"]
    assert r.steps[0].iterations == 8192


def test_without_a_password_an_existing_credential_is_kept_and_a_missing_one_is_a_problem() -> None:
    generated = kafka_user("alice", authentication={"type": "scram-sha-256"}, quotas={"consumer_byte_rate": 10})
    kept = only(plan(desired(generated), seen(scram={"alice": (ScramCredentialInfo(SHA256, 4096),)})))
    assert [type(s) for s in kept.steps] == [AlterQuotas] and kept.problem is None
    missing = only(plan(desired(generated), seen()))
    assert missing.problem.reason == PASSWORD_UNAVAILABLE and not missing.steps
    assert "generated by the operator into Secret 'alice'" in missing.problem.message


def test_switching_mechanism_deletes_the_old_one_only_when_kafkaops_set_it() -> None:
    state = desired_with_passwords({"alice": PASSWORD}, kafka_user("alice", authentication=AUTH))
    current = seen(scram={"alice": (ScramCredentialInfo(SHA256, 4096),)})
    r = only(plan(state, current, owned_password(mechanism=SHA256)))
    assert [type(s) for s in r.steps] == [UpsertScramCredential, DeleteScramCredential]
    assert r.steps[1] == DeleteScramCredential("alice", SHA256)
    assert [type(s) for s in only(plan(state, current)).steps] == [UpsertScramCredential]  # not ours: kept


def test_quota_keys_are_removed_only_when_kafkaops_set_them() -> None:
    state = desired(kafka_user("alice", quotas={"producer_byte_rate": 1024}))
    current = seen(quotas={ALICE: {"producer_byte_rate": 1024.0, "consumer_byte_rate": 5.0, "request_percentage": 7.0}})
    assert only(plan(state, current)).action is Action.NONE
    owned = Ownership({quota_owner(ALICE): {"producer_byte_rate": None, "consumer_byte_rate": None}})
    r = only(plan(state, current, owned))
    assert dict(r.steps[0].alteration.ops) == {"consumer_byte_rate": None}
    # a user that stops declaring quotas loses only the keys kafkaops set
    r = only(plan(desired(kafka_user("alice")), current, owned))
    assert dict(r.steps[0].alteration.ops) == {"producer_byte_rate": None, "consumer_byte_rate": None}


def test_client_quota_entities_are_created_updated_and_removed() -> None:
    default = QuotaEntity.of(user=None, client_id="app")
    state = desired(client_quota("q", {"userDefault": True, "clientId": "app"}, {"consumer_byte_rate": 100}))
    r = only(plan(state, seen()))
    assert (r.kind, r.name, r.action) == ("KafkaClientQuota", "user=<default>,client-id=app", Action.CREATE)
    assert r.steps == (AlterQuotas(r.steps[0].alteration),) and r.steps[0].alteration.entity == default
    r = only(plan(state, seen(quotas={default: {"consumer_byte_rate": 50.0}})))
    assert r.action is Action.UPDATE and [str(c) for c in r.changes] == ["quota.consumer_byte_rate: 50 -> 100"]
    owned = Ownership({quota_owner(default): {"consumer_byte_rate": None}})
    removal = plan_removal(state.client_quotas[0], seen(quotas={default: {"consumer_byte_rate": 100.0}}), owned)
    assert removal.action is Action.DELETE and dict(removal.steps[0].alteration.ops) == {"consumer_byte_rate": None}
    assert removal.owned_keys == frozenset()


def test_inline_acls_plan_exactly_like_a_kafkaacl() -> None:
    stale = AclBinding(ResourceType.GROUP, "g", PatternType.LITERAL, "User:alice", "*", AclOperation.READ,
                       AclPermission.ALLOW)
    current = seen(acls={"User:alice": frozenset({stale})})
    as_user = only(plan(desired(kafka_user("alice", acls=[ENTRY])), current))
    as_acl = only(plan(desired(kafka_acl("alice", "User:alice", [ENTRY])), current))
    assert as_user.steps == as_acl.steps and as_user.changes == as_acl.changes
    assert [type(s) for s in as_user.steps] == [DeleteAcls, CreateAcls]
    assert as_user.action is as_acl.action is Action.UPDATE
    # without `acls` the user leaves the principal's bindings alone
    assert only(plan(desired(kafka_user("alice")), current)).steps == ()


def test_unsupported_apis_are_problems_only_for_the_resources_that_need_them() -> None:
    unsupported = UnsupportedFeature("DescribeUserScramCredentials", 50, 1, None, (0, 0)).as_kafka_error()
    no_quotas = UnsupportedFeature("DescribeClientQuotas", 48, 1, None, (0, 1)).as_kafka_error()
    state = desired_with_passwords({"alice": PASSWORD}, topic("orders"), kafka_user("alice", authentication=AUTH),
                                   kafka_user("bob", acls=[ENTRY]),
                                   client_quota("q", {"clientId": "app"}, {"producer_byte_rate": 1}))
    current = observed(scram=None, scram_error=unsupported, quotas=None, quotas_error=no_quotas, acls={})
    by_name = {r.name: r for r in plan(state, current).resources}
    assert by_name["orders"].problem is None and by_name["User:bob"].problem is None
    problem = by_name["User:alice"].problem
    assert problem.reason == "UnsupportedFeature" and "DescribeUserScramCredentials (API key 50)" in problem.message
    assert by_name["client-id=app"].problem.reason == "UnsupportedFeature"
    assert "DescribeClientQuotas" in by_name["client-id=app"].problem.message
    failed = observed(scram=None, scram_error=KafkaError.of(ErrorCode.cluster_authorization_failed), quotas={}, acls={})
    assert "CLUSTER_AUTHORIZATION_FAILED" == only(plan(desired_with_passwords(
        {"alice": PASSWORD}, kafka_user("alice", authentication=AUTH)), failed)).problem.reason


def test_removing_a_user_deletes_its_credential_owned_quotas_and_bindings() -> None:
    user = desired(kafka_user("alice", authentication=AUTH, quotas={"producer_byte_rate": 1}, acls=[ENTRY])).users[0]
    binding = next(iter(user.bindings))
    current = seen(scram={"alice": (ScramCredentialInfo(SHA512, 4096), ScramCredentialInfo(SHA256, 8192))},
                   quotas={ALICE: {"producer_byte_rate": 1.0, "consumer_byte_rate": 2.0}},
                   acls={"User:alice": frozenset({binding})})
    owned = Ownership({quota_owner(ALICE): {"producer_byte_rate": None}})
    r = plan_removal(user, current, owned)
    assert r.action is Action.DELETE
    assert r.steps == (DeleteScramCredential("alice", SHA512), AlterQuotas(r.steps[1].alteration), DeleteAcls((binding,)))
    assert dict(r.steps[1].alteration.ops) == {"producer_byte_rate": None}  # consumer_byte_rate is not ours


def test_scram_ownership_remembers_fingerprints_and_forgets_deleted_mechanisms() -> None:
    upsert = UpsertScramCredential("alice", SHA512, 4096, Secret(PASSWORD), password_fingerprint(Secret(PASSWORD)))
    old = Ownership({scram_owner("alice"): {"SCRAM-SHA-256": "x"}, scram_owner("bob"): {"SCRAM-SHA-512": "y"}})
    changes = scram_ownership_changes(old, [(upsert, DeleteScramCredential("alice", SHA256)),
                                            (DeleteScramCredential("bob", SHA512),)])
    assert changes == {scram_owner("alice"): {"SCRAM-SHA-512": upsert.fingerprint}, scram_owner("bob"): None}
    assert PASSWORD not in repr(upsert) and "fingerprint" not in repr(upsert)
