"""The first mistakes people make when pointing kafkaops at a cluster, through the real entry point
(a `kafkaops` subprocess): each fails within a few seconds with ONE line naming the address, the
cause and what to check, the resources "not checked", and exit status 1.

The time bounds are generous (2x the issue's 3 s, for a loaded 2-core machine); the measured
figure is printed (pytest -s). Servers are started here on free ports and stopped by PID.
"""

from __future__ import annotations

import shutil
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from clirun import EXAMPLES_DEV, Ran, run_kafkaops, served_double

from kafkaops.testing.sasl_double import SaslServerDouble
from kafkaops.testing.servers import free_port

BOUND = 6.0  # seconds; the target is <= 3 s (docs/benchmarks.md has the figures)
DEV_RESOURCES = 13  # topics, ACLs and the broker config of examples/clusters/dev


def plan(tmp: Path, bootstrap: str, *extra: str) -> Ran:
    return run_kafkaops("plan", "-f", str(EXAMPLES_DEV), "--bootstrap-server", bootstrap, *extra, tmp=tmp)


def assert_one_line_failure(ran: Ran, address: str, cause: str) -> str:
    assert ran.code == 1, ran
    assert ran.seconds < BOUND, ran
    assert len(ran.lines) == 1, ran
    line = ran.lines[0]
    assert f"{address}: {cause}" in line, ran
    assert f"{DEV_RESOURCES} resources not checked: analytics.clickstream.raw" in line, ran
    assert "Future exception was never retrieved" not in ran.stderr and "Traceback" not in ran.stderr, ran
    return line


def test_closed_port(tmp_path: Path) -> None:
    address = f"127.0.0.1:{free_port()}"
    line = assert_one_line_failure(plan(tmp_path, address), address, "connection refused")
    assert "--bootstrap-server" in line and "--command-config" in line


def test_closed_port_honours_the_retry_budget_option(tmp_path: Path) -> None:
    address = f"127.0.0.1:{free_port()}"
    ran = plan(tmp_path, address, "--retry-budget", "0", "-o", "json")
    assert ran.code == 1, ran
    assert '"reason": "ClusterUnreachable"' in ran.stdout and "connection refused" in ran.stdout


@pytest.fixture
def http_server() -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_listening(port)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


def _wait_listening(port: int) -> None:
    import socket
    import time

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError(f"nothing listens on {port}")


def test_http_server_is_not_a_kafka_broker(tmp_path: Path, http_server: str) -> None:
    assert_one_line_failure(plan(tmp_path, http_server), http_server,
                            "did not answer as a Kafka broker (ApiVersions)")


# --- TLS mismatches, told apart -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a self-signed certificate")
    where = tmp_path_factory.mktemp("tls")
    cert, key = where / "cert.pem", where / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    return cert, key


def tls_properties(tmp: Path, cert: Path) -> Path:
    path = tmp / "tls.properties"
    path.write_text(f"security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location={cert}\n")
    return path


def test_plaintext_client_to_a_tls_listener(tmp_path: Path, certificate: tuple[Path, Path]) -> None:
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(*certificate)
    with served_double(ssl_context=server) as cluster:
        address = cluster.bootstrap
        line = assert_one_line_failure(plan(tmp_path, address), address,
                                       "closed the connection without answering ApiVersions: a TLS listener?")
        assert "security.protocol is PLAINTEXT: set SSL or SASL_SSL" in line
        # and with the right settings the same listener works
        ok = plan(tmp_path, address, "--command-config", str(tls_properties(tmp_path, certificate[0])))
        assert ok.code == 2 and "12 to create" in ok.stdout, ok


def test_tls_client_to_a_plaintext_listener(tmp_path: Path, certificate: tuple[Path, Path]) -> None:
    with served_double() as cluster:
        address = cluster.bootstrap
        ran = plan(tmp_path, address, "--command-config", str(tls_properties(tmp_path, certificate[0])))
        line = assert_one_line_failure(ran, address, "TLS handshake failed")
        assert "the listener does not speak TLS; a plaintext listener? (security.protocol is SSL)" in line


def test_tls_client_to_an_untrusted_certificate(tmp_path: Path, certificate: tuple[Path, Path]) -> None:
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(*certificate)
    props = tmp_path / "system-ca.properties"
    props.write_text("security.protocol=SSL\n")  # the system trust store does not know the self-signed cert
    with served_double(ssl_context=server) as cluster:
        ran = plan(tmp_path, cluster.bootstrap, "--command-config", str(props))
        assert_one_line_failure(ran, cluster.bootstrap, "TLS certificate not trusted")


# --- SASL -----------------------------------------------------------------------------------------------


def test_wrong_sasl_credentials_name_mechanism_and_user_never_the_secret(tmp_path: Path) -> None:
    secret = "wr0ng-S3cret-value"
    props = tmp_path / "sasl.properties"
    props.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"
                     "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
                     f'username="ops" password="{secret}";\n')
    with served_double(sasl=SaslServerDouble({"ops": "the-right-one"})) as cluster:
        ran = plan(tmp_path, cluster.bootstrap, "--command-config", str(props))
        assert ran.code == 1 and ran.seconds < BOUND, ran
        assert len(ran.lines) == 1, ran
        line = ran.lines[0]
        assert "AuthenticationFailed: SASL SCRAM-SHA-512 authentication for user ops failed" in line, ran
        assert "check the credentials in --command-config" in line
        assert secret not in ran.stdout + ran.stderr
