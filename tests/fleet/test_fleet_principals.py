"""KafkaUser and KafkaClientQuota in the fleet: desired rows, the snapshot's scram_credentials and
client_quotas tables, the plan (the engine's planner on the same inputs), drift and the set rules.

One small fleet (module fixture): cluster p1 with users whose credential is as declared, missing,
of another mechanism or of other iterations, user quotas and client quotas changed outside
kafkaops, inline ACL rules; cluster old, whose snapshot predates the users and quotas tables."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fleet_helpers import SnapTopic, client_quota, entry, kcluster, topic, user, write_snapshot, write_yaml

from kafkaops.fleet import desired, drift, observed, plan
from kafkaops.kafka import BrokerInfo, QuotaEntity, ScramCredentialInfo, ScramMechanism
from kafkaops.kafka.security import Secret
from kafkaops.reconcile.desired import DesiredState
from kafkaops.reconcile.observed import ObservedState
from kafkaops.reconcile.plan import plan as engine_plan
from kafkaops.resources.acl import AclBinding, AclOperation, AclPermission, PatternType, ResourceType
from kafkaops.resources.validation import load_and_validate

SHA256, SHA512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512
# (user, mechanism, iterations) in p1's snapshot
SCRAM = [("alice", "SCRAM-SHA-512", 4096), ("bob", "SCRAM-SHA-512", 4096), ("carol", "SCRAM-SHA-512", 4096),
         ("erin", "SCRAM-SHA-512", 4096), ("stranger", "SCRAM-SHA-256", 4096)]
# (entity, user, client_id, ip, key, value)
QUOTAS = [("user=alice", "alice", None, None, "producer_byte_rate", 2097152.0),
          ("user=alice", "alice", None, None, "consumer_byte_rate", 5.0),  # not declared: never touched
          ("client-id=app", None, "app", None, "request_percentage", 25.0),
          ("user=<default>", None, None, None, "producer_byte_rate", 1000.0),
          ("user=<default>,client-id=batch", None, "batch", None, "consumer_byte_rate", 7.0)]
ACLS = [("User:alice", "Topic", "orders", "Literal", "Read", "Allow", "*"),
        ("User:alice", "Topic", "stale", "Literal", "Write", "Allow", "*")]


def rows(frame) -> list[dict[str, Any]]:
    return [r.asDict(recursive=True) for r in frame.collect()]


def _tree(root: Path) -> Path:
    repo = root / "repo"
    write_yaml(repo / "clusters" / "p1" / "users.yaml",
               kcluster("p1"),
               user("alice", cluster="p1", quotas={"producer_byte_rate": 1048576},
                    acls=[entry("Topic", "orders", ["Read"]), entry("Topic", "orders", ["Write"])]),  # quota, ACLs
               user("bob", cluster="p1", mechanism="scram-sha-256"),  # Kafka has SCRAM-SHA-512 only
               user("carol", cluster="p1", authentication={"iterations": 8192}),  # other iterations
               user("dave", cluster="p1", authentication={"passwordSecretRef": {"name": "dave-secret"}}),  # new
               user("erin", cluster="p1"),  # as declared: rotation is invisible, kept
               user("frank", cluster="p1", mechanism=None, quotas={"consumer_byte_rate": 100}),  # quotas only
               client_quota("apps", {"clientId": "app"}, {"request_percentage": 50}, cluster="p1"),
               client_quota("defaults", {"userDefault": True}, {"producer_byte_rate": 1000}, cluster="p1"),
               client_quota("batch", {"userDefault": True, "clientId": "batch"}, {"consumer_byte_rate": 7},
                            cluster="p1"),
               client_quota("edge", {"ip": "10.0.0.1"}, {"connection_creation_rate": 10}, cluster="p1"))
    write_yaml(repo / "clusters" / "old" / "users.yaml", kcluster("old"), topic("t", cluster=None),
               user("olga", cluster=None, quotas={"producer_byte_rate": 10}))
    return repo


@pytest.fixture(scope="module")
def fleet(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("principals")
    repo = _tree(root)
    snaps = root / "snaps"
    write_snapshot(snaps, "p1", [SnapTopic("orders")], acls=ACLS, brokers=(0, 1), scram=SCRAM, quotas=QUOTAS)
    write_snapshot(snaps, "old", [SnapTopic("t")], principal_tables=False)
    d = desired.load(spark, [str(repo)])
    o = observed.load(spark, str(snaps))
    planned = plan.run(d, o).persist()
    yield {"repo": repo, "desired": d, "observed": o, "planned": planned, "plan": rows(planned)}
    planned.unpersist()


def test_desired_rows_carry_no_password_and_inline_acls_join_the_acl_rows(fleet):
    d = fleet["desired"]
    users = {r["principal"]: r for r in rows(d.users)}
    assert set(users) == {f"User:{n}" for n in ("alice", "bob", "carol", "dave", "erin", "frank", "olga")}
    assert (users["User:dave"]["mechanism"], users["User:dave"]["iterations"], users["User:dave"]["password_source"],
            users["User:dave"]["secret_name"]) == ("SCRAM-SHA-512", 4096, "passwordSecretRef", "dave-secret")
    assert users["User:erin"]["password_source"] == "generated" and users["User:frank"]["mechanism"] is None
    assert users["User:alice"]["quotas"] == {"producer_byte_rate": 1048576.0} and users["User:bob"]["quotas"] is None
    assert not any("password" in k and k != "password_source" for r in users.values() for k in r)
    acls = {(r["kind"], r["principal"]) for r in rows(d.acls)}
    assert ("KafkaUser", "User:alice") in acls and ("KafkaUser", "User:bob") not in acls
    assert {b["operation"] for b in rows(d.bindings) if b["principal"] == "User:alice"} == {"Read", "Write"}
    quotas = {r["quota_entity"]: r for r in rows(d.client_quotas)}
    assert set(quotas) == {"client-id=app", "user=<default>", "user=<default>,client-id=batch", "ip=10.0.0.1"}
    assert quotas["user=<default>,client-id=batch"]["entity"] == [{"type": "user", "name": None},
                                                                  {"type": "client-id", "name": "batch"}]


def test_observed_reads_the_principal_tables_and_marks_old_snapshots(fleet):
    o = fleet["observed"]
    assert o.headers["p1"].unread == () and set(o.headers["old"].unread) == {"scram_credentials", "client_quotas"}
    assert {(r["user"], r["mechanism"]) for r in rows(o.scram_credentials)} == {(u, m) for u, m, _ in SCRAM}
    assert len(rows(o.client_quotas)) == len(QUOTAS)
    # a header note saying a table could not be read marks it unread too
    header = {"unread": []}
    assert plan.principals_observed(header, [], [])[0] == {}
    assert plan.principals_observed({"unread": ["scram_credentials"]}, [], [])[0] is None


def test_quota_entities_from_snapshot_rows():
    for text, entity in (("user=alice", QuotaEntity.of(user="alice")), ("user=<default>", QuotaEntity.of(user=None)),
                         ("user=<default>,client-id=batch", QuotaEntity.of(user=None, client_id="batch")),
                         ("client-id=<default>", QuotaEntity.of(client_id=None)), ("ip=10.0.0.1", QuotaEntity.of(ip="10.0.0.1")),
                         ("ip=<default>", QuotaEntity.of(ip=None))):
        parts = {"user": None, "client_id": None, "ip": None}
        for t, n in entity.components:
            parts[{"user": "user", "client-id": "client_id", "ip": "ip"}[t]] = n
        assert plan.quota_entity({"entity": text, **parts}) == entity, text
    with pytest.raises(ValueError, match="does not match"):
        plan.quota_entity({"entity": "user=bob", "user": "alice", "client_id": None, "ip": None})


def _engine_observed() -> ObservedState:
    """p1 as the engine's own observe() would have read it, built from the same data by hand."""
    scram: dict[str, list[ScramCredentialInfo]] = {}
    for u, m, i in SCRAM:
        scram.setdefault(u, []).append(ScramCredentialInfo(ScramMechanism.parse(m), i))
    quotas: dict[QuotaEntity, dict[str, float]] = {}
    entities = {"user=alice": QuotaEntity.of(user="alice"), "client-id=app": QuotaEntity.of(client_id="app"),
                "user=<default>": QuotaEntity.of(user=None),
                "user=<default>,client-id=batch": QuotaEntity.of(user=None, client_id="batch")}
    for text, _, _, _, key, value in QUOTAS:
        quotas.setdefault(entities[text], {})[key] = value
    acls: dict[str, set[AclBinding]] = {}
    for p, rt, rn, pt, op, perm, host in ACLS:
        acls.setdefault(p, set()).add(AclBinding(ResourceType(rt), rn, PatternType(pt), p, host, AclOperation(op),
                                                 AclPermission(perm)))
    return ObservedState(None, 0, {0: BrokerInfo(0, "127.0.0.1", 9092, None), 1: BrokerInfo(1, "127.0.0.1", 9093, None)},
                         {}, acls={p: frozenset(b) for p, b in acls.items()},
                         scram={u: tuple(c) for u, c in scram.items()}, quotas=quotas)


