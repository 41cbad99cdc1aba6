"""Security settings: `Secret`, `SecuritySettings` and their validation.

A secret value (a SASL password, a TLS key password, an OAuth token) is held in a `Secret`,
which prints as ``***`` and refuses to be pickled; `SecuritySettings` is the validated,
immutable description of how to reach a cluster.
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, NoReturn

from ..errors import KafkaOpsError


SecurityProtocol = Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
SaslMechanism = Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]
TokenProvider = Callable[[], str | Awaitable[str]]
SendFn = Callable[[int, dict[str, Any]], Awaitable[Any]]

PROTOCOLS: Final = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS: Final = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
SCRAM_MECHANISMS: Final = ("SCRAM-SHA-256", "SCRAM-SHA-512")
REDACTED: Final = "***"

SASL_HANDSHAKE_API: Final = 17
SASL_AUTHENTICATE_API: Final = 36


# --------------------------------------------------------------------------- secrets


class Secret:
    """An immutable secret string that never prints, formats or pickles in clear.

    ``reveal()`` is the only way to get the value back. Equality compares the
    values in constant time; instances are hashable.
    """

    __slots__ = ("_value",)
    _value: str

    def __init__(self, value: str | Secret) -> None:
        if isinstance(value, Secret):
            value = value.reveal()
        if not isinstance(value, str):
            raise TypeError(f"Secret wraps a str, not {type(value).__name__}")
        object.__setattr__(self, "_value", value)

    def reveal(self) -> str:
        """The secret value. Do not log it."""
        return self._value

    def __repr__(self) -> str:
        return f"Secret('{REDACTED}')"

    def __str__(self) -> str:
        return REDACTED

    def __format__(self, spec: str) -> str:
        return format(REDACTED, spec)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Secret):
            return NotImplemented
        return hmac.compare_digest(self._value.encode(), other._value.encode())

    def __hash__(self) -> int:
        return hash((Secret, self._value))

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError("Secret is immutable")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError("Secret is immutable")

    def __reduce__(self) -> NoReturn:
        raise TypeError("refusing to pickle a Secret (it would be stored in clear)")

    def __reduce_ex__(self, protocol: Any) -> NoReturn:
        raise TypeError("refusing to pickle a Secret (it would be stored in clear)")

    def __copy__(self) -> Secret:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Secret:
        return self


class SecurityConfigError(KafkaOpsError, ValueError):
    """Invalid security settings or client.properties. Never carries secret values."""


# --------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class SecuritySettings:
    """How kafkaops authenticates to and encrypts traffic with the cluster.

    Plain strings given for the secret fields are wrapped in :class:`Secret`;
    paths are stored as strings; protocol and mechanism are upper-cased.
    ``sasl_oauth_token`` is a static OAUTHBEARER token, the alternative to an
    ``oauth_token_provider`` (a callable returning a token, sync or async).
    """

    protocol: SecurityProtocol = "PLAINTEXT"
    ssl_cafile: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    ssl_key_password: Secret | None = None
    ssl_check_hostname: bool = True
    sasl_mechanism: SaslMechanism | None = None
    sasl_username: str | None = None
    sasl_password: Secret | None = None
    sasl_oauth_token: Secret | None = None
    oauth_token_provider: TokenProvider | None = field(default=None, compare=False, repr=False)
    client_id: str = "kafkaops"

    def __post_init__(self) -> None:
        self._normalise()
        _validate(self)
        _HELD_SECRETS.update(self.secret_values())

    def _normalise(self) -> None:
        def put(name: str, value: Any) -> None:
            object.__setattr__(self, name, value)

        if isinstance(self.protocol, str):
            put("protocol", self.protocol.strip().upper())
        if isinstance(self.sasl_mechanism, str):
            put("sasl_mechanism", self.sasl_mechanism.strip().upper())
        for name in ("ssl_cafile", "ssl_certfile", "ssl_keyfile"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                put(name, os.fspath(value))
        for name in ("ssl_key_password", "sasl_password", "sasl_oauth_token"):
            value = getattr(self, name)
            if isinstance(value, str):
                put(name, Secret(value))
            elif value is not None and not isinstance(value, Secret):
                raise SecurityConfigError(f"{name} must be a str or Secret, not {type(value).__name__}")

    @property
    def uses_tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    def secret_values(self) -> tuple[str, ...]:
        """Every non-empty secret value held (for :func:`redact`)."""
        held = (self.ssl_key_password, self.sasl_password, self.sasl_oauth_token)
        return tuple(s.reveal() for s in held if s is not None and s.reveal())


# Every secret value any SecuritySettings of this process held: what the log redaction scrubs
# (`redaction.install_redaction`). Kept for the life of the process, so that a line logged after its
# settings are gone is scrubbed too; a handful of strings per credential rotation.
_HELD_SECRETS: set[str] = set()


def held_secret_values() -> frozenset[str]:
    """Every non-empty secret value a `SecuritySettings` of this process has held."""
    return frozenset(_HELD_SECRETS)


def hold_secrets(secrets: Iterable[Secret]) -> None:
    """Have `install_redaction` scrub these secrets too (passwords kafkaops sets for others, e.g.
    KafkaUser credentials), for the life of the process."""
    _HELD_SECRETS.update(value for secret in secrets if (value := secret.reveal()))


def _fail(message: str) -> NoReturn:
    raise SecurityConfigError(message)


def _validate(s: SecuritySettings) -> None:
    if s.protocol not in PROTOCOLS:
        _fail(f"unknown security protocol {s.protocol!r}; expected one of {', '.join(PROTOCOLS)}")
    if s.sasl_mechanism is not None and s.sasl_mechanism not in MECHANISMS:
        _fail(
            f"unsupported SASL mechanism {s.sasl_mechanism!r}; kafkaops supports "
            f"{', '.join(MECHANISMS)}"
        )
    if not isinstance(s.ssl_check_hostname, bool):
        _fail("ssl_check_hostname must be a bool")
    if not isinstance(s.client_id, str) or not s.client_id:
        _fail("client_id must be a non-empty string")
    _validate_tls(s)
    _validate_sasl(s)


def _validate_tls(s: SecuritySettings) -> None:
    given = [
        name
        for name in ("ssl_cafile", "ssl_certfile", "ssl_keyfile", "ssl_key_password")
        if getattr(s, name) is not None
    ]
    if given and not s.uses_tls:
        _fail(
            f"TLS settings ({', '.join(given)}) are set but security protocol is {s.protocol}; "
            "use SSL or SASL_SSL (or remove them)"
        )
    if s.ssl_keyfile is not None and s.ssl_certfile is None:
        _fail("ssl_keyfile is set without ssl_certfile (the client certificate)")
    if s.ssl_key_password is not None and s.ssl_certfile is None:
        _fail("ssl_key_password is set without a client certificate/key (ssl_certfile)")


def _validate_sasl(s: SecuritySettings) -> None:
    credentials = {
        "sasl_username": s.sasl_username is not None,
        "sasl_password": s.sasl_password is not None,
        "sasl_oauth_token": s.sasl_oauth_token is not None,
        "oauth_token_provider": s.oauth_token_provider is not None,
    }
    if not s.uses_sasl:
        given = [n for n, present in credentials.items() if present]
        if s.sasl_mechanism is not None:
            given.insert(0, "sasl_mechanism")
        if given:
            _fail(
                f"SASL settings ({', '.join(given)}) are set but security protocol is "
                f"{s.protocol}; use SASL_SSL or SASL_PLAINTEXT (or remove them)"
            )
        return
    mechanism = s.sasl_mechanism
    if mechanism is None:
        _fail(
            f"security protocol {s.protocol} needs a SASL mechanism "
            f"(sasl_mechanism, one of {', '.join(MECHANISMS)})"
        )
    if mechanism == "OAUTHBEARER":
        _validate_oauth(s, credentials)
    else:
        _validate_password_mechanism(s, mechanism, credentials)


def _validate_password_mechanism(
    s: SecuritySettings, mechanism: str, credentials: Mapping[str, bool]
) -> None:
    if not s.sasl_username:
        _fail(f"SASL mechanism {mechanism} needs a username (sasl_username)")
    if s.sasl_password is None or not s.sasl_password.reveal():
        _fail(f"SASL mechanism {mechanism} needs a non-empty password (sasl_password)")
    extra = [n for n in ("sasl_oauth_token", "oauth_token_provider") if credentials[n]]
    if extra:
        _fail(f"{', '.join(extra)} only apply to OAUTHBEARER, not to SASL mechanism {mechanism}")


def _validate_oauth(s: SecuritySettings, credentials: Mapping[str, bool]) -> None:
    if s.oauth_token_provider is None and s.sasl_oauth_token is None:
        _fail(
            "SASL mechanism OAUTHBEARER needs a token: an oauth_token_provider or a "
            "static sasl_oauth_token"
        )
    if s.oauth_token_provider is not None and s.sasl_oauth_token is not None:
        _fail("give either oauth_token_provider or sasl_oauth_token for OAUTHBEARER, not both")
    if s.oauth_token_provider is not None and not callable(s.oauth_token_provider):
        _fail("oauth_token_provider must be callable")
    if s.sasl_oauth_token is not None and not s.sasl_oauth_token.reveal().strip():
        _fail("sasl_oauth_token is empty")
    extra = [n for n in ("sasl_username", "sasl_password") if credentials[n]]
    if extra:
        _fail(f"{', '.join(extra)} are not used by SASL mechanism OAUTHBEARER; remove them")
