"""A SASL server TEST DOUBLE: the broker side of SaslHandshake/SaslAuthenticate.

Used by the in-repo fake cluster (and by unit tests) to authenticate clients
the way a Kafka broker does (KIP-152 framing, KIP-368 re-authentication):

* PLAIN checks ``authzid\\0user\\0password`` against ``users``;
* SCRAM-SHA-256/512 runs ``scramp``'s server with the credential ``scram_lookup``
  finds (the fake cluster passes the credentials stored through
  AlterUserScramCredentials), else one derived from ``users`` (4096 iterations,
  Kafka's minimum). PLAIN needs the plain password, which a SCRAM store does not
  hold: it accepts only ``users``;
* OAUTHBEARER accepts the bearer tokens in ``tokens`` and, like Kafka, answers
  a bad token with an RFC 7628 error challenge before failing.

Failures use Kafka's error codes (UNSUPPORTED_SASL_MECHANISM, ILLEGAL_SASL_STATE,
SASL_AUTHENTICATION_FAILED) and messages that never contain a credential.
After a failure :attr:`SaslSessionDouble.failed` is set: a real broker closes
the connection at that point, and the fake cluster should too. The v0
handshake (raw SASL tokens without SaslAuthenticate framing) is not emulated.
"""

from __future__ import annotations

import enum
import hmac
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, Final

import scramp
from kio.schema.errors import ErrorCode

from kafkaops.kafka.wire import build, response_class

SASL_HANDSHAKE: Final = 17
API_VERSIONS: Final = 18
SASL_AUTHENTICATE: Final = 36
PRE_AUTH_APIS: Final = frozenset({SASL_HANDSHAKE, API_VERSIONS, SASL_AUTHENTICATE})
DEFAULT_MECHANISMS: Final = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
SCRAM_ITERATIONS: Final = 4096
OAUTH_PRINCIPAL: Final = "oauth-client"

_INVALID_CREDENTIALS = "Authentication failed during authentication due to invalid credentials with SASL mechanism {}"
_INVALID_TOKEN_JSON = b'{"status":"invalid_token"}'


class _State(enum.Enum):
    AWAIT_HANDSHAKE = "awaiting SaslHandshake"
    AWAIT_AUTHENTICATE = "awaiting SaslAuthenticate"
    IN_PROGRESS = "mid-exchange"
    AUTHENTICATED = "authenticated"
    FAILED = "failed"