def test_plan_equals_the_engine_planner_for_users_and_quotas(fleet):
    """The fleet's rows for p1's users and quotas are the engine's plan on the same inputs, where the
    passwords known are those of the users whose credential must be (re)written - what `kafkaops
    plan` shows given exactly those passwords (the fleet sees no password, so no rotation)."""
    reference = load_and_validate([fleet["repo"] / "clusters" / "p1"])
    assert reference.ok, reference.errors
    stand_in = Secret("known only to this test")
    wanted = DesiredState((), (), (), None, reference.users(), reference.client_quotas(),
                          {name: stand_in for name in ("bob", "carol", "dave")})
    made = engine_plan(wanted, _engine_observed(), cluster="p1")
    expected = {(r.kind, r.name): (r.action.value, [(c.field, c.old, c.new) for c in r.changes],
                                   r.problem.reason if r.problem else None)
                for r in made.resources if r.action.value != "none" or r.problem is not None}
    got = {(r["kind"], r["name"]): (r["action"], [(c["field"], c["old"], c["new"]) for c in r["changes"]],
                                    r["problem_reason"])
           for r in fleet["plan"] if r["record"] == "resource" and r["cluster"] == "p1"}
    assert got == expected
    assert got[("KafkaUser", "User:dave")][0] == "create"
    assert got[("KafkaUser", "User:dave")][1] == [("credential.SCRAM-SHA-512", None, "4096 iterations")]
    assert got[("KafkaUser", "User:bob")][0] == "update"  # another mechanism: the declared one is added
    assert got[("KafkaUser", "User:carol")][1] == [("credential.SCRAM-SHA-512.iterations", "4096", "8192")]
    assert ("KafkaUser", "User:alice") in got and ("KafkaUser", "User:erin") not in got
    assert ("quota.producer_byte_rate", "2097152", "1048576") in got[("KafkaUser", "User:alice")][1]
    assert not any(c[0] == "quota.consumer_byte_rate" for c in got[("KafkaUser", "User:alice")][1])
    assert got[("KafkaClientQuota", "client-id=app")][0] == "update"
    assert got[("KafkaClientQuota", "ip=10.0.0.1")][0] == "create"
    assert ("KafkaClientQuota", "user=<default>") not in got and ("KafkaClientQuota", "user=<default>,client-id=batch") not in got


