"""SCRAM credentials (APIs 50/51) and client quotas (APIs 48/49) through the admin client,
against the fake cluster double (noida-db and Tansu do not implement these APIs)."""

from __future__ import annotations

import pytest

from kafkaops.kafka import AdminClient, KafkaRequestError, UnsupportedFeature
from kafkaops.kafka.apis import Api
from kafkaops.kafka.models import (
    QuotaAlteration,
    QuotaEntity,
    QuotaFilter,
    QuotaFilterComponent,
    ScramCredentialInfo,
    ScramDeletion,
    ScramMechanism,
    ScramUpsertion,
)
from kafkaops.kafka.scram import scram_upsertion
from kafkaops.testing.fake.control import state_snapshot
from kafkaops.testing.fake.faults import FaultDouble
from kafkaops.testing.fake_cluster import FakeClusterDouble

SHA256, SHA512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512


@pytest.fixture
async def cluster():
    async with FakeClusterDouble(brokers=3, tick_interval=None) as double:
        yield double
        assert not double.errors


@pytest.fixture
async def admin(cluster):
    async with AdminClient.connect(cluster.bootstrap, retry_backoff=0.01) as client:
        yield client


async def test_upsert_describe_and_delete_credentials(admin, cluster):
    results = await admin.alter_user_scram_credentials(
        [scram_upsertion("alice", "SCRAM-SHA-512", "pw-a", 8192), scram_upsertion("bob", SHA256, "pw-b")]
    )
    assert results.all_ok, results.failed()
    assert set(results) == {("alice", SHA512), ("bob", SHA256)}

    everyone = await admin.describe_user_scram_credentials()
    assert dict(everyone.succeeded()) == {
        "alice": (ScramCredentialInfo(SHA512, 8192),),
        "bob": (ScramCredentialInfo(SHA256, 4096),),
    }
    named = await admin.describe_user_scram_credentials(["bob", "nobody"])
    assert named["bob"].value == (ScramCredentialInfo(SHA256, 4096),)
    assert named["nobody"].error.name == "RESOURCE_NOT_FOUND"

    deleted = await admin.alter_user_scram_credentials([ScramDeletion("bob", SHA256)])
    assert deleted.all_ok
    assert list(await admin.describe_user_scram_credentials()) == ["alice"]
    # /state shows mechanisms and iterations, never salts or salted passwords
    assert state_snapshot(cluster)["users"] == {"alice": {"SCRAM-SHA-512": {"iterations": 8192}}}


async def test_per_user_errors_leave_the_others_applied(admin, cluster):
    good = scram_upsertion("carol", SHA256, "pw")
    too_few = ScramUpsertion("dave", SHA256, 1024, b"salt", b"x" * 32)  # bypasses scram_upsertion's check
    too_many = ScramUpsertion("erin", SHA512, 20000, b"salt", b"x" * 64)
    unknown = ScramUpsertion("frank", ScramMechanism.UNKNOWN, 4096, b"salt", b"x" * 32)
    missing = ScramDeletion("grace", SHA512)
    results = await admin.alter_user_scram_credentials([good, too_few, too_many, unknown, missing])
    errors = {key[0]: error.name for key, error in results.failed().items()}
    assert errors == {
        "dave": "UNACCEPTABLE_CREDENTIAL",
        "erin": "UNACCEPTABLE_CREDENTIAL",
        "frank": "UNSUPPORTED_SASL_MECHANISM",
        "grace": "RESOURCE_NOT_FOUND",
    }
    assert results[("carol", SHA256)].ok
    assert set(cluster.state.principals.scram) == {"carol"}
    assert cluster.count(Api.ALTER_USER_SCRAM_CREDENTIALS) == 1


async def test_two_mechanisms_of_one_user_go_in_two_requests(admin, cluster):
    # KRaft refuses a second alteration of one user in one request (DUPLICATE_RESOURCE)
    await admin.alter_user_scram_credentials([scram_upsertion("hank", SHA256, "old")])
    cluster.clear_requests()
    results = await admin.alter_user_scram_credentials(
        [scram_upsertion("hank", SHA512, "new"), ScramDeletion("hank", SHA256), scram_upsertion("ivy", SHA512, "pw")]
    )
    assert results.all_ok, results.failed()
    assert cluster.count(Api.ALTER_USER_SCRAM_CREDENTIALS) == 2
    assert set(cluster.state.principals.scram["hank"]) == {int(SHA512)}


