"""`kafkaops dev-cluster --sasl-port`: a real subprocess (stopped by PID) whose SASL_PLAINTEXT
listener lets confluent-kafka (librdkafka) log in with a SCRAM password set through kafkaops'
AlterUserScramCredentials, and refuses the old one after a rotation."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from kafkaops.kafka import AdminClient, SecuritySettings
from kafkaops.kafka.models import ScramMechanism
from kafkaops.kafka.scram import scram_upsertion

pytest.importorskip("confluent_kafka")
from librdkafka_client import librdkafka_login  # noqa: E402


def kafkaops_command() -> list[str]:
    return [sys.executable, "-m", "kafkaops"]


@contextmanager
def dev_cluster(*extra: str) -> Iterator[list[str]]:
    proc = subprocess.Popen([*kafkaops_command(), "dev-cluster", "--brokers", "2", "--port", "0", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        yield [proc.stdout.readline().strip(), proc.stdout.readline().strip()]  # bootstrap, then the SASL one
    finally:
        proc.terminate()
        proc.wait(20)


async def _set_password(bootstrap: str, password: str, security: tuple[str, str, str] | None = None) -> None:
    settings = None
    if security is not None:
        mechanism, user, secret = security
        settings = SecuritySettings(protocol="SASL_PLAINTEXT", sasl_mechanism=mechanism, sasl_username=user, sasl_password=secret)
    async with AdminClient.connect(bootstrap, security=settings) as admin:
        results = await admin.alter_user_scram_credentials([scram_upsertion("app", ScramMechanism.SCRAM_SHA_512, password)])
        assert results.all_ok, results.failed()


def test_dev_cluster_sasl_listener_with_librdkafka() -> None:
    with dev_cluster("--sasl-port", "0") as (bootstrap, sasl_bootstrap):  # the main listeners stay plaintext
        assert bootstrap != sasl_bootstrap and len(sasl_bootstrap.split(",")) == 2
        asyncio.run(_set_password(bootstrap, "first-pw"))
        ok, errors = librdkafka_login(sasl_bootstrap, "SCRAM-SHA-512", "app", "first-pw")
        assert ok, errors
        asyncio.run(_set_password(bootstrap, "second-pw"))
        old, errors = librdkafka_login(sasl_bootstrap, "SCRAM-SHA-512", "app", "first-pw")
        assert not old and any("_AUTHENTICATION" in e for e in errors), errors
        assert librdkafka_login(sasl_bootstrap, "SCRAM-SHA-512", "app", "second-pw")[0]


def test_with_sasl_users_every_listener_authenticates_and_scram_uses_the_store_too() -> None:
    env_users = "ops:plain-pw"
    proc_args = ("--sasl-port", "0", "--sasl-user", env_users)
    with dev_cluster(*proc_args) as (bootstrap, sasl_bootstrap):
        for address in (bootstrap, sasl_bootstrap):
            assert librdkafka_login(address, "PLAIN", "ops", "plain-pw")[0]
            assert librdkafka_login(address, "SCRAM-SHA-256", "ops", "plain-pw")[0]
        asyncio.run(_set_password(bootstrap, "stored-pw", security=("SCRAM-SHA-512", "ops", "plain-pw")))
        assert librdkafka_login(sasl_bootstrap, "SCRAM-SHA-512", "app", "stored-pw")[0]
        assert librdkafka_login(bootstrap, "SCRAM-SHA-512", "app", "stored-pw")[0]