class _Reject(Exception):
    """Internal: fail the exchange with ``code`` and a credential-free ``message``."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


ScramLookup = Callable[[str, str], "tuple[bytes, bytes, bytes, int] | None"]


class SaslServerDouble:
    """Broker-side SASL configuration shared by all connections of a fake cluster.

    ``users`` maps user name to password (used by PLAIN and SCRAM). ``tokens``
    is the set of accepted OAUTHBEARER bearer tokens, or a mapping from token
    to the principal name it authenticates. ``scram_lookup(mechanism, user)``
    returns a stored SCRAM credential (salt, stored key, server key, iterations)
    or None; it is asked before ``users``, on every login (a rotated credential
    takes effect for the next connection, as in Kafka).
    """

    def __init__(
        self,
        users: Mapping[str, str],
        mechanisms: Sequence[str] = DEFAULT_MECHANISMS,
        tokens: Collection[str] | Mapping[str, str] = frozenset(),
        *,
        scram_iterations: int = SCRAM_ITERATIONS,
        scram_lookup: ScramLookup | None = None,
    ) -> None:
        self.users = dict(users)
        self.mechanisms = tuple(mechanisms)
        if isinstance(tokens, Mapping):
            self.tokens = dict(tokens)
        else:
            self.tokens = {token: OAUTH_PRINCIPAL for token in tokens}
        self.scram_iterations = scram_iterations
        self.scram_lookup = scram_lookup
        self._scram_credentials: dict[tuple[str, str], tuple[Any, ...]] = {}

    def new_session(self) -> SaslSessionDouble:
        """State for one new connection."""
        return SaslSessionDouble(self)

    def set_password(self, username: str, password: str | None) -> None:
        """Add, change (a rotation: new logins need the new one) or, with None, remove a user.
        Connections already authenticated stay so, as in Kafka without KIP-368 re-authentication."""
        if password is None:
            self.users.pop(username, None)
        else:
            self.users[username] = password
        for key in [k for k in self._scram_credentials if k[1] == username]:
            del self._scram_credentials[key]

    def check_password(self, username: str, password: str) -> bool:
        expected = self.users.get(username)
        if expected is None:
            return False
        return hmac.compare_digest(expected.encode(), password.encode())

    def scram_credentials(self, mechanism: str, username: str) -> tuple[Any, ...]:
        """(salt, stored_key, server_key, iterations) for ``username``; KeyError if unknown."""
        stored = self.scram_lookup(mechanism, username) if self.scram_lookup is not None else None
        if stored is not None:
            return stored
        key = (mechanism, username)
        if key not in self._scram_credentials:
            password = self.users[username]
            self._scram_credentials[key] = scramp.ScramMechanism(mechanism).make_auth_info(
                password, iteration_count=self.scram_iterations
            )
        return self._scram_credentials[key]


class SaslSessionDouble:
    """The SASL state of one connection: feed it SaslHandshake/SaslAuthenticate bodies."""

    def __init__(self, server: SaslServerDouble) -> None:
        self._server = server
        self._state = _State.AWAIT_HANDSHAKE
        self.mechanism: str | None = None
        self.principal: str | None = None
        self._scram: Any = None
        self._scram_user: str | None = None
        self._oauth_error: str | None = None

    @property
    def authenticated(self) -> bool:
        return self._state is _State.AUTHENTICATED

    @property
    def failed(self) -> bool:
        """True once the exchange failed: the broker would close the connection."""
        return self._state is _State.FAILED

    def permits(self, api_key: int) -> bool:
        """Whether a request of ``api_key`` may be served in the current state."""
        return self.authenticated or (api_key in PRE_AUTH_APIS and not self.failed)

    def handle(self, api_key: int, version: int, body: Any) -> Any:
        """Answer a decoded SaslHandshake (17) or SaslAuthenticate (36) request."""
        if api_key == SASL_HANDSHAKE:
            return self._handshake(version, body)
        if api_key == SASL_AUTHENTICATE:
            return self._authenticate(version, body)
        raise ValueError(f"SaslSessionDouble handles API keys 17 and 36, not {api_key}")

    # -- SaslHandshake

    def _handshake(self, version: int, body: Any) -> Any:
        if self._state not in (_State.AWAIT_HANDSHAKE, _State.AUTHENTICATED):
            self._state = _State.FAILED
            return self._handshake_response(version, ErrorCode.illegal_sasl_state)
        if body.mechanism not in self._server.mechanisms:
            self._state = _State.FAILED
            return self._handshake_response(version, ErrorCode.unsupported_sasl_mechanism)
        self.mechanism = body.mechanism
        self._state = _State.AWAIT_AUTHENTICATE  # KIP-368: a new handshake re-authenticates
        self._scram = None
        self._scram_user = None
        self._oauth_error = None
        return self._handshake_response(version, ErrorCode.none)

    def _handshake_response(self, version: int, code: ErrorCode) -> Any:
        return build(
            response_class(SASL_HANDSHAKE, version),
            {"error_code": code, "mechanisms": self._server.mechanisms},
        )

    # -- SaslAuthenticate

    def _authenticate(self, version: int, body: Any) -> Any:
        try:
            if self._state not in (_State.AWAIT_AUTHENTICATE, _State.IN_PROGRESS):
                raise _Reject(
                    ErrorCode.illegal_sasl_state,
                    f"Unexpected SaslAuthenticate request in state: {self._state.value}",
                )
            reply = self._step(bytes(body.auth_bytes))
        except _Reject as reject:
            self._state = _State.FAILED
            return self._authenticate_response(version, reject.code, reject.message, b"")
        return self._authenticate_response(version, ErrorCode.none, None, reply)

    def _authenticate_response(
        self, version: int, code: ErrorCode, message: str | None, auth_bytes: bytes
    ) -> Any:
        return build(
            response_class(SASL_AUTHENTICATE, version),
            {"error_code": code, "error_message": message, "auth_bytes": auth_bytes},
        )

    def _step(self, data: bytes) -> bytes:
        mechanism = self.mechanism or ""
        if mechanism == "PLAIN":
            return self._plain(data)
        if mechanism.startswith("SCRAM-"):
            return self._scram_step(mechanism, data)
        return self._oauthbearer(data)

    def _succeed(self, principal: str) -> None:
        self.principal = f"User:{principal}"
        self._state = _State.AUTHENTICATED

    def _invalid_credentials(self) -> _Reject:
        return _Reject(
            ErrorCode.sasl_authentication_failed, _INVALID_CREDENTIALS.format(self.mechanism)
        )

    # -- PLAIN

    def _plain(self, data: bytes) -> bytes:
        parts = data.decode("utf-8", "replace").split("\0")
        if len(parts) != 3:
            raise _Reject(ErrorCode.sasl_authentication_failed, "Invalid SASL/PLAIN response: expected 3 tokens")
        authzid, username, password = parts
        if not username:
            raise _Reject(ErrorCode.sasl_authentication_failed, "Authentication failed: username not specified")
        if authzid and authzid != username:
            raise _Reject(
                ErrorCode.sasl_authentication_failed,
                "Authentication failed: Client requested an authorization id that is different from username",
            )
        if not self._server.check_password(username, password):
            raise _Reject(ErrorCode.sasl_authentication_failed, "Authentication failed: Invalid username or password")
        self._succeed(username)
        return b""

    # -- SCRAM

    def _scram_step(self, mechanism: str, data: bytes) -> bytes:
        try:
            message = data.decode("utf-8")
            if self._scram is None:
                return self._scram_first(mechanism, message)
            self._scram.set_client_final(message)
            reply = self._scram.get_server_final()
        except (scramp.ScramException, KeyError, UnicodeDecodeError):
            raise self._invalid_credentials() from None
        self._succeed(self._scram_user or "")
        return reply.encode()

    def _scram_first(self, mechanism: str, message: str) -> bytes:
        def credentials(username: str) -> tuple[Any, ...]:
            self._scram_user = username
            return self._server.scram_credentials(mechanism, username)

        server = scramp.ScramMechanism(mechanism).make_server(credentials)
        server.set_client_first(message)
        self._scram = server
        self._state = _State.IN_PROGRESS
        return server.get_server_first().encode()

    # -- OAUTHBEARER

    def _oauthbearer(self, data: bytes) -> bytes:
        if self._oauth_error is not None:
            # RFC 7628: the client acknowledges our error challenge with %x01.
            raise _Reject(
                ErrorCode.sasl_authentication_failed,
                f"{_INVALID_CREDENTIALS.format(self.mechanism)}: {self._oauth_error}",
            )
        token = _bearer_token(data)
        if token is None:
            raise _Reject(ErrorCode.sasl_authentication_failed, "Invalid OAUTHBEARER client first message")
        principal = self._server.tokens.get(token)
        if principal is None:
            self._oauth_error = _INVALID_TOKEN_JSON.decode()
            self._state = _State.IN_PROGRESS
            return _INVALID_TOKEN_JSON
        self._succeed(principal)
        return b""


def _bearer_token(data: bytes) -> str | None:
    """The token of an RFC 7628 client initial response, or None when malformed."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    parts = text.split("\x01")
    if len(parts) < 4 or parts[-2:] != ["", ""] or not parts[0].startswith(("n,", "y,")):
        return None
    if not parts[0].endswith(","):
        return None
    for pair in parts[1:-2]:
        key, _, value = pair.partition("=")
        if key == "auth":
            scheme, _, token = value.partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return token.strip()
    return None