def test_a_snapshot_without_the_principal_tables_refuses_instead_of_creating(fleet):
    olga = [r for r in fleet["plan"] if r["record"] == "resource" and r["cluster"] == "old"]
    assert [(r["kind"], r["name"], r["action"], r["problem_reason"]) for r in olga] == [
        ("KafkaUser", "User:olga", "none", "ObserveFailed")]


def test_drift_of_credentials_quotas_and_inline_acls(fleet):
    got = {(r["kind"], r["name"], r["field"], r["desired"], r["observed"]) for r in rows(drift.run(fleet["planned"]))}
    assert ("KafkaUser", "User:bob", "credential", "SCRAM-SHA-256 (4096 iterations)",
            "SCRAM-SHA-512 (4096 iterations)") in got
    assert ("KafkaUser", "User:carol", "credential", "SCRAM-SHA-512 (8192 iterations)",
            "SCRAM-SHA-512 (4096 iterations)") in got
    assert ("KafkaUser", "User:alice", "quota.producer_byte_rate", "1048576", "2097152") in got
    assert ("KafkaClientQuota", "client-id=app", "quota.request_percentage", "50", "25") in got
    assert ("KafkaUser", "User:alice", "acl", "Allow User:alice Write on Topic:orders (Literal) from *", None) in got
    assert ("KafkaUser", "User:alice", "acl", None, "Allow User:alice Write on Topic:stale (Literal) from *") in got
    names = {name for _, name, *_ in got}
    assert not names & {"User:dave", "User:erin", "User:frank", "ip=10.0.0.1", "user=<default>"}  # new, or equal


