"""KafkaUser and KafkaClientQuota through the engine against the fake cluster double: apply, a second
plan with nothing to do, a password rotation (one upsertion; the stored keys are the new
password's), validate-only plans, per-item errors kept to their resource, removal, missing APIs,
bulk batching, and no password in logs, outcomes or the ownership store."""

from __future__ import annotations

import hashlib
import hmac
import logging
import time

import pytest

from kafkaops.kafka import AdminClient, Batcher, QuotaEntity
from kafkaops.kafka.apis import Api
from kafkaops.reconcile import DesiredState, Engine, RunOptions, State
from kafkaops.reconcile.ownership import MemoryOwnershipStore
from kafkaops.reconcile.principals import PASSWORD_UNAVAILABLE, scram_owner
from kafkaops.reconcile.settings import EngineSettings
from kafkaops.resources.documents import Source
from kafkaops.resources.models import ClusterRef
from kafkaops.resources.users import KafkaClientQuota
from kafkaops.testing.fake_cluster import FakeClusterDouble

from engine_helpers import client_quota, desired_with_passwords, kafka_user, topic

log = logging.getLogger(__name__)
PASSWORD, ROTATED = "first-Secret-0451", "second-Secret-9922"
ENTRY = {"resource": {"type": "Topic", "name": "orders"}, "operations": ["Read", "Describe"]}
OPTIONS = RunOptions(all_topics=False)
FAST = EngineSettings(wait_poll_min=0.01)


def manifests(alice_password: str = PASSWORD) -> DesiredState:
    return desired_with_passwords(
        {"alice": alice_password, "bob": "bob-Secret-77"},
        topic("orders"),
        kafka_user("alice", authentication={"type": "scram-sha-512", "passwordSecretRef": {"name": "alice-pw"}},
                   quotas={"producer_byte_rate": 1048576, "request_percentage": 25}, acls=[ENTRY]),
        kafka_user("bob", authentication={"type": "scram-sha-256", "passwordSecretRef": {"name": "bob-pw"}}),
        kafka_user("gen", authentication={"type": "scram-sha-256"}),  # generated: no password in the CLI
        client_quota("apps", {"clientIdDefault": True}, {"consumer_byte_rate": 2048}),
        client_quota("agents", {"ip": "10.0.0.7"}, {"connection_creation_rate": 5}),
    )


def stored_key_matches(cluster: FakeClusterDouble, user: str, mechanism: str, password: str) -> bool:
    salt, stored, _server, iterations = cluster.state.principals.scram_credential(mechanism, user)
    name = "sha512" if mechanism.endswith("512") else "sha256"
    salted = hashlib.pbkdf2_hmac(name, password.encode(), salt, iterations)
    return hashlib.new(name, hmac.new(salted, b"Client Key", name).digest()).digest() == stored


@pytest.fixture
async def cluster():
    async with FakeClusterDouble(brokers=3, tick_interval=None) as double:
        yield double
        assert not double.errors