async def test_a_deletion_retried_after_a_timeout_counts_as_done(admin, cluster):
    await admin.alter_user_scram_credentials([scram_upsertion("jack", SHA256, "pw")])
    cluster.inject(FaultDouble.timed_out_after_apply(api_keys=[int(Api.ALTER_USER_SCRAM_CREDENTIALS)]))
    results = await admin.alter_user_scram_credentials([ScramDeletion("jack", SHA256)])
    assert results.all_ok, results.failed()
    assert cluster.count(Api.ALTER_USER_SCRAM_CREDENTIALS) == 3  # the upsert, the timed-out delete, its retry
    assert "jack" not in cluster.state.principals.scram


async def test_writes_follow_a_moving_zk_controller():
    async with FakeClusterDouble(brokers=3, mode="zk", tick_interval=None) as cluster:
        async with AdminClient.connect(cluster.bootstrap, retry_backoff=0.01) as admin:
            await admin.refresh_metadata()
            cluster.move_controller()
            results = await admin.alter_user_scram_credentials([scram_upsertion("kim", SHA256, "pw")])
            assert results.all_ok, results.failed()
            quotas = await admin.alter_client_quotas([QuotaAlteration(QuotaEntity.of(user="kim"), {"producer_byte_rate": 1024})])
            assert quotas.all_ok, quotas.failed()
            assert any(f for f in cluster.requests if f.api_key == 51 and f.broker_id == cluster.controller_id)


async def test_quotas_alter_describe_filter_and_remove(admin, cluster):
    alice = QuotaEntity.of(user="alice")
    alice_app = QuotaEntity.of(user="alice", client_id="app")
    default_user = QuotaEntity.of(user=None)
    app = QuotaEntity.of(client_id="app")
    ip = QuotaEntity.of(ip="10.0.0.1")
    results = await admin.alter_client_quotas(
        [
            QuotaAlteration(alice, {"producer_byte_rate": 1_048_576, "consumer_byte_rate": 2_097_152}),
            QuotaAlteration(alice_app, {"request_percentage": 25.5}),
            QuotaAlteration(default_user, {"producer_byte_rate": 1024}),
            QuotaAlteration(app, {"controller_mutation_rate": 10}),
            QuotaAlteration(ip, {"connection_creation_rate": 5}),
        ]
    )
    assert results.all_ok, results.failed()
    assert cluster.count(Api.ALTER_CLIENT_QUOTAS) == 1

    every = await admin.describe_client_quotas()
    assert every[alice] == {"producer_byte_rate": 1_048_576.0, "consumer_byte_rate": 2_097_152.0}
    assert every[alice_app] == {"request_percentage": 25.5}
    assert set(every) == {alice, alice_app, default_user, app, ip}

    users = await admin.describe_client_quotas(QuotaFilter((QuotaFilterComponent.any("user"),), strict=True))
    assert set(users) == {alice, default_user}
    with_alice = await admin.describe_client_quotas(QuotaFilter((QuotaFilterComponent.exact("user", "alice"),)))
    assert set(with_alice) == {alice, alice_app}
    defaults = await admin.describe_client_quotas(QuotaFilter((QuotaFilterComponent.default("user"),)))
    assert set(defaults) == {default_user}
    assert set(await admin.describe_client_quotas(QuotaFilter.entity(alice_app))) == {alice_app}

    removed = await admin.alter_client_quotas([QuotaAlteration(alice, {"producer_byte_rate": None, "consumer_byte_rate": None})])
    assert removed.all_ok
    assert alice not in await admin.describe_client_quotas()
    snapshot = state_snapshot(cluster)["quotas"]
    assert {"entity": {"ip": "10.0.0.1"}, "values": {"connection_creation_rate": 5.0}} in snapshot


