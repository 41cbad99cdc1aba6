"""Secrets stay out of reprs and errors; an unreachable cluster fails fast with a typed error."""

import asyncio
import logging

import pytest

from kafkaops.kafka import AdminClient, ClientSettings, KafkaConnectionError, SecuritySettings
from kafkaops.testing.servers import free_port

SECRET = "s3cr3t-P@ss-admin"


def sasl_settings(port: int) -> ClientSettings:
    security = SecuritySettings(
        protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-512", sasl_username="ops", sasl_password=SECRET
    )
    return ClientSettings.create(f"127.0.0.1:{port}", security=security, connect_attempts=2, retry_backoff=0.01)


async def test_unreachable_cluster_gives_a_typed_error_without_secrets(caplog):
    caplog.set_level(logging.DEBUG)
    settings = sasl_settings(free_port())
    client = AdminClient(settings)
    assert SECRET not in repr(client) and SECRET not in repr(settings)
    with pytest.raises(KafkaConnectionError) as info:
        await asyncio.wait_for(client.start(), timeout=30)
    await client.close()
    assert "no broker reachable" in str(info.value)
    assert SECRET not in str(info.value)
    assert SECRET not in caplog.text


async def test_properties_file_settings_hide_the_password(tmp_path):
    props = tmp_path / "client.properties"
    props.write_text(
        "security.protocol=SASL_PLAINTEXT\n"
        "sasl.mechanism=PLAIN\n"
        f'sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="ops" password="{SECRET}";\n'
    )
    settings = ClientSettings.create("127.0.0.1:9092", properties=props)
    assert settings.security.sasl_password.reveal() == SECRET
    assert SECRET not in repr(settings) and SECRET not in str(settings)
