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
"""

from __future__ import annotations

import hmac
import inspect
import logging
import os
import re
import ssl
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, NoReturn

import scramp
from kio.schema.errors import ErrorCode

from .errors import AuthenticationFailed, KafkaOpsError

log = logging.getLogger(__name__)

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


# --------------------------------------------------------------------------- TLS


def ssl_context(settings: SecuritySettings) -> ssl.SSLContext | None:
    """A client TLS context for ``settings``, or None when the protocol has no TLS.

    The server certificate chain is always verified (``CERT_REQUIRED``), against
    ``ssl_cafile`` or else the system trust store; ``ssl_check_hostname=False``
    only skips the hostname match. A client certificate is loaded when given,
    decrypting its key with ``ssl_key_password`` (never prompting on a tty).
    """
    if not settings.uses_tls:
        return None
    try:
        context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=settings.ssl_cafile)
    except (OSError, ssl.SSLError) as exc:
        raise SecurityConfigError(
            redact(f"cannot load CA bundle {settings.ssl_cafile}: {_os_reason(exc)}", settings)
        ) from None
    context.check_hostname = settings.ssl_check_hostname
    context.verify_mode = ssl.CERT_REQUIRED
    if settings.ssl_certfile is not None:
        _load_client_certificate(context, settings)
    return context


def _load_client_certificate(context: ssl.SSLContext, settings: SecuritySettings) -> None:
    password = settings.ssl_key_password

    def give_password() -> str:
        # A callable stops OpenSSL from prompting interactively for an encrypted key.
        return password.reveal() if password is not None else ""

    where = settings.ssl_certfile
    if settings.ssl_keyfile is not None:
        where = f"{where} / key {settings.ssl_keyfile}"
    try:
        context.load_cert_chain(settings.ssl_certfile or "", settings.ssl_keyfile, give_password)
    except (OSError, ssl.SSLError) as exc:
        hint = (
            " (check the key password and that both files are PEM)"
            if password is not None
            else " (if the key is encrypted, set the key password)"
        )
        raise SecurityConfigError(
            redact(f"cannot load client certificate {where}: {_os_reason(exc)}{hint}", settings)
        ) from None


def _os_reason(exc: BaseException) -> str:
    if isinstance(exc, ssl.SSLError):
        return exc.reason or str(exc)
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


# --------------------------------------------------------------------------- redaction


def redact(text: str, settings: SecuritySettings | None, extra: Iterable[str | Secret] = ()) -> str:
    """``text`` with every occurrence of a secret value replaced by ``***``.

    Secrets come from ``settings`` plus ``extra`` (e.g. a token just fetched
    from a provider). Longer secrets are replaced first so that one secret
    being a prefix of another cannot leave a tail behind.
    """
    values = set(settings.secret_values()) if settings is not None else set()
    for item in extra:
        values.add(item.reveal() if isinstance(item, Secret) else item)
    for value in sorted((v for v in values if v), key=len, reverse=True):
        text = text.replace(value, REDACTED)
    return text


class RedactingFilter(logging.Filter):
    """A logging filter that scrubs the settings' secret values from messages."""

    def __init__(self, settings: SecuritySettings, name: str = "") -> None:
        super().__init__(name)
        self._settings = settings

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message, self._settings)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True


# --------------------------------------------------------------------------- client.properties


_SECRET_KEY_HINTS: Final = ("password", "jaas", "token", "secret", "key")
_PEM_SUFFIXES: Final = (".pem", ".crt", ".cer")
_ENV_REF = re.compile(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}")
_JAAS_MODULES: Final = {
    "org.apache.kafka.common.security.plain.PlainLoginModule": "PLAIN",
    "org.apache.kafka.common.security.scram.ScramLoginModule": "SCRAM",
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule": "OAUTHBEARER",
}
_JAAS_FLAGS: Final = ("required", "requisite", "sufficient", "optional")
_INLINE_PEM_KEYS: Final = (
    "ssl.truststore.certificates",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.key",
)
_KNOWN_KEYS: Final = frozenset(
    {
        "security.protocol",
        "ssl.truststore.location",
        "ssl.truststore.type",
        "ssl.ca.location",
        "ssl.keystore.location",
        "ssl.keystore.type",
        "ssl.certificate.location",
        "ssl.key.location",
        "ssl.key.password",
        "ssl.endpoint.identification.algorithm",
        "sasl.mechanism",
        "sasl.jaas.config",
        "sasl.username",
        "sasl.password",
        "sasl.oauthbearer.token",
        "sasl.oauthbearer.token.file",
        "client.id",
    }
)