def test_set_rules_for_users_and_quotas_match_validate(spark, tmp_path):
    """DuplicateUser, DuplicateQuotaEntity and DuplicateAclPrincipal (a KafkaAcl and a KafkaUser's
    inline rules) across files: the same issues as `kafkaops validate`."""
    tree = tmp_path / "repo"
    write_yaml(tree / "a.yaml", kcluster("c1"), user("u1", quotas={"producer_byte_rate": 1}),
               user("u2", acls=[entry("Topic", "x", ["Read"])]),
               client_quota("q1", {"clientId": "app"}, {"request_percentage": 10}))
    from fleet_helpers import acl
    write_yaml(tree / "b.yaml", user("other", principal="User:u1"),
               client_quota("q2", {"user": "u1"}, {"producer_byte_rate": 2}),
               client_quota("q3", {"clientId": "app"}, {"request_percentage": 20}),
               acl("u2-acls", "User:u2", [entry("Topic", "y", ["Read"])]))
    loaded = desired.load(spark, [str(tree)])
    got = {(Path(i["file"]).name, i["index"], i["rule"], i["path"], i["message"]) for i in rows(loaded.issues)}
    reference = load_and_validate([tree])
    want = {(Path(i.file).name, i.index, i.rule, i.path, i.reason) for i in (*reference.errors, *reference.warnings)}
    assert {r for _, _, r, _, _ in want} >= {"DuplicateUser", "DuplicateQuotaEntity", "DuplicateAclPrincipal"}
    assert {(f, i, r, p) for f, i, r, p, _ in got} == {(f, i, r, p) for f, i, r, p, _ in want}
    assert {m.split(": also at")[0] for *_, m in got} == {m.split(": also at")[0] for *_, m in want}


def test_policy_requires_quotas_per_namespace_and_forbids_users_without_quotas(spark, tmp_path):
    from kafkaops.fleet import policy as policy_stage
    from kafkaops.fleet.policy import PolicyError, parse_policy

    repo = tmp_path / "repo"
    write_yaml(repo / "clusters" / "prod" / "users.yaml", kcluster("prod"),
               user("pay-app", cluster=None, namespace="payments"),  # no quotas: QuotasRequired + UserWithoutQuotas
               user("pay-capped", cluster=None, namespace="payments", quotas={"producer_byte_rate": 1024}),
               user("pay-covered", cluster=None, namespace="payments"),  # a KafkaClientQuota names it
               user("ops", cluster=None, namespace="ops"),  # outside the namespace: UserWithoutQuotas only
               user("empty", cluster=None, namespace="payments", quotas={}),  # {} declares none
               client_quota("covered", {"user": "pay-covered", "clientId": "x"}, {"request_percentage": 10},
                            cluster=None, namespace="payments"))
    write_yaml(repo / "clusters" / "dev" / "users.yaml", kcluster("dev"),
               user("pay-dev", cluster=None, namespace="payments"),  # covered by the default user's quotas
               client_quota("default", {"userDefault": True}, {"producer_byte_rate": 1}, cluster=None))
    snaps = tmp_path / "snaps"
    write_snapshot(snaps, "prod", scram=[("pay-app", "SCRAM-SHA-512", 4096), ("ghost", "SCRAM-SHA-256", 4096),
                                         ("capped", "SCRAM-SHA-256", 4096)],
                   quotas=[("user=capped", "capped", None, None, "producer_byte_rate", 1.0)])
    write_snapshot(snaps, "dev", scram=[("anyone", "SCRAM-SHA-256", 4096)],
                   quotas=[("user=<default>,client-id=x", None, "x", None, "producer_byte_rate", 1.0)])
    d = desired.load(spark, [str(repo)])
    o = observed.load(spark, str(snaps))
    text = ("version: 1\ncheck: both\nusers:\n  requireQuotas:\n    - namespace: payments\n      clusters: ['pr*']\n"
            "  forbidUsersWithoutQuotas: true\nseverities:\n  UserWithoutQuotas: warning\n")
    got = {(r["cluster"], r["name"], r["rule"], r["severity"], r["state"])
           for r in rows(policy_stage.run(d, o, parse_policy(text, "p.yaml"), ["dev", "prod"]))}
    assert got == {
        ("prod", "User:pay-app", "QuotasRequired", "error", "desired"),
        ("prod", "User:empty", "QuotasRequired", "error", "desired"),
        ("prod", "User:pay-app", "UserWithoutQuotas", "warning", "desired"),
        ("prod", "User:empty", "UserWithoutQuotas", "warning", "desired"),
        ("prod", "User:ops", "UserWithoutQuotas", "warning", "desired"),
        ("prod", "User:pay-app", "UserWithoutQuotas", "warning", "observed"),
        ("prod", "User:ghost", "UserWithoutQuotas", "warning", "observed"),
    }
    required = next(r for r in rows(policy_stage.run(d, o, parse_policy(text, "p.yaml"), ["dev", "prod"]))
                    if r["rule"] == "QuotasRequired" and r["name"] == "User:pay-app")
    assert "namespace payments" in required["message"] and required["file"].endswith("users.yaml")
    with pytest.raises(PolicyError, match=r"users\.requireQuotas\[0\]"):
        parse_policy("version: 1\nusers:\n  requireQuotas:\n    - {}\n", "p.yaml")
    with pytest.raises(PolicyError, match="forbidUsersWithoutQuotas"):
        parse_policy("version: 1\nusers:\n  forbidUsersWithoutQuotas: 3\n", "p.yaml")