async def test_quota_errors_per_entity_and_validate_only(admin, cluster):
    bob = QuotaEntity.of(user="bob")
    results = await admin.alter_client_quotas(
        [
            QuotaAlteration(bob, {"producer_byte_rate": 100}),
            QuotaAlteration(QuotaEntity.of(user="eve"), {"no_such_quota": 1}),
            QuotaAlteration(QuotaEntity.of(client_id="x"), {"consumer_byte_rate": 1.5}),
            QuotaAlteration(QuotaEntity.of(ip="10.0.0.2"), {"producer_byte_rate": 1}),
        ]
    )
    assert {str(e): err.name for e, err in results.failed().items()} == {
        "user=eve": "INVALID_REQUEST",
        "client-id=x": "INVALID_REQUEST",
        "ip=10.0.0.2": "INVALID_REQUEST",
    }
    assert results[bob].ok

    checked = await admin.alter_client_quotas([QuotaAlteration(bob, {"producer_byte_rate": 999})], validate_only=True)
    assert checked.all_ok
    assert (await admin.describe_client_quotas())[bob] == {"producer_byte_rate": 100.0}
    refused = await admin.alter_client_quotas([QuotaAlteration(bob, {"bogus": 1})], validate_only=True)
    assert refused[bob].error.name == "INVALID_REQUEST"

    with pytest.raises(KafkaRequestError, match="INVALID_REQUEST"):
        await admin.describe_client_quotas(QuotaFilter((QuotaFilterComponent.any("ip"), QuotaFilterComponent.any("user"))))


CALLS = [
    (Api.ALTER_USER_SCRAM_CREDENTIALS, lambda a: a.alter_user_scram_credentials([scram_upsertion("u", SHA256, "pw")])),
    (Api.DESCRIBE_USER_SCRAM_CREDENTIALS, lambda a: a.describe_user_scram_credentials()),
    (Api.ALTER_CLIENT_QUOTAS, lambda a: a.alter_client_quotas([QuotaAlteration(QuotaEntity.of(user="u"), {"producer_byte_rate": 1})])),
    (Api.DESCRIBE_CLIENT_QUOTAS, lambda a: a.describe_client_quotas()),
]


@pytest.mark.parametrize(("api", "call"), CALLS, ids=[api.title for api, _ in CALLS])
async def test_older_brokers_without_the_api_say_so(api, call):
    async with FakeClusterDouble(brokers=1, tick_interval=None, disabled_apis=[int(api)]) as cluster:
        async with AdminClient.connect(cluster.bootstrap, retry_backoff=0.01) as admin:
            with pytest.raises(UnsupportedFeature) as raised:
                await call(admin)
    assert raised.value.api == api.title
    assert f"does not support {api.title} (API key {int(api)})" in str(raised.value)
    assert cluster.count(int(api)) == 0


async def test_no_password_salt_or_hash_reaches_a_log_or_the_state(admin, cluster, caplog):
    import base64
    import json
    import logging

    caplog.set_level(logging.DEBUG)
    upsertion = scram_upsertion("lea", SHA512, "log-me-never-77")
    cluster.inject(FaultDouble.not_controller(count=2, api_keys=[int(Api.ALTER_USER_SCRAM_CREDENTIALS)]))
    results = await admin.alter_user_scram_credentials([upsertion])
    assert results.all_ok and cluster.count(Api.ALTER_USER_SCRAM_CREDENTIALS) == 3  # retried twice
    shown = caplog.text + repr(results) + repr(upsertion) + json.dumps(state_snapshot(cluster))
    for secret in (upsertion.salt, upsertion.salted_password):
        assert secret.hex() not in shown and base64.b64encode(secret).decode() not in shown and repr(secret) not in shown
    assert "log-me-never-77" not in shown


@pytest.mark.noida
@pytest.mark.parametrize(("api", "call"), CALLS, ids=[api.title for api, _ in CALLS])
async def test_noida_lacks_all_four_and_the_client_says_so(noida, api, call):
    """noida-db, an independent Kafka-protocol server, implements none of APIs 48-51: the same
    UnsupportedFeature path as the double's disabled APIs, on a real server."""
    async with AdminClient.connect(noida.bootstrap, retry_backoff=0.01) as admin:
        with pytest.raises(UnsupportedFeature) as raised:
            await call(admin)
    assert raised.value.api == api.title and raised.value.broker_range is None