def is_secret_key(key: str) -> bool:
    """Whether a property's value must never be echoed (names containing password, key...)."""
    lowered = key.lower()
    return any(hint in lowered for hint in _SECRET_KEY_HINTS)


@dataclass(frozen=True)
class ClientProperties:
    """The result of reading a client.properties: settings plus the keys kafkaops ignored."""

    settings: SecuritySettings
    ignored_keys: tuple[str, ...]


@dataclass(frozen=True)
class _Entry:
    key: str
    value: str
    line: int


def load_properties(path: str | os.PathLike[str], environ: Mapping[str, str] | None = None) -> SecuritySettings:
    """Read a Kafka-CLI ``client.properties`` file into :class:`SecuritySettings`.

    Ignored (unknown) keys are logged by name at WARNING.
    """
    source = os.fspath(path)
    try:
        raw = Path(source).read_bytes()
    except OSError as exc:
        raise SecurityConfigError(f"cannot read {source}: {_os_reason(exc)}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")  # java.util.Properties' own encoding
    return parse_properties(text, source=source, environ=environ)


def parse_properties(
    text: str, source: str = "<string>", environ: Mapping[str, str] | None = None
) -> SecuritySettings:
    """Like :func:`load_properties`, for text already read (``source`` names it in errors)."""
    result = read_properties(text, source=source, environ=environ)
    if result.ignored_keys:
        log.warning("%s: ignoring unsupported keys: %s", source, ", ".join(result.ignored_keys))
    return result.settings


def read_properties(
    text: str, source: str = "<string>", environ: Mapping[str, str] | None = None
) -> ClientProperties:
    """Parse client.properties text; returns settings and the ignored key names.

    Values may reference environment variables as ``${env:NAME}`` (Kafka's
    EnvVarConfigProvider syntax); they are resolved from ``environ`` (default:
    the process environment). Errors name ``source`` and the line; they never
    echo the value of a secret-looking key.
    """
    env = os.environ if environ is None else environ
    entries: dict[str, _Entry] = {}
    for entry in _parse_java_properties(text, source):
        entries[entry.key] = entry  # last one wins, as in java.util.Properties
    ignored = tuple(key for key in entries if key not in _KNOWN_KEYS and key not in _INLINE_PEM_KEYS)
    builder = _PropertiesBuilder(source, entries, env)
    return ClientProperties(builder.build(), ignored)


# ---- java.util.Properties syntax


def _parse_java_properties(text: str, source: str) -> Iterator[_Entry]:
    for line_no, logical in _logical_lines(text):
        key, value = _split_key_value(logical)
        key = _unescape(key, source, line_no, "a key")
        if not key:
            raise SecurityConfigError(f"{source}:{line_no}: missing key before the separator")
        what = f"the value of {key}"
        yield _Entry(key, _unescape(value, source, line_no, what), line_no)


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """(first physical line number, logical line) with comments and continuations handled."""
    lines = re.split(r"\r\n|\r|\n", text)
    index = 0
    while index < len(lines):
        start = index + 1
        line = lines[index].lstrip(" \t\f")
        index += 1
        if not line or line[0] in "#!":
            continue
        parts: list[str] = []
        while _continues(line):
            parts.append(line[:-1])
            if index >= len(lines):
                line = ""
                break
            line = lines[index].lstrip(" \t\f")
            index += 1
        parts.append(line)
        yield start, "".join(parts)


def _continues(line: str) -> bool:
    trailing = len(line) - len(line.rstrip("\\"))
    return trailing % 2 == 1


def _split_key_value(line: str) -> tuple[str, str]:
    index, length = 0, len(line)
    while index < length:
        char = line[index]
        if char == "\\":
            index += 2
            continue
        if char in "=: \t\f":
            break
        index += 1
    key = line[:index]
    rest = line[index:].lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return key, rest


