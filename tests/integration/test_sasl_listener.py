"""The fake cluster's SASL_PLAINTEXT listener authenticates with the SCRAM credentials set through
AlterUserScramCredentials: our admin client and an independent client (confluent-kafka, i.e.
librdkafka) log in with the password kafkaops set, and fail with the old one after a rotation."""

from __future__ import annotations

import asyncio

import pytest

from kafkaops.kafka import AdminClient, AuthenticationFailed, SecuritySettings
from kafkaops.kafka.models import ScramDeletion, ScramMechanism
from kafkaops.kafka.scram import scram_upsertion
from kafkaops.testing.fake_cluster import FakeClusterDouble
from kafkaops.testing.sasl_double import SaslServerDouble

pytest.importorskip("confluent_kafka")
from librdkafka_client import librdkafka_login  # noqa: E402

SHA256, SHA512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512


def scram(mechanism: str, user: str, password: str) -> SecuritySettings:
    return SecuritySettings(protocol="SASL_PLAINTEXT", sasl_mechanism=mechanism, sasl_username=user, sasl_password=password)


@pytest.fixture
async def cluster():
    plain_users = SaslServerDouble({"ops": "plain-only-pw"}, mechanisms=("SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"))
    async with FakeClusterDouble(brokers=2, tick_interval=None, sasl_port=0, sasl_listener=plain_users) as double:
        yield double
        assert not double.errors


async def test_our_client_logs_in_with_a_credential_it_set_and_metadata_names_the_sasl_ports(cluster):
    async with AdminClient.connect(cluster.bootstrap) as admin:
        assert (await admin.alter_user_scram_credentials([scram_upsertion("app", SHA512, "first-pw-1")])).all_ok
    async with AdminClient.connect(cluster.sasl_bootstrap, security=scram("SCRAM-SHA-512", "app", "first-pw-1")) as user:
        described = await user.describe_cluster()
        assert sorted(b.port for b in described.brokers.values()) == sorted(
            cluster.state.brokers[b].sasl_port for b in cluster.brokers
        )
    with pytest.raises(AuthenticationFailed) as failed:
        await AdminClient.connect(cluster.sasl_bootstrap, security=scram("SCRAM-SHA-256", "app", "first-pw-1"), connect_attempts=1)
    assert "first-pw-1" not in str(failed.value)  # no SHA-256 credential for app: refused, no secret in the error
    # PLAIN: only the SASL double's own users (a SCRAM store has no plain password)
    async with AdminClient.connect(cluster.sasl_bootstrap, security=scram("PLAIN", "ops", "plain-only-pw")):
        pass
    with pytest.raises(AuthenticationFailed):
        await AdminClient.connect(cluster.sasl_bootstrap, security=scram("PLAIN", "app", "first-pw-1"), connect_attempts=1)


async def test_librdkafka_logs_in_then_the_old_password_fails_after_rotation(cluster):
    async with AdminClient.connect(cluster.bootstrap) as admin:
        assert (await admin.alter_user_scram_credentials([scram_upsertion("svc", SHA512, "old-secret-1", 8192)])).all_ok
        ok, errors = await asyncio.to_thread(librdkafka_login, cluster.sasl_bootstrap, "SCRAM-SHA-512", "svc", "old-secret-1")
        assert ok, errors
        bad, errors = await asyncio.to_thread(librdkafka_login, cluster.sasl_bootstrap, "SCRAM-SHA-512", "svc", "a-wrong-one")
        assert not bad and any("_AUTHENTICATION" in e for e in errors), errors

        assert (await admin.alter_user_scram_credentials([scram_upsertion("svc", SHA512, "new-secret-2")])).all_ok
        old, errors = await asyncio.to_thread(librdkafka_login, cluster.sasl_bootstrap, "SCRAM-SHA-512", "svc", "old-secret-1")
        assert not old and any("_AUTHENTICATION" in e for e in errors), errors
        new, errors = await asyncio.to_thread(librdkafka_login, cluster.sasl_bootstrap, "SCRAM-SHA-512", "svc", "new-secret-2")
        assert new, errors

        # SCRAM-SHA-256 too; and a deleted credential no longer logs in
        assert (await admin.alter_user_scram_credentials([scram_upsertion("svc", SHA256, "sha256-pw")])).all_ok
        ok256, errors = await asyncio.to_thread(librdkafka_login, cluster.sasl_bootstrap, "SCRAM-SHA-256", "svc", "sha256-pw")
        assert ok256, errors
        assert (await admin.alter_user_scram_credentials([ScramDeletion("svc", SHA256)])).all_ok
        gone, errors = await asyncio.to_thread(librdkafka_login, cluster.sasl_bootstrap, "SCRAM-SHA-256", "svc", "sha256-pw")
        assert not gone, errors