async def test_apply_then_nothing_to_do_then_a_rotation_upserts_once(cluster, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    store = MemoryOwnershipStore()
    async with AdminClient.connect(cluster.bootstrap) as admin:
        engine = Engine(Batcher(admin), ownership=store, cluster="dev", settings=FAST)
        report = await engine.reconcile(manifests(), OPTIONS)
        states = {o.name: o.state for o in report.outcomes}
        assert states == {"orders": State.APPLIED, "User:alice": State.APPLIED, "User:bob": State.APPLIED,
                          "User:gen": State.FAILED, "client-id=<default>": State.APPLIED, "ip=10.0.0.7": State.APPLIED}
        assert report.outcomes[3].problem.reason == PASSWORD_UNAVAILABLE
        principals = cluster.state.principals
        assert set(principals.scram) == {"alice", "bob"}
        assert stored_key_matches(cluster, "alice", "SCRAM-SHA-512", PASSWORD)
        assert principals.quotas[(("user", "alice"),)] == {"producer_byte_rate": 1048576.0, "request_percentage": 25.0}
        assert {str(e) for e in (await admin.describe_client_quotas())} == {
            "user=alice", "client-id=<default>", "ip=10.0.0.7"}

        again = await engine.plan(manifests(), OPTIONS)
        assert [r.name for r in again.plan.pending] == ["User:gen"]  # the password is still unavailable
        assert again.requests.get("DescribeUserScramCredentials") == 1
        assert again.requests.get("DescribeClientQuotas") == 1

        rotated = await engine.plan(manifests(ROTATED), OPTIONS)
        (alice,) = [r for r in rotated.plan.pending if r.name == "User:alice"]
        assert [str(c) for c in alice.changes] == ["credential.SCRAM-SHA-512.password: (sensitive) -> (sensitive)"]
        cluster.clear_requests()
        report = await engine.apply(rotated, OPTIONS)
        assert cluster.count(Api.ALTER_USER_SCRAM_CREDENTIALS) == 1
        assert stored_key_matches(cluster, "alice", "SCRAM-SHA-512", ROTATED)
        assert not stored_key_matches(cluster, "alice", "SCRAM-SHA-512", PASSWORD)
        stored = store.load(engine.state_key())
        assert set(stored.owners[scram_owner("alice")]) == {"SCRAM-SHA-512"}
    everything = caplog.text + repr(report) + repr(stored) + repr(rotated)
    for secret in (PASSWORD, ROTATED, "bob-Secret-77"):
        assert secret not in everything


async def test_validate_only_asks_the_broker_about_quotas_and_skips_credentials(cluster) -> None:
    async with AdminClient.connect(cluster.bootstrap) as admin:
        engine = Engine(Batcher(admin), cluster="dev", settings=FAST)
        planned = await engine.plan(manifests(), OPTIONS)
        cluster.clear_requests()
        report = await engine.apply(planned, RunOptions(all_topics=False, validate_only=True))
    by_name = {o.name: o for o in report.outcomes}
    assert by_name["client-id=<default>"].state is State.VALIDATED
    assert by_name["User:bob"].state is State.VALIDATED
    assert any("no validate-only mode" in n for n in by_name["User:bob"].notes)
    assert cluster.count(Api.ALTER_CLIENT_QUOTAS) >= 1 and cluster.count(Api.ALTER_USER_SCRAM_CREDENTIALS) == 0
    assert cluster.state.principals.quotas == {} and cluster.state.principals.scram == {}


async def test_a_refused_quota_fails_its_resource_only(cluster) -> None:
    source = Source("bad.yaml", 0, "KafkaClientQuota", None, "bad")
    bad = KafkaClientQuota(source, "bad", None, ClusterRef("dev"), (("client-id", "x"),), {"bogus_rate": 1.0})
    base = manifests()
    state = DesiredState.of([*base.topics, *base.users, *base.client_quotas, bad], None, base.passwords)
    async with AdminClient.connect(cluster.bootstrap) as admin:
        report = await Engine(Batcher(admin), cluster="dev", settings=FAST).reconcile(state, OPTIONS)
    by_name = {o.name: o for o in report.outcomes}
    assert by_name["client-id=x"].state is State.FAILED
    assert by_name["client-id=x"].problem.reason == "INVALID_REQUEST"
    assert by_name["User:alice"].state is State.APPLIED and by_name["client-id=<default>"].state is State.APPLIED


async def test_removal_deletes_the_credential_quotas_and_bindings(cluster) -> None:
    store = MemoryOwnershipStore()
    async with AdminClient.connect(cluster.bootstrap) as admin:
        engine = Engine(Batcher(admin), ownership=store, cluster="dev", settings=FAST)
        state = manifests()
        await engine.reconcile(state, OPTIONS)
        alice = next(u for u in state.users if u.name == "alice")
        removal = await engine.plan_removal(alice)
        report = await engine.apply(removal, OPTIONS)
        assert [o.state for o in report.outcomes] == [State.APPLIED]
        assert "alice" not in cluster.state.principals.scram
        assert (("user", "alice"),) not in cluster.state.principals.quotas
        assert not [b for b in await admin.describe_acls() if b.principal == "User:alice"]
        assert "quota/user=alice" not in store.load(engine.state_key()).owners


async def test_clusters_without_the_apis_fail_only_the_resources_that_need_them() -> None:
    disabled = (Api.DESCRIBE_USER_SCRAM_CREDENTIALS, Api.ALTER_USER_SCRAM_CREDENTIALS,
                Api.DESCRIBE_CLIENT_QUOTAS, Api.ALTER_CLIENT_QUOTAS)
    async with FakeClusterDouble(brokers=1, tick_interval=None, disabled_apis=[int(a) for a in disabled]) as cluster:
        async with AdminClient.connect(cluster.bootstrap) as admin:
            report = await Engine(Batcher(admin), cluster="old", settings=FAST).reconcile(manifests(), OPTIONS)
    by_name = {o.name: o for o in report.outcomes}
    assert by_name["orders"].state is State.APPLIED
    for name in ("User:alice", "User:bob", "client-id=<default>"):
        assert by_name[name].problem.reason == "UnsupportedFeature", by_name[name]
    assert "DescribeUserScramCredentials" in by_name["User:bob"].problem.message
    assert "DescribeClientQuotas" in by_name["client-id=<default>"].problem.message


async def test_many_users_share_a_few_alter_requests(cluster) -> None:
    count = 300
    docs = [kafka_user(f"user-{i:04d}", authentication={"type": "scram-sha-512", "passwordSecretRef": {"name": f"s{i}"}})
            for i in range(count)]
    state = desired_with_passwords({f"user-{i:04d}": f"pw-{i}" for i in range(count)}, *docs)
    async with AdminClient.connect(cluster.bootstrap) as admin:
        engine = Engine(Batcher(admin), cluster="dev", settings=FAST)
        started = time.perf_counter()
        planned = await engine.plan(state, OPTIONS)
        cluster.clear_requests()
        report = await engine.apply(planned, OPTIONS)
        seconds = time.perf_counter() - started
    requests = cluster.count(Api.ALTER_USER_SCRAM_CREDENTIALS)
    log.warning("%d KafkaUsers: plan + apply %.2f s, %d AlterUserScramCredentials request(s)", count, seconds, requests)
    assert report.counts() == {"applied": count}
    assert requests <= 2
    assert len(cluster.state.principals.scram) == count


async def test_a_credential_that_cannot_be_salted_fails_its_user_only(cluster) -> None:
    from dataclasses import replace

    base = manifests()
    alice = next(u for u in base.users if u.name == "alice")
    bad = replace(alice, authentication=replace(alice.authentication, iterations=100))  # below Kafka's 4096
    state = DesiredState.of([bad, *(u for u in base.users if u.name == "bob")], None, base.passwords)
    async with AdminClient.connect(cluster.bootstrap) as admin:
        report = await Engine(Batcher(admin), cluster="dev", settings=FAST).reconcile(state, OPTIONS)
    by_name = {o.name: o for o in report.outcomes}
    assert by_name["User:alice"].state is State.FAILED and by_name["User:alice"].problem.reason == "InvalidCredential"
    assert "iterations 100 is outside Kafka's range" in by_name["User:alice"].problem.message
    assert PASSWORD not in by_name["User:alice"].problem.message
    assert by_name["User:bob"].state is State.APPLIED and set(cluster.state.principals.scram) == {"bob"}