_SIMPLE_ESCAPES: Final = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(raw: str, source: str, line_no: int, what: str) -> str:
    out: list[str] = []
    index, length = 0, len(raw)
    while index < length:
        char = raw[index]
        index += 1
        if char != "\\" or index >= length:
            if char != "\\":
                out.append(char)
            continue
        escaped = raw[index]
        index += 1
        if escaped == "u":
            digits = raw[index : index + 4]
            if len(digits) != 4 or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise SecurityConfigError(f"{source}:{line_no}: malformed \\uXXXX escape in {what}")
            out.append(chr(int(digits, 16)))
            index += 4
        else:
            out.append(_SIMPLE_ESCAPES.get(escaped, escaped))
    return "".join(out)


# ---- JAAS


@dataclass(frozen=True)
class _Jaas:
    family: str  # PLAIN | SCRAM | OAUTHBEARER
    options: dict[str, str]


def _jaas_tokens(text: str) -> Iterator[tuple[str, str]]:
    """(kind, text) tokens: kind is 'word', 'quoted' or a symbol ('=' or ';')."""
    index, length = 0, len(text)
    while index < length:
        char = text[index]
        if char.isspace():
            index += 1
        elif char in "=;":
            yield char, char
            index += 1
        elif char == '"':
            value, index = _jaas_quoted(text, index + 1)
            yield "quoted", value
        else:
            start = index
            while index < length and not text[index].isspace() and text[index] not in '=;"':
                index += 1
            yield "word", text[start:index]


def _jaas_quoted(text: str, index: int) -> tuple[str, int]:
    out: list[str] = []
    while index < len(text):
        char = text[index]
        if char == '"':
            return "".join(out), index + 1
        if char == "\\" and index + 1 < len(text):
            index += 1
            char = _SIMPLE_ESCAPES.get(text[index], text[index])
        out.append(char)
        index += 1
    raise ValueError("unterminated quoted value")


def _parse_jaas(text: str) -> _Jaas:
    """Parse one login module entry. Raises ValueError with a value-free message."""
    tokens = list(_jaas_tokens(text))
    if len(tokens) < 3 or tokens[0][0] != "word" or tokens[1][0] != "word":
        raise ValueError("expected '<LoginModule class> required key=\"value\" ...;'")
    family = _jaas_family(tokens[0][1])
    if tokens[1][1].lower() not in _JAAS_FLAGS:
        raise ValueError(f"expected a control flag ({', '.join(_JAAS_FLAGS)}) after the login module")
    options: dict[str, str] = {}
    index = 2
    while index < len(tokens) and tokens[index][0] != ";":
        name, eq, value = (tokens[index : index + 3] + [("", "")] * 3)[:3]
        if name[0] != "word" or eq[0] != "=" or value[0] not in ("word", "quoted"):
            raise ValueError("expected options as key=\"value\" pairs")
        options[name[1]] = value[1]
        index += 3
    if index >= len(tokens):
        raise ValueError("missing ';' at the end of the login module entry")
    if index + 1 != len(tokens):
        raise ValueError("exactly one login module is supported (text found after ';')")
    return _Jaas(family, options)


def _jaas_family(module: str) -> str:
    for name, family in _JAAS_MODULES.items():
        if module == name or module.endswith("." + name):  # shaded copies keep the suffix
            return family
    raise ValueError(
        "unsupported login module; kafkaops supports " + ", ".join(sorted(_JAAS_MODULES))
    )


# ---- properties -> settings


