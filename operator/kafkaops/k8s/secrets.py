"""Reading the Secrets a KafkaCluster references, and turning them into client security settings.

Credentials never leave this module in clear except inside `Secret` values (which never print);
TLS material is written to a private temporary directory (0700, files 0600) because Python's
ssl module loads client certificates from files, and removed when the cluster context closes.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from kafkaops.kafka import SecuritySettings
from kafkaops.kafka.security import Secret
from kafkaops.resources.models import KafkaCluster, SaslMechanism

CREDENTIALS_INVALID = "CredentialsInvalid"
# on each Secret a KafkaCluster connects with, while it does: deleting the namespace (or the Secret)
# then leaves it readable until the cluster's topics are deleted under their policy and the cluster
# itself is gone (like kubernetes.io/pvc-protection)
SECRET_FINALIZER = "kafkaops.io/credentials-in-use"


class SecretNotFound(LookupError):
    pass


class SecretForbidden(LookupError):
    """The operator's service account may not read the Secret (no Role in its namespace)."""


class SecretReader(Protocol):
    async def read(self, namespace: str, name: str) -> Mapping[str, bytes]:
        """The decoded data of Secret namespace/name (SecretNotFound if absent)."""
        ...


class CredentialsError(ValueError):
    """A KafkaCluster's credentials cannot be assembled (missing Secret or key). Never holds values."""


@dataclass
class TlsFiles:
    """A private directory (0700, files 0600) holding a cluster's TLS material for the lifetime of
    its context; made at the first file, so a cluster without TLS leaves nothing on disk."""

    directory: Path | None = None

    def write(self, name: str, data: bytes) -> str:
        if self.directory is None:
            self.directory = Path(tempfile.mkdtemp(prefix="kafkaops-tls-"))  # mkdtemp: 0700
        path = self.directory / name
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        return str(path)

    def remove(self) -> None:
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory = None


class SecretGuard(Protocol):
    async def protect_secret(self, namespace: str, name: str) -> bool:
        """Put SECRET_FINALIZER on the Secret (False: it does not exist)."""
        ...

    async def release_secret(self, namespace: str, name: str) -> bool:
        """Take SECRET_FINALIZER off the Secret (False: it does not exist)."""
        ...


def secret_names(cluster: KafkaCluster) -> set[str]:
    """The Secrets a KafkaCluster's connection reads (TLS CA, client certificate, SASL credentials)."""
    spec, names = cluster.spec, set()
    if spec.tls is not None and spec.tls.enabled:
        if spec.tls.ca_secret_ref is not None:
            names.add(spec.tls.ca_secret_ref.name)
        if spec.tls.client_cert_secret_ref is not None:
            names.add(spec.tls.client_cert_secret_ref.name)
    if spec.sasl is not None and spec.sasl.credentials_secret_ref is not None:
        names.add(spec.sasl.credentials_secret_ref.name)
    return names


async def _key(reader: SecretReader, namespace: str, name: str, key: str, what: str) -> bytes:
    try:
        data = await reader.read(namespace, name)
    except SecretNotFound:
        raise CredentialsError(f"{what}: Secret {namespace}/{name} not found") from None
    except SecretForbidden:
        raise CredentialsError(f"{what}: the operator may not read Secret {namespace}/{name} (403 Forbidden): grant "
                               f"it with manifests/secrets-access for namespace {namespace} "
                               "(docs/deploying.md)") from None
    if key not in data:
        raise CredentialsError(f"{what}: Secret {namespace}/{name} has no key {key!r}")
    return data[key]


async def security_for(cluster: KafkaCluster, reader: SecretReader, files: TlsFiles) -> SecuritySettings:
    """SecuritySettings for a KafkaCluster, credentials read from Secrets in its namespace."""
    namespace = cluster.namespace or "default"
    spec = cluster.spec
    tls = spec.tls if spec.tls is not None and spec.tls.enabled else None
    kwargs: dict[str, object] = {}
    if tls is not None:
        kwargs["ssl_check_hostname"] = tls.verify_hostname
        if tls.ca_secret_ref is not None:
            ca = await _key(reader, namespace, tls.ca_secret_ref.name, tls.ca_secret_ref.key, "spec.tls.caSecretRef")
            kwargs["ssl_cafile"] = files.write("ca.crt", ca)
        if (client_ref := tls.client_cert_secret_ref) is not None:
            cert = await _key(reader, namespace, client_ref.name, client_ref.cert_key, "spec.tls.clientCertSecretRef")
            key = await _key(reader, namespace, client_ref.name, client_ref.key_key, "spec.tls.clientCertSecretRef")
            kwargs["ssl_certfile"] = files.write("tls.crt", cert)
            kwargs["ssl_keyfile"] = files.write("tls.key", key)
    sasl = spec.sasl
    if sasl is not None:
        kwargs["sasl_mechanism"] = str(sasl.mechanism)
        ref = sasl.credentials_secret_ref
        if ref is None:
            raise CredentialsError("spec.sasl.credentialsSecretRef is required in the operator")
        if sasl.mechanism is SaslMechanism.OAUTHBEARER:
            token = await _key(reader, namespace, ref.name, ref.token_key, "spec.sasl.credentialsSecretRef")
            kwargs["sasl_oauth_token"] = Secret(token.decode().strip())
        else:
            user = await _key(reader, namespace, ref.name, ref.username_key, "spec.sasl.credentialsSecretRef")
            password = await _key(reader, namespace, ref.name, ref.password_key, "spec.sasl.credentialsSecretRef")
            kwargs["sasl_username"] = user.decode().strip()
            kwargs["sasl_password"] = Secret(password.decode().rstrip("\n"))
    protocol = ("SASL_SSL" if tls else "SASL_PLAINTEXT") if sasl else ("SSL" if tls else "PLAINTEXT")
    return SecuritySettings(protocol=protocol, **kwargs)  # type: ignore[arg-type]
