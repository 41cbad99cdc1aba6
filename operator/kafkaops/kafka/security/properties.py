"""`client.properties` (the Kafka CLI's ``--command-config`` file) -> `SecuritySettings`:
java.util.Properties syntax, JAAS, ``${env:NAME}`` references. Errors name the file, line and
key, never a secret's value.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, NoReturn

from ..errors import AuthenticationFailed
from .settings import MECHANISMS, PROTOCOLS, SCRAM_MECHANISMS, Secret, SecurityConfigError, SecuritySettings
from .tls import _os_reason

log = logging.getLogger(__name__)


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