class _PropertiesBuilder:
    """Turns parsed entries into SecuritySettings, with located, value-free errors."""

    def __init__(self, source: str, entries: Mapping[str, _Entry], env: Mapping[str, str]) -> None:
        self.source = source
        self.entries = entries
        self.env = env

    # -- helpers

    def fail(self, key: str | None, message: str) -> NoReturn:
        where = self.source
        if key is not None and key in self.entries:
            where = f"{self.source}:{self.entries[key].line}"
        raise SecurityConfigError(f"{where}: {message}")

    def resolve(self, key: str, value: str) -> str:
        def lookup(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in self.env:
                self.fail(key, f"{key} references environment variable {name}, which is not set")
            return self.env[name]

        return _ENV_REF.sub(lookup, value)

    def get(self, key: str, strip: bool = True) -> str | None:
        """The resolved value; like Kafka, password values keep surrounding whitespace."""
        entry = self.entries.get(key)
        if entry is None:
            return None
        value = self.resolve(key, entry.value)
        return value.strip() if strip else value

    def describe(self, key: str, value: str) -> str:
        return f"{key} (value hidden)" if is_secret_key(key) else f"{key}={value!r}"

    # -- build

    def build(self) -> SecuritySettings:
        for key in _INLINE_PEM_KEYS:
            if key in self.entries:
                self.fail(key, f"{key} (inline PEM) is not supported; put the PEM in a file "
                          "and reference it with ssl.truststore.location / ssl.keystore.location")
        kwargs: dict[str, Any] = {}
        kwargs["protocol"] = (self.get("security.protocol") or "PLAINTEXT").upper()
        if kwargs["protocol"] not in PROTOCOLS:
            self.fail("security.protocol", f"{self.describe('security.protocol', kwargs['protocol'])} "
                      f"is not one of {', '.join(PROTOCOLS)}")
        client_id = self.get("client.id")
        if client_id:
            kwargs["client_id"] = client_id
        kwargs.update(self.tls_options())
        kwargs.update(self.sasl_options())
        try:
            return SecuritySettings(**kwargs)
        except SecurityConfigError as exc:
            raise SecurityConfigError(f"{self.source}: {_property_names(str(exc))}") from None

    def tls_options(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        cafile = self.truststore()
        if cafile:
            out["ssl_cafile"] = cafile
        out.update(self.keystore())
        password = self.get("ssl.key.password", strip=False)
        if password:
            out["ssl_key_password"] = Secret(password)
        algorithm = self.get("ssl.endpoint.identification.algorithm")
        if algorithm is not None:
            if algorithm.lower() not in ("", "https"):
                self.fail("ssl.endpoint.identification.algorithm",
                          f"{self.describe('ssl.endpoint.identification.algorithm', algorithm)} "
                          "must be 'https' (check hostnames) or empty (do not)")
            out["ssl_check_hostname"] = algorithm.lower() == "https"
        return out

    def truststore(self) -> str | None:
        ca = self.get("ssl.ca.location")
        location = self.get("ssl.truststore.location")
        if ca and location:
            self.fail("ssl.ca.location", "give either ssl.ca.location or ssl.truststore.location, not both")
        if location:
            self.require_pem("ssl.truststore", location)
        return ca or location or None

    def keystore(self) -> dict[str, Any]:
        location = self.get("ssl.keystore.location")
        cert = self.get("ssl.certificate.location")
        key = self.get("ssl.key.location")
        if location and (cert or key):
            self.fail("ssl.keystore.location", "give either ssl.keystore.location or "
                      "ssl.certificate.location/ssl.key.location, not both")
        if location:
            self.require_pem("ssl.keystore", location)
            return {"ssl_certfile": location}
        if key and not cert:
            self.fail("ssl.key.location", "ssl.key.location needs ssl.certificate.location")
        out: dict[str, Any] = {}
        if cert:
            out["ssl_certfile"] = cert
        if key:
            out["ssl_keyfile"] = key
        return out

    def require_pem(self, prefix: str, location: str) -> None:
        store_type = self.get(f"{prefix}.type")
        if store_type is None and location.lower().endswith(_PEM_SUFFIXES):
            return
        if store_type is not None and store_type.upper() == "PEM":
            return
        shown = store_type.upper() if store_type else "JKS (Kafka's default when no type is set)"
        convert = (
            "keytool -importkeystore -srckeystore <file> -destkeystore out.p12 -deststoretype PKCS12, "
            "then openssl pkcs12 -in out.p12 -out out.pem"
        )
        self.fail(f"{prefix}.location",
                  f"{prefix}.location is a {shown} store; kafkaops only reads PEM files. Convert it "
                  f"to PEM ({convert}) and set {prefix}.type=PEM")

    def sasl_options(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        mechanism = self.get("sasl.mechanism")
        jaas = self.jaas()
        if mechanism:
            mechanism = mechanism.upper()
            if mechanism not in MECHANISMS:
                self.fail("sasl.mechanism", f"{self.describe('sasl.mechanism', mechanism)} is not "
                          f"supported; kafkaops supports {', '.join(MECHANISMS)}")
        if jaas is not None:
            mechanism = self.reconcile_mechanism(mechanism, jaas.family)
        if mechanism:
            out["sasl_mechanism"] = mechanism
        out.update(self.credentials(jaas))
        return out

    def jaas(self) -> _Jaas | None:
        entry = self.entries.get("sasl.jaas.config")
        if entry is None or not entry.value.strip():
            return None
        try:
            jaas = _parse_jaas(entry.value)
        except ValueError as exc:
            self.fail("sasl.jaas.config", f"cannot parse sasl.jaas.config (value hidden): {exc}")
        options = {name: self.resolve("sasl.jaas.config", value) for name, value in jaas.options.items()}
        return _Jaas(jaas.family, options)

    def reconcile_mechanism(self, mechanism: str | None, family: str) -> str:
        if mechanism is None:
            if family == "SCRAM":
                self.fail("sasl.jaas.config", "ScramLoginModule needs sasl.mechanism=SCRAM-SHA-256 "
                          "or sasl.mechanism=SCRAM-SHA-512")
            return family
        matches = mechanism in SCRAM_MECHANISMS if family == "SCRAM" else mechanism == family
        if not matches:
            self.fail("sasl.mechanism", f"sasl.mechanism={mechanism} does not match the login module "
                      f"in sasl.jaas.config (which is for {family})")
        return mechanism

    def credentials(self, jaas: _Jaas | None) -> dict[str, Any]:
        out: dict[str, Any] = {}
        username, password = self.get("sasl.username"), self.get("sasl.password", strip=False)
        if jaas is not None and jaas.family != "OAUTHBEARER":
            if username is not None or password is not None:
                self.fail("sasl.jaas.config", "give credentials either in sasl.jaas.config or as "
                          "sasl.username/sasl.password, not both")
            username, password = jaas.options.get("username"), jaas.options.get("password")
            if username is None or password is None:
                missing = "username" if username is None else "password"
                self.fail("sasl.jaas.config", f"sasl.jaas.config has no {missing}=\"...\" option")
        if username is not None:
            out["sasl_username"] = username
        if password is not None:
            out["sasl_password"] = Secret(password)
        out.update(self.oauth_token())
        return out

    def oauth_token(self) -> dict[str, Any]:
        token, token_file = self.get("sasl.oauthbearer.token"), self.get("sasl.oauthbearer.token.file")
        if token and token_file:
            self.fail("sasl.oauthbearer.token", "give either sasl.oauthbearer.token or "
                      "sasl.oauthbearer.token.file, not both")
        if token:
            return {"sasl_oauth_token": Secret(token)}
        if token_file:
            return {"oauth_token_provider": FileTokenProvider(token_file)}
        return {}


_FIELD_TO_PROPERTY: Final = {
    "sasl_mechanism": "sasl.mechanism",
    "sasl_username": "sasl.jaas.config username / sasl.username",
    "sasl_password": "sasl.jaas.config password / sasl.password",
    "sasl_oauth_token": "sasl.oauthbearer.token",
    "oauth_token_provider": "sasl.oauthbearer.token.file",
    "ssl_cafile": "ssl.truststore.location",
    "ssl_certfile": "ssl.keystore.location / ssl.certificate.location",
    "ssl_keyfile": "ssl.key.location",
    "ssl_key_password": "ssl.key.password",
}
_FIELD_NAME = re.compile(r"\b(" + "|".join(_FIELD_TO_PROPERTY) + r")\b")


def _property_names(message: str) -> str:
    """Rewrite a settings validation message in client.properties terms."""
    return _FIELD_NAME.sub(lambda m: _FIELD_TO_PROPERTY[m.group(1)], message)


@dataclass(frozen=True)
class FileTokenProvider:
    """An OAUTHBEARER token provider that re-reads a token file on every call
    (so a sidecar can rotate it)."""

    path: str

    def __call__(self) -> str:
        try:
            return Path(self.path).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise AuthenticationFailed(f"cannot read OAUTHBEARER token file {self.path}: {_os_reason(exc)}") from None


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
