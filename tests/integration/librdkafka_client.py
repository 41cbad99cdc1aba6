"""An independent Kafka client for tests: confluent-kafka (librdkafka), blocking."""

from __future__ import annotations

import confluent_kafka
from confluent_kafka.admin import AdminClient


def librdkafka_login(bootstrap: str, mechanism: str, user: str, password: str) -> tuple[bool, list[str]]:
    """Blocking: can confluent-kafka's AdminClient log in and read metadata? (ok, errors seen)."""
    errors: list[str] = []
    client = AdminClient(
        {
            "bootstrap.servers": bootstrap,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mechanism,
            "sasl.username": user,
            "sasl.password": password,
            "error_cb": lambda err: errors.append(f"{err.name()}: {err.str()}"),
            "log_level": 0,
        }
    )
    for _ in range(20):  # up to ~20 s on a slow machine; a refused login is reported within a second or so
        try:
            metadata = client.list_topics(timeout=1)
        except confluent_kafka.KafkaException as exc:
            errors.append(str(exc))
            client.poll(0.1)  # serves error_cb: the authentication failure arrives there
            if any("_AUTHENTICATION" in e for e in errors):
                return False, errors
            continue
        return bool(metadata.brokers), errors
    return False, errors
