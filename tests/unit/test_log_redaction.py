"""The redacting filter is on every log path: a secret the process holds, logged through the
operator's logger (kafkaops.operator), through kopf's per-object logger (kopf.objects, whose records
kopf also posts as Kubernetes Events) and by the CLI, comes out as ***."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import kopf
import pytest
from kopf._core.engines import posting

from kafkaops.kafka.security import (
    REDACTED,
    RedactingFilter,
    SecuritySettings,
    install_redaction,
    uninstall_redaction,
)
from kafkaops.kafka.security import settings as security_settings

PASSWORD = "pw-9f3K-redaction-test"
TOKEN = "tok-77Q-redaction-test"


@pytest.fixture(autouse=True)
def _own_held_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    """The secrets the process holds are each test's own here: another test's settings holding "b"
    as a password would scrub every "b" (the held set lives as long as the process, and a
    pytest-xdist worker runs many test files)."""
    monkeypatch.setattr(security_settings, "_HELD_SECRETS", set())


@pytest.fixture
def redaction() -> Iterator[RedactingFilter]:
    before = logging.getLogRecordFactory()
    installed = install_redaction()
    yield installed
    uninstall_redaction()
    assert logging.getLogRecordFactory() is before


@pytest.fixture
def held() -> SecuritySettings:
    # what the operator builds from a KafkaCluster's Secret (k8s/secrets.py), or the CLI from a
    # client.properties: a SecuritySettings holding the password
    return SecuritySettings(protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN", sasl_username="alice",
                            sasl_password=PASSWORD)


def test_the_operator_logger(redaction: RedactingFilter, held: SecuritySettings,
                             caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    logging.getLogger("kafkaops.operator").warning("connecting with %s to %s", PASSWORD, "b1:9092")
    logging.getLogger("kafkaops.k8s.context").info(f"password was {PASSWORD}")  # a child: another module
    assert PASSWORD not in caplog.text
    assert f"connecting with {REDACTED} to b1:9092" in caplog.text
    assert f"password was {REDACTED}" in caplog.text


def test_a_logged_exception_traceback(redaction: RedactingFilter, held: SecuritySettings,
                                      caplog: pytest.LogCaptureFixture) -> None:
    try:
        raise RuntimeError(f"bad login {PASSWORD}")
    except RuntimeError:
        logging.getLogger("kafkaops.operator").exception("connection failed")
    assert "RuntimeError: bad login ***" in caplog.text
    assert PASSWORD not in caplog.text


async def test_kopf_object_logger_and_its_kubernetes_events(redaction: RedactingFilter, held: SecuritySettings,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    queue: asyncio.Queue[posting.K8sEvent] = asyncio.Queue()
    posting.event_queue_var.set(queue)
    posting.event_queue_loop_var.set(asyncio.get_running_loop())
    body = kopf.Body({"apiVersion": "kafkaops.io/v1alpha1", "kind": "KafkaCluster",
                      "metadata": {"name": "prod", "namespace": "kafka", "uid": "u-1"}})
    settings = kopf.OperatorSettings()
    settings.posting.loggers = True  # off in kopf by default; whoever turns it on gets scrubbed Events too
    logger = kopf.ObjectLogger(body=body, settings=settings)
    logger.warning("SASL login as alice with %s failed", PASSWORD)
    event = queue.get_nowait()  # what kopf would post as a Kubernetes Event
    assert event.message == f"SASL login as alice with {REDACTED} failed"
    assert PASSWORD not in caplog.text and REDACTED in caplog.text


def test_the_cli(tmp_path: Path) -> None:
    """The real entry point, in its own process: a client.properties holding a token is read by
    `kafkaops plan`; a line logged later in that process (to stderr, logging's last resort) shows
    no token."""
    properties = tmp_path / "client.properties"
    properties.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=OAUTHBEARER\n"
                          f"sasl.oauthbearer.token={TOKEN}\n")
    manifests = tmp_path / "topics.yaml"
    manifests.write_text("apiVersion: kafkaops.io/v1alpha1\nkind: KafkaTopic\nmetadata: {name: orders}\n"
                         "spec: {partitions: 1, replicationFactor: 1}\n")
    script = (
        "import logging, sys\n"
        "from kafkaops.cli.main import main\n"
        f"sys.argv = ['kafkaops', 'plan', '-f', {str(manifests)!r}, '--bootstrap-server', '127.0.0.1:1',\n"
        f"            '--command-config', {str(properties)!r}, '--retry-budget', '0', '--no-state']\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exc:\n"
        "    print('exit', exc.code)\n"
        f"logging.getLogger('kafkaops.cli').warning('token was %s', {TOKEN!r})\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, stdin=subprocess.DEVNULL)
    assert "exit 1" in done.stdout, (done.stdout, done.stderr)  # nothing listens on 127.0.0.1:1
    assert f"token was {REDACTED}" in done.stderr, done.stderr
    assert TOKEN not in done.stdout + done.stderr


def test_without_install_nothing_is_changed(held: SecuritySettings, caplog: pytest.LogCaptureFixture) -> None:
    """The library alone does not touch logging (an application embedding it decides; the CLI's entry
    point does): without `install_redaction` the secret is logged, so the tests above can fail."""
    if logging.getLogRecordFactory() is not logging.LogRecord:
        pytest.skip("another record factory is installed in this process")
    logging.getLogger("kafkaops.operator").warning("plain %s", PASSWORD)
    assert PASSWORD in caplog.text
