"""The operator writes a KafkaCluster's TLS material (CA, client certificate and key, read from
Secrets) to files the admin client reads: a private directory, made only when there is a file to
write and removed with the cluster's context."""

from __future__ import annotations

import stat
import tempfile
from pathlib import Path

import pytest
from k8s_helpers import SecretReaderDouble, cluster_body

from kafkaops.k8s.context import ClusterContext, key_of
from kafkaops.k8s.secrets import CredentialsError, TlsFiles, security_for
from kafkaops.resources.models import KafkaCluster
from kafkaops.resources.validation import check_custom_resource

CA, CERT, KEY = b"-----BEGIN CERTIFICATE-----\nca\n", b"-----BEGIN CERTIFICATE-----\ncert\n", b"-----BEGIN PRIVATE KEY-----\nk\n"


def model(**spec: object) -> KafkaCluster:
    checked = check_custom_resource(cluster_body("b1:9093", **spec))
    assert isinstance(checked.resource, KafkaCluster), checked
    return checked.resource


@pytest.fixture(autouse=True)
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Temporary directories of this test's own (another worker's tests use /tmp at the same time)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


async def test_a_cluster_without_tls_leaves_nothing_on_disk(private_tmp: Path) -> None:
    cluster = model()
    context = ClusterContext(key_of(cluster), cluster)
    settings = await security_for(cluster, SecretReaderDouble(), context.files)
    assert settings.protocol == "PLAINTEXT" and context.files.directory is None
    await context.close()
    assert list(private_tmp.iterdir()) == []


async def test_tls_material_is_written_privately_and_removed_with_the_context(private_tmp: Path) -> None:
    reader = SecretReaderDouble({("team", "ca"): {"ca.crt": CA},
                                 ("team", "client"): {"tls.crt": CERT, "tls.key": KEY}})
    cluster = model(tls={"enabled": True, "caSecretRef": {"name": "ca"}, "clientCertSecretRef": {"name": "client"}})
    context = ClusterContext(key_of(cluster), cluster)
    settings = await security_for(cluster, reader, context.files)
    directory = context.files.directory
    assert settings.protocol == "SSL" and directory is not None and directory.parent == private_tmp
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    for path, data in ((settings.ssl_cafile, CA), (settings.ssl_certfile, CERT), (settings.ssl_keyfile, KEY)):
        assert path is not None and Path(path).parent == directory and Path(path).read_bytes() == data
        assert stat.S_IMODE(Path(path).stat().st_mode) == 0o600
    # a rotated key is written over the old one, in the same directory
    reader.secrets[("team", "client")] = {"tls.crt": CERT, "tls.key": KEY + b"rotated\n"}
    again = await security_for(cluster, reader, context.files)
    assert again.ssl_keyfile == settings.ssl_keyfile and Path(again.ssl_keyfile).read_bytes().endswith(b"rotated\n")
    await context.close()
    assert not directory.exists() and context.files.directory is None


async def test_a_missing_key_names_the_field_and_writes_nothing() -> None:
    files = TlsFiles()
    reader = SecretReaderDouble({("team", "ca"): {"wrong.crt": CA}})
    cluster = model(tls={"enabled": True, "caSecretRef": {"name": "ca"}})
    with pytest.raises(CredentialsError, match=r"spec\.tls\.caSecretRef: Secret team/ca has no key 'ca.crt'"):
        await security_for(cluster, reader, files)
    assert files.directory is None
