"""The SASL client: the KIP-152 SaslHandshake/SaslAuthenticate exchange (PLAIN,
SCRAM-SHA-256/512, OAUTHBEARER) over a ``send`` callable supplied by the connection.
"""

from __future__ import annotations

import inspect
import logging
from typing import Any

from kio.schema.errors import ErrorCode

from ..errors import AuthenticationFailed
from .redaction import redact
from .settings import (
    SASL_AUTHENTICATE_API,
    SASL_HANDSHAKE_API,
    SCRAM_MECHANISMS,
    Secret,
    SecurityConfigError,
    SecuritySettings,
    SendFn,
)

log = logging.getLogger(__name__)


# --------------------------------------------------------------------------- SASL client


async def sasl_authenticate(send: SendFn, settings: SecuritySettings) -> None:
    """Authenticate a fresh connection with SaslHandshake + SaslAuthenticate (KIP-152).

    ``send(api_key, data)`` sends one request built from the plain ``data``
    mapping and returns the decoded response entity. Raises
    :class:`AuthenticationFailed` (never containing a secret) when the broker
    refuses the mechanism or the credentials.
    """
    mechanism = settings.sasl_mechanism
    if not settings.uses_sasl or mechanism is None:
        raise SecurityConfigError(f"security protocol {settings.protocol} does not use SASL")
    log.debug("SASL handshake, mechanism %s", mechanism)
    await _handshake(send, mechanism)
    exchange = _Exchange(send, settings, mechanism)
    if mechanism == "PLAIN":
        await _authenticate_plain(exchange, settings)
    elif mechanism in SCRAM_MECHANISMS:
        await _authenticate_scram(exchange, settings, mechanism)
    else:
        await _authenticate_oauthbearer(exchange, settings)
    who = f" as {settings.sasl_username}" if settings.sasl_username else ""
    log.debug("SASL %s authentication succeeded%s", mechanism, who)


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name.upper()
    except ValueError:
        return f"UNKNOWN_ERROR_{code}"


async def _handshake(send: SendFn, mechanism: str) -> None:
    response = await send(SASL_HANDSHAKE_API, {"mechanism": mechanism})
    code = int(response.error_code)
    if code == 0:
        return
    enabled = ", ".join(response.mechanisms) or "none"
    if code == ErrorCode.unsupported_sasl_mechanism.value:
        raise AuthenticationFailed(
            f"the broker does not enable SASL mechanism {mechanism}; enabled mechanisms: {enabled}"
        )
    raise AuthenticationFailed(f"SASL handshake for {mechanism} failed: {_error_name(code)}")


class _Exchange:
    """SaslAuthenticate rounds for one mechanism, with error checking and redaction."""

    def __init__(self, send: SendFn, settings: SecuritySettings, mechanism: str) -> None:
        self._send = send
        self.settings = settings
        self.mechanism = mechanism
        self.extra_secrets: list[str] = []

    def failure(self, detail: str) -> AuthenticationFailed:
        who = f" for user {self.settings.sasl_username}" if self.settings.sasl_username else ""
        text = f"SASL {self.mechanism} authentication{who} failed: {detail}"
        return AuthenticationFailed(redact(text, self.settings, self.extra_secrets))

    async def round(self, auth_bytes: bytes) -> bytes:
        response = await self._send(SASL_AUTHENTICATE_API, {"auth_bytes": auth_bytes})
        code = int(response.error_code)
        if code != 0:
            message = response.error_message or "no message from the broker"
            raise self.failure(f"{_error_name(code)}: {message}")
        return bytes(response.auth_bytes or b"")


async def _authenticate_plain(exchange: _Exchange, settings: SecuritySettings) -> None:
    assert settings.sasl_username is not None and settings.sasl_password is not None
    message = b"\0" + settings.sasl_username.encode() + b"\0" + settings.sasl_password.reveal().encode()
    await exchange.round(message)


async def _authenticate_scram(exchange: _Exchange, settings: SecuritySettings, mechanism: str) -> None:
    assert settings.sasl_username is not None and settings.sasl_password is not None
    import scramp  # here, not at the top: it costs every command ~30 ms to import (asn1crypto, importlib.metadata)

    try:
        client = scramp.ScramClient([mechanism], settings.sasl_username, settings.sasl_password.reveal())
        server_first = await exchange.round(client.get_client_first().encode())
        client.set_server_first(_decode(exchange, server_first, "server-first"))
        server_final = await exchange.round(client.get_client_final().encode())
        client.set_server_final(_decode(exchange, server_final, "server-final"))
    except scramp.ScramException as exc:
        raise exchange.failure(
            f"SCRAM exchange rejected ({exc}); if the server signature did not verify, "
            "this may not be the broker you meant to reach"
        ) from None


def _decode(exchange: _Exchange, data: bytes, what: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise exchange.failure(f"the broker's SCRAM {what} message is not UTF-8") from None


async def _authenticate_oauthbearer(exchange: _Exchange, settings: SecuritySettings) -> None:
    token = await _fetch_token(exchange, settings)
    exchange.extra_secrets.append(token)
    challenge = await exchange.round(f"n,,\x01auth=Bearer {token}\x01\x01".encode())
    if challenge:
        # RFC 7628 3.2.2: an error challenge is answered with a lone %x01; the
        # broker then fails the exchange (normally with SASL_AUTHENTICATION_FAILED).
        await exchange.round(b"\x01")
        detail = redact(challenge.decode("utf-8", "replace"), settings, [token])
        raise exchange.failure(f"the broker rejected the token: {detail}")


async def _fetch_token(exchange: _Exchange, settings: SecuritySettings) -> str:
    if settings.sasl_oauth_token is not None:
        token: Any = settings.sasl_oauth_token.reveal()
    else:
        assert settings.oauth_token_provider is not None
        try:
            token = settings.oauth_token_provider()
            if inspect.isawaitable(token):
                token = await token
        except AuthenticationFailed:
            raise
        except Exception as exc:
            reason = redact(str(exc), settings)
            raise exchange.failure(f"the OAuth token provider failed: {type(exc).__name__}: {reason}") from None
    if isinstance(token, Secret):
        token = token.reveal()
    if not isinstance(token, str) or not token.strip():
        raise exchange.failure("the OAuth token provider returned no token")
    if "\x01" in token:
        raise exchange.failure("the OAuth token contains a control character (0x01)")
    return token.strip()
