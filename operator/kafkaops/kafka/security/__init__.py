"""Client security: settings, TLS contexts, SASL authentication, secret redaction.

These pieces live together because they share one rule: a secret value (a SASL
password, a TLS key password, an OAuth token) must never reach a repr, an
exception message or a log line.

* :class:`Secret` wraps every secret string; it prints as ``***`` and refuses
  to be pickled.
* :class:`SecuritySettings` is the validated, immutable description of how to
  reach a cluster. :func:`load_properties` / :func:`parse_properties` read it
  from a Kafka-CLI ``client.properties`` file (the ``--command-config`` file).
* :func:`ssl_context` turns settings into an :class:`ssl.SSLContext`.
* :func:`sasl_authenticate` runs the KIP-152 SaslHandshake/SaslAuthenticate
  exchange (PLAIN, SCRAM-SHA-256/512, OAUTHBEARER) over a ``send`` callable
  supplied by the connection.
* :func:`redact` and :class:`RedactingFilter` scrub secret values from text as
  a last line of defence.

Modules: ``settings.py`` (``Secret``, ``SecuritySettings`` and their validation), ``tls.py``,
``redaction.py``, ``properties.py`` (client.properties and JAAS), ``sasl.py`` (the SASL client).
Every public name is importable from ``kafkaops.kafka.security``.
"""

from __future__ import annotations

from .settings import (
    MECHANISMS,
    PROTOCOLS,
    REDACTED,
    SASL_AUTHENTICATE_API,
    SASL_HANDSHAKE_API,
    SCRAM_MECHANISMS,
    SaslMechanism,
    Secret,
    SecurityConfigError,
    SecurityProtocol,
    SecuritySettings,
    SendFn,
    TokenProvider,
    held_secret_values,
)
from .tls import (
    ssl_context,
)
from .redaction import (
    RedactingFilter,
    install_redaction,
    redact,
    uninstall_redaction,
)
from .properties import (
    ClientProperties,
    FileTokenProvider,
    is_secret_key,
    load_properties,
    parse_properties,
    read_properties,
)
from .sasl import (
    sasl_authenticate,
)

__all__ = [
    "ClientProperties",
    "FileTokenProvider",
    "MECHANISMS",
    "PROTOCOLS",
    "REDACTED",
    "RedactingFilter",
    "SASL_AUTHENTICATE_API",
    "SASL_HANDSHAKE_API",
    "SCRAM_MECHANISMS",
    "SaslMechanism",
    "Secret",
    "SecurityConfigError",
    "SecurityProtocol",
    "SecuritySettings",
    "SendFn",
    "TokenProvider",
    "held_secret_values",
    "is_secret_key",
    "load_properties",
    "parse_properties",
    "read_properties",
    "install_redaction",
    "redact",
    "uninstall_redaction",
    "sasl_authenticate",
    "ssl_context",
]
