"""Security settings, client.properties, TLS contexts, SASL against the server double.

Every test that can produce text (repr, exception, log) uses the distinctive
secret ``s3cr3t-P@ss`` (or token) and asserts it never appears.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import pickle
import shutil
import ssl
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from kafkaops.kafka.errors import AuthenticationFailed, KafkaOpsError
from kafkaops.kafka.security import (
    FileTokenProvider,
    RedactingFilter,
    Secret,
    SecurityConfigError,
    SecuritySettings,
    is_secret_key,
    load_properties,
    parse_properties,
    read_properties,
    redact,
    sasl_authenticate,
    ssl_context,
)
from kafkaops.kafka.wire import (
    build,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    peek_correlation_id,
    request_class,
)
from kafkaops.testing.sasl_double import SaslServerDouble, SaslSessionDouble

SECRET = "s3cr3t-P@ss"
TOKEN = "tok-3y.J0SECRET.sig"
USERS = {"alice": SECRET, "bob": "other-password"}


def assert_clean(*texts: str) -> None:
    for text in texts:
        assert SECRET not in text
        assert TOKEN not in text


# --------------------------------------------------------------------------- Secret


class TestSecret:
    def test_never_prints_in_clear(self) -> None:
        s = Secret(SECRET)
        assert repr(s) == "Secret('***')"
        assert str(s) == "***"
        assert f"{s}" == "***"
        assert f"{s:>5}" == "  ***"
        assert "%s %r" % (s, s) == "*** Secret('***')"
        assert s.reveal() == SECRET

    def test_equality_and_hash_by_value(self) -> None:
        assert Secret("a") == Secret("a")
        assert Secret("a") != Secret("b")
        assert Secret("a") != "a"
        assert hash(Secret("a")) == hash(Secret("a"))
        assert len({Secret("a"), Secret("a"), Secret("b")}) == 2
        assert Secret(Secret("x")).reveal() == "x"

    def test_frozen(self) -> None:
        s = Secret(SECRET)
        with pytest.raises(AttributeError):
            s._value = "other"  # type: ignore[misc]
        with pytest.raises(AttributeError):
            del s._value
        assert s.reveal() == SECRET

    def test_not_picklable(self) -> None:
        for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
            with pytest.raises(TypeError):
                pickle.dumps(Secret(SECRET), protocol=protocol)

    def test_copy_returns_same(self) -> None:
        s = Secret(SECRET)
        assert copy.copy(s) is s
        assert copy.deepcopy(s) is s
        settings = plain_settings()
        assert copy.deepcopy(settings) == settings

    def test_rejects_non_str(self) -> None:
        with pytest.raises(TypeError):
            Secret(b"bytes")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- settings


def plain_settings(mechanism: str = "PLAIN", password: str = SECRET, **extra: Any) -> SecuritySettings:
    return SecuritySettings(
        protocol="SASL_SSL",
        sasl_mechanism=mechanism,  # type: ignore[arg-type]
        sasl_username="alice",
        sasl_password=Secret(password),
        **extra,
    )


def oauth_settings(token: str | None = TOKEN, provider: Any = None) -> SecuritySettings:
    return SecuritySettings(
        protocol="SASL_PLAINTEXT",
        sasl_mechanism="OAUTHBEARER",
        sasl_oauth_token=Secret(token) if token is not None else None,
        oauth_token_provider=provider,
    )


class TestSettings:
    def test_defaults(self) -> None:
        s = SecuritySettings()
        assert s.protocol == "PLAINTEXT"
        assert s.client_id == "kafkaops"
        assert s.ssl_check_hostname is True
        assert not s.uses_tls and not s.uses_sasl
        assert s.secret_values() == ()

    def test_normalises(self) -> None:
        s = SecuritySettings(
            protocol="sasl_ssl",  # type: ignore[arg-type]
            sasl_mechanism="scram-sha-256",  # type: ignore[arg-type]
            sasl_username="alice",
            sasl_password=SECRET,  # type: ignore[arg-type]
            ssl_cafile=Path("/tmp/ca.pem"),  # type: ignore[arg-type]
        )
        assert s.protocol == "SASL_SSL"
        assert s.sasl_mechanism == "SCRAM-SHA-256"
        assert isinstance(s.sasl_password, Secret)
        assert s.sasl_password.reveal() == SECRET
        assert s.ssl_cafile == "/tmp/ca.pem"
        assert s.uses_tls and s.uses_sasl

    def test_repr_hides_every_secret(self) -> None:
        s = SecuritySettings(
            protocol="SASL_SSL",
            ssl_certfile="/c.pem",
            ssl_key_password=Secret(SECRET),
            sasl_mechanism="PLAIN",
            sasl_username="alice",
            sasl_password=Secret(SECRET),
        )
        assert_clean(repr(s), str(s))
        assert "***" in repr(s)
        o = oauth_settings()
        assert_clean(repr(o), str(o))
        p = oauth_settings(token=None, provider=lambda: TOKEN)
        assert "oauth_token_provider" not in repr(p)

    def test_equality_ignores_provider(self) -> None:
        a = oauth_settings(token=None, provider=lambda: "x")
        b = oauth_settings(token=None, provider=lambda: "y")
        assert a == b
        assert plain_settings() == plain_settings()
        assert plain_settings() != plain_settings(password="different")
        assert hash(plain_settings()) == hash(plain_settings())

    def test_frozen(self) -> None:
        s = plain_settings()
        with pytest.raises(AttributeError):
            s.protocol = "PLAINTEXT"  # type: ignore[misc]

    @pytest.mark.parametrize(
        ("kwargs", "expected"),
        [
            ({"protocol": "TLS"}, "unknown security protocol"),
            ({"protocol": "SASL_SSL"}, "needs a SASL mechanism"),
            ({"protocol": "SASL_SSL", "sasl_mechanism": "GSSAPI"}, "unsupported SASL mechanism"),
            (
                {"protocol": "SASL_SSL", "sasl_mechanism": "PLAIN", "sasl_password": SECRET},
                "needs a username",
            ),
            (
                {"protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512", "sasl_username": "alice"},
                "needs a non-empty password",
            ),
            (
                {"protocol": "SASL_SSL", "sasl_mechanism": "PLAIN", "sasl_username": "a", "sasl_password": ""},
                "needs a non-empty password",
            ),
            ({"protocol": "SASL_SSL", "sasl_mechanism": "OAUTHBEARER"}, "needs a token"),
            (
                {
                    "protocol": "SASL_SSL",
                    "sasl_mechanism": "OAUTHBEARER",
                    "sasl_oauth_token": TOKEN,
                    "oauth_token_provider": lambda: TOKEN,
                },
                "not both",
            ),
            (
                {
                    "protocol": "SASL_SSL",
                    "sasl_mechanism": "OAUTHBEARER",
                    "sasl_oauth_token": TOKEN,
                    "sasl_password": SECRET,
                },
                "not used by SASL mechanism OAUTHBEARER",
            ),
            (
                {
                    "protocol": "SASL_SSL",
                    "sasl_mechanism": "PLAIN",
                    "sasl_username": "alice",
                    "sasl_password": SECRET,
                    "sasl_oauth_token": TOKEN,
                },
                "only apply to OAUTHBEARER",
            ),
            ({"protocol": "SSL", "sasl_mechanism": "PLAIN"}, "SASL settings (sasl_mechanism)"),
            ({"protocol": "PLAINTEXT", "sasl_password": SECRET}, "SASL settings (sasl_password)"),
            ({"protocol": "PLAINTEXT", "ssl_cafile": "/ca.pem"}, "TLS settings (ssl_cafile)"),
            ({"protocol": "SSL", "ssl_keyfile": "/k.pem"}, "without ssl_certfile"),
            ({"protocol": "SSL", "ssl_key_password": SECRET}, "without a client certificate"),
            ({"client_id": ""}, "client_id"),
            ({"ssl_check_hostname": "no"}, "must be a bool"),
        ],
    )
    def test_validation_errors(self, kwargs: dict[str, Any], expected: str) -> None:
        with pytest.raises(SecurityConfigError) as info:
            SecuritySettings(**kwargs)
        assert expected in str(info.value)
        assert_clean(str(info.value), repr(info.value))
        assert isinstance(info.value, KafkaOpsError) and isinstance(info.value, ValueError)


# --------------------------------------------------------------------------- client.properties


class TestPropertiesSyntax:
    def test_separators_comments_whitespace(self) -> None:
        text = (
            "# a comment\n"
            "   ! another comment\n"
            "\n"
            "security.protocol = SASL_SSL\n"
            "sasl.mechanism:PLAIN\n"
            "client.id    my-client\n"
            "  sasl.username=alice\n"
            "sasl.password=" + SECRET + "\n"
        )
        s = parse_properties(text)
        assert s.protocol == "SASL_SSL"
        assert s.sasl_mechanism == "PLAIN"
        assert s.client_id == "my-client"
        assert s.sasl_username == "alice"
        assert s.sasl_password == Secret(SECRET)

    def test_continuation_lines_and_crlf(self) -> None:
        text = (
            "security.protocol=SASL_\\\r\n"
            "     PLAINTEXT\r\n"
            "sasl.mechanism=SCRAM-SHA-512\r\n"
            "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule \\\n"
            "    required \\\n"
            "    username=\"alice\" \\\n"
            "    password=\"" + SECRET + "\";\n"
        )
        s = parse_properties(text)
        assert s.protocol == "SASL_PLAINTEXT"
        assert s.sasl_mechanism == "SCRAM-SHA-512"
        assert s.sasl_username == "alice"
        assert s.sasl_password == Secret(SECRET)

    def test_escapes(self) -> None:
        text = (
            "security.protocol=SASL_SSL\n"
            "sasl.mechanism=PLAIN\n"
            "sasl.username=\\u0061l\\ice\n"  # \i -> i, \u0061 -> a
            "sasl.password=p\\=w\\:d\\\\x\\t\n"
            "we\\ird\\ key\\=x=1\n"
        )
        result = read_properties(text)
        assert result.settings.sasl_username == "alice"
        assert result.settings.sasl_password == Secret("p=w:d\\x\t")  # passwords are not trimmed
        assert result.ignored_keys == ("weird key=x",)

    def test_even_backslashes_do_not_continue(self) -> None:
        text = "client.id=abc\\\\\nsecurity.protocol=SSL\n"
        s = parse_properties(text)
        assert s.client_id == "abc\\"
        assert s.protocol == "SSL"

    def test_continuation_of_comment_is_not_a_continuation(self) -> None:
        text = "# comment \\\nclient.id=x\n"
        assert parse_properties(text).client_id == "x"

    def test_last_duplicate_wins(self) -> None:
        assert parse_properties("client.id=a\nclient.id=b\n").client_id == "b"

    def test_malformed_unicode_escape_names_line_not_value(self) -> None:
        text = "client.id=x\nssl.key.password=" + SECRET + "\\u12\n"
        with pytest.raises(SecurityConfigError) as info:
            parse_properties(text, source="client.properties")
        message = str(info.value)
        assert "client.properties:2" in message
        assert "\\uXXXX" in message
        assert_clean(message)

    def test_missing_key(self) -> None:
        with pytest.raises(SecurityConfigError, match=r"<string>:1: missing key"):
            parse_properties("=value\n")

    def test_unknown_keys_reported_and_logged_by_name(self, caplog: pytest.LogCaptureFixture) -> None:
        text = "request.timeout.ms=30000\nssl.truststore.password=" + SECRET + "\nsecurity.protocol=SSL\n"
        result = read_properties(text)
        assert result.ignored_keys == ("request.timeout.ms", "ssl.truststore.password")
        with caplog.at_level(logging.DEBUG):
            parse_properties(text, source="cp.properties")
        assert "request.timeout.ms" in caplog.text
        assert "ssl.truststore.password" in caplog.text
        assert "cp.properties" in caplog.text
        assert "30000" not in caplog.text
        assert_clean(caplog.text)

    def test_is_secret_key(self) -> None:
        for key in ("ssl.key.password", "sasl.jaas.config", "sasl.oauthbearer.token", "my.secret", "ssl.key.location"):
            assert is_secret_key(key)
        for key in ("security.protocol", "client.id", "sasl.mechanism"):
            assert not is_secret_key(key)


class TestPropertiesTls:
    def test_pem_truststore_and_keystore(self) -> None:
        text = (
            "security.protocol=SSL\n"
            "ssl.truststore.type=PEM\n"
            "ssl.truststore.location=/etc/kafka/ca.crt.txt\n"
            "ssl.keystore.type=pem\n"
            "ssl.keystore.location=/etc/kafka/client-bundle.txt\n"
            "ssl.key.password=" + SECRET + "\n"
        )
        s = parse_properties(text)
        assert s.ssl_cafile == "/etc/kafka/ca.crt.txt"
        assert s.ssl_certfile == "/etc/kafka/client-bundle.txt"
        assert s.ssl_keyfile is None
        assert s.ssl_key_password == Secret(SECRET)
        assert s.ssl_check_hostname is True

    def test_pem_by_suffix_when_type_missing(self) -> None:
        s = parse_properties("security.protocol=SSL\nssl.truststore.location=/ca.pem\n")
        assert s.ssl_cafile == "/ca.pem"

    def test_librdkafka_style_locations(self) -> None:
        text = (
            "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.username=u\nsasl.password=librdkafka-style-pw\n"
            "ssl.ca.location=/ca.pem\nssl.certificate.location=/c.pem\nssl.key.location=/k.pem\n"
        )
        s = parse_properties(text)
        assert (s.ssl_cafile, s.ssl_certfile, s.ssl_keyfile) == ("/ca.pem", "/c.pem", "/k.pem")

    @pytest.mark.parametrize(
        ("value", "expected"), [("", False), ("https", True), ("HTTPS", True)]
    )
    def test_endpoint_identification(self, value: str, expected: bool) -> None:
        s = parse_properties(f"security.protocol=SSL\nssl.endpoint.identification.algorithm={value}\n")
        assert s.ssl_check_hostname is expected

    def test_endpoint_identification_invalid(self) -> None:
        with pytest.raises(SecurityConfigError, match=r"cp:2: ssl.endpoint.identification.algorithm='ldap'"):
            parse_properties("security.protocol=SSL\nssl.endpoint.identification.algorithm=ldap\n", source="cp")

    @pytest.mark.parametrize(
        ("lines", "shown"),
        [
            ("ssl.truststore.location=/truststore.jks\n", "JKS"),
            ("ssl.truststore.type=JKS\nssl.truststore.location=/t.pem\n", "JKS"),
            ("ssl.truststore.type=PKCS12\nssl.truststore.location=/t.p12\n", "PKCS12"),
            ("ssl.keystore.type=PKCS12\nssl.keystore.location=/k.p12\n", "PKCS12"),
        ],
    )
    def test_non_pem_stores_rejected_clearly(self, lines: str, shown: str) -> None:
        text = "security.protocol=SSL\n" + lines + "ssl.truststore.password=" + SECRET + "\n"
        with pytest.raises(SecurityConfigError) as info:
            parse_properties(text, source="cp")
        message = str(info.value)
        assert shown in message
        assert "only reads PEM" in message
        assert "Convert it to PEM" in message
        assert "type=PEM" in message
        assert message.startswith("cp:")
        assert_clean(message)

    def test_inline_pem_rejected(self) -> None:
        with pytest.raises(SecurityConfigError, match="inline PEM"):
            parse_properties("security.protocol=SSL\nssl.truststore.certificates=-----BEGIN\n")

    def test_conflicting_locations(self) -> None:
        with pytest.raises(SecurityConfigError, match="not both"):
            parse_properties("security.protocol=SSL\nssl.ca.location=/a.pem\nssl.truststore.location=/b.pem\n")
        with pytest.raises(SecurityConfigError, match="not both"):
            parse_properties(
                "security.protocol=SSL\nssl.keystore.location=/a.pem\nssl.certificate.location=/b.pem\n"
            )

    def test_tls_setting_without_tls_protocol(self) -> None:
        with pytest.raises(SecurityConfigError, match="TLS settings"):
            parse_properties("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                             "sasl.username=a\nsasl.password=b\nssl.ca.location=/ca.pem\n")


class TestPropertiesSasl:
    def test_plain_jaas(self) -> None:
        text = (
            "security.protocol=SASL_SSL\n"
            "sasl.mechanism=PLAIN\n"
            "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
            'username="alice" password="' + SECRET + '";\n'
        )
        s = parse_properties(text)
        assert s.sasl_mechanism == "PLAIN"
        assert s.sasl_username == "alice"
        assert s.sasl_password == Secret(SECRET)

    def test_plain_inferred_from_login_module(self) -> None:
        text = (
            "security.protocol=SASL_PLAINTEXT\n"
            "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
            "username=alice password=unquoted ;\n"
        )
        s = parse_properties(text)
        assert s.sasl_mechanism == "PLAIN"
        assert s.sasl_password == Secret("unquoted")

    @pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
    def test_scram_jaas_with_escapes(self, mechanism: str) -> None:
        text = (
            "security.protocol=SASL_SSL\n"
            f"sasl.mechanism={mechanism}\n"
            "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
            '  username="al ice" \\\n'
            '  password="a \\\\"quoted\\\\" pass;word";\n'
        )
        s = parse_properties(text)
        assert s.sasl_mechanism == mechanism
        assert s.sasl_username == "al ice"
        assert s.sasl_password == Secret('a "quoted" pass;word')

    def test_shaded_login_module(self) -> None:
        text = (
            "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n"
            "sasl.jaas.config=kafkashaded.org.apache.kafka.common.security.plain.PlainLoginModule "
            'required username="a" password="b";\n'
        )
        assert parse_properties(text).sasl_username == "a"

    def test_env_reference_in_jaas(self) -> None:
        text = (
            "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-256\n"
            "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
            'username="${env:KUSER}" password="${env:KPASS}";\n'
        )
        s = parse_properties(text, environ={"KUSER": "alice", "KPASS": SECRET})
        assert s.sasl_username == "alice"
        assert s.sasl_password == Secret(SECRET)

    @pytest.mark.parametrize(
        ("jaas", "expected"),
        [
            ('org.apache.kafka.common.security.plain.PlainLoginModule required username="a" password="'
             + SECRET, "unterminated"),
            ('org.apache.kafka.common.security.plain.PlainLoginModule required username="a" password="'
             + SECRET + '"', "missing ';'"),
            ('org.apache.kafka.common.security.plain.PlainLoginModule maybe password="' + SECRET + '";',
             "control flag"),
            ('com.example.' + SECRET + ' required password="' + SECRET + '";', "unsupported login module"),
            ('org.apache.kafka.common.security.plain.PlainLoginModule required password="' + SECRET + '";',
             'no username="..." option'),
            ('org.apache.kafka.common.security.plain.PlainLoginModule required username="a";',
             'no password="..." option'),
            ('org.apache.kafka.common.security.plain.PlainLoginModule required password ' + SECRET + ';',
             "key=\"value\" pairs"),
            ('org.apache.kafka.common.security.plain.PlainLoginModule required username="a" password="'
             + SECRET + '"; other.Module required;', "exactly one login module"),
            (SECRET, "expected '<LoginModule class>"),
        ],
    )
    def test_jaas_errors_never_echo_values(self, jaas: str, expected: str) -> None:
        text = f"security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.jaas.config={jaas}\n"
        with pytest.raises(SecurityConfigError) as info:
            parse_properties(text, source="cp")
        message = str(info.value)
        assert expected in message
        assert message.startswith("cp:3:")
        assert_clean(message)

    def test_scram_module_needs_mechanism(self) -> None:
        text = (
            "security.protocol=SASL_SSL\n"
            "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
            'username="a" password="' + SECRET + '";\n'
        )
        with pytest.raises(SecurityConfigError, match="SCRAM-SHA-256 or sasl.mechanism=SCRAM-SHA-512") as info:
            parse_properties(text)
        assert_clean(str(info.value))

    def test_mechanism_module_mismatch(self) -> None:
        text = (
            "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
            "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
            'username="a" password="' + SECRET + '";\n'
        )
        with pytest.raises(SecurityConfigError, match=r"<string>:2: .*does not match the login module") as info:
            parse_properties(text)
        assert_clean(str(info.value))

    def test_unsupported_mechanism(self) -> None:
        with pytest.raises(SecurityConfigError, match="GSSAPI.* is not supported"):
            parse_properties("security.protocol=SASL_SSL\nsasl.mechanism=GSSAPI\n")

    def test_missing_mechanism(self) -> None:
        with pytest.raises(SecurityConfigError, match="needs a SASL mechanism"):
            parse_properties("security.protocol=SASL_SSL\n")

    def test_validation_errors_use_property_names(self) -> None:
        with pytest.raises(SecurityConfigError, match=r"needs a SASL mechanism \(sasl\.mechanism, one of"):
            parse_properties("security.protocol=SASL_SSL\n")
        with pytest.raises(SecurityConfigError, match=r"TLS settings \(ssl\.truststore\.location\)"):
            parse_properties("ssl.ca.location=/ca.pem\n")

    def test_jaas_and_plain_keys_conflict(self) -> None:
        text = (
            "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.username=a\n"
            "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
            'username="a" password="' + SECRET + '";\n'
        )
        with pytest.raises(SecurityConfigError, match="not both") as info:
            parse_properties(text)
        assert_clean(str(info.value))

    def test_oauthbearer_static_token(self) -> None:
        text = (
            "security.protocol=SASL_SSL\nsasl.mechanism=OAUTHBEARER\n"
            "sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;\n"
            "sasl.oauthbearer.token=" + TOKEN + "\n"
        )
        s = parse_properties(text)
        assert s.sasl_mechanism == "OAUTHBEARER"
        assert s.sasl_oauth_token == Secret(TOKEN)
        assert_clean(repr(s))

    def test_oauthbearer_token_from_env(self) -> None:
        text = (
            "security.protocol=SASL_SSL\n"
            "sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required ;\n"
            "sasl.oauthbearer.token=${env:KAFKA_TOKEN}\n"
        )
        s = parse_properties(text, environ={"KAFKA_TOKEN": TOKEN})
        assert s.sasl_mechanism == "OAUTHBEARER"
        assert s.sasl_oauth_token == Secret(TOKEN)

    def test_missing_env_var(self) -> None:
        text = "security.protocol=SASL_SSL\nsasl.mechanism=OAUTHBEARER\nsasl.oauthbearer.token=${env:NOPE_TOKEN}\n"
        with pytest.raises(SecurityConfigError, match=r"<string>:3: .*NOPE_TOKEN, which is not set"):
            parse_properties(text, environ={})

    def test_oauthbearer_token_file(self, tmp_path: Path) -> None:
        token_file = tmp_path / "token"
        token_file.write_text(TOKEN + "\n")
        text = f"security.protocol=SASL_SSL\nsasl.mechanism=OAUTHBEARER\nsasl.oauthbearer.token.file={token_file}\n"
        s = parse_properties(text)
        assert isinstance(s.oauth_token_provider, FileTokenProvider)
        assert s.oauth_token_provider() == TOKEN
        token_file.write_text("rotated")
        assert s.oauth_token_provider() == "rotated"

    def test_oauthbearer_without_token(self) -> None:
        with pytest.raises(SecurityConfigError, match="OAUTHBEARER needs a token"):
            parse_properties("security.protocol=SASL_SSL\nsasl.mechanism=OAUTHBEARER\n")

    def test_sasl_keys_with_non_sasl_protocol(self) -> None:
        text = (
            "security.protocol=SSL\nsasl.mechanism=PLAIN\n"
            "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
            'username="a" password="' + SECRET + '";\n'
        )
        with pytest.raises(SecurityConfigError, match="SASL settings") as info:
            parse_properties(text)
        assert_clean(str(info.value))

    def test_bad_protocol_names_line(self) -> None:
        with pytest.raises(SecurityConfigError, match=r"cp:2: security.protocol='SASL_TLS' is not one of"):
            parse_properties("client.id=x\nsecurity.protocol=sasl_tls\n", source="cp")


class TestLoadProperties:
    def test_from_file(self, tmp_path: Path) -> None:
        path = tmp_path / "client.properties"
        path.write_text(
            "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-256\n"
            "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
            'username="alice" password="' + SECRET + '";\n'
            "ssl.endpoint.identification.algorithm=\n"
        )
        s = load_properties(path)
        assert s.sasl_password == Secret(SECRET)
        assert s.ssl_check_hostname is False

    def test_error_names_file_and_line(self, tmp_path: Path) -> None:
        path = tmp_path / "client.properties"
        path.write_text("# header\nsecurity.protocol=SSL\nssl.key.password=" + SECRET + "\\uZZZZ\n")
        with pytest.raises(SecurityConfigError) as info:
            load_properties(path)
        assert f"{path}:3" in str(info.value)
        assert_clean(str(info.value))

    def test_missing_file(self, tmp_path: Path) -> None:
        with pytest.raises(SecurityConfigError, match="cannot read .*nope.properties"):
            load_properties(tmp_path / "nope.properties")

    def test_latin1_file(self, tmp_path: Path) -> None:
        path = tmp_path / "client.properties"
        path.write_bytes("client.id=caf\xe9\n".encode("latin-1"))
        assert load_properties(path).client_id == "caf\xe9"


# --------------------------------------------------------------------------- redaction


class TestRedact:
    def test_replaces_all_secrets(self) -> None:
        s = SecuritySettings(
            protocol="SASL_SSL",
            ssl_certfile="/c.pem",
            ssl_key_password=Secret("keypass"),
            sasl_mechanism="PLAIN",
            sasl_username="alice",
            sasl_password=Secret(SECRET),
        )
        text = f"pw={SECRET} again {SECRET}, key=keypass, user=alice"
        assert redact(text, s) == "pw=*** again ***, key=***, user=alice"

    def test_longest_first_and_extra(self) -> None:
        s = plain_settings(password="abc")
        assert redact("abcdef abc xyz", s, ["abcdef", Secret("xyz")]) == "*** *** ***"

    def test_nothing_to_redact(self) -> None:
        assert redact("hello", SecuritySettings()) == "hello"
        assert redact("hello", None, [""]) == "hello"

    def test_logging_filter(self, caplog: pytest.LogCaptureFixture) -> None:
        logger = logging.getLogger("kafkaops.test.redact")
        log_filter = RedactingFilter(plain_settings())
        logger.addFilter(log_filter)
        try:
            with caplog.at_level(logging.DEBUG, logger="kafkaops.test.redact"):
                logger.debug("connecting with password %s", SECRET)
                logger.info("nothing secret here: %d", 42)
        finally:
            logger.removeFilter(log_filter)
        assert "connecting with password ***" in caplog.text
        assert "nothing secret here: 42" in caplog.text
        assert_clean(caplog.text)


# --------------------------------------------------------------------------- SASL via the double


Send = Callable[[int, dict[str, Any]], Awaitable[Any]]


class Wire:
    """Connects sasl_authenticate to a SaslSessionDouble through real kio framing."""

    def __init__(self, session: SaslSessionDouble, authenticate_version: int = 2) -> None:
        self.session = session
        self.versions = {17: 1, 36: authenticate_version}
        self.correlation_id = 0
        self.calls: list[int] = []
        self.tamper: Callable[[Any], Any] | None = None

    async def send(self, api_key: int, data: dict[str, Any]) -> Any:
        version = self.versions[api_key]
        self.correlation_id += 1
        self.calls.append(api_key)
        request = build(request_class(api_key, version), data)
        frame = encode_request(request, self.correlation_id, "kafkaops")
        decoded = decode_request(frame[4:])
        assert (decoded.api_key, decoded.api_version) == (api_key, version)
        assert decoded.client_id == "kafkaops"
        response = self.session.handle(decoded.api_key, decoded.api_version, decoded.body)
        if self.tamper is not None:
            response = self.tamper(response)
        raw = encode_response(response, decoded.correlation_id)
        assert peek_correlation_id(raw[4:]) == self.correlation_id
        await asyncio.sleep(0)
        return decode_response(raw[4:], api_key, version)


@pytest.fixture
def server() -> SaslServerDouble:
    return SaslServerDouble(USERS, tokens={TOKEN})


@pytest.fixture(autouse=True)
def debug_logs(caplog: pytest.LogCaptureFixture) -> Any:
    """Capture every log at DEBUG and check no secret was ever logged."""
    caplog.set_level(logging.DEBUG)
    yield
    assert_clean(caplog.text)


def test_debug_logging_is_captured(caplog: pytest.LogCaptureFixture) -> None:
    logging.getLogger("kafkaops.kafka.security").debug("probe")
    assert "probe" in caplog.text


class TestSaslClient:
    @pytest.mark.parametrize("version", [0, 1, 2])
    @pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
    async def test_password_mechanisms(
        self, server: SaslServerDouble, mechanism: str, version: int, caplog: pytest.LogCaptureFixture
    ) -> None:
        session = server.new_session()
        wire = Wire(session, version)
        await sasl_authenticate(wire.send, plain_settings(mechanism))
        assert session.authenticated
        assert session.principal == "User:alice"
        assert session.mechanism == mechanism
        assert session.permits(3)
        expected_rounds = 1 if mechanism == "PLAIN" else 2
        assert wire.calls == [17] + [36] * expected_rounds
        assert f"SASL {mechanism} authentication succeeded as alice" in caplog.text

    async def test_scram_special_characters_in_username(self) -> None:
        server = SaslServerDouble({"we,ird=name": "pässwörd ok"})
        session = server.new_session()
        settings = SecuritySettings(
            protocol="SASL_SSL",
            sasl_mechanism="SCRAM-SHA-256",
            sasl_username="we,ird=name",
            sasl_password=Secret("pässwörd ok"),
        )
        await sasl_authenticate(Wire(session).send, settings)
        assert session.principal == "User:we,ird=name"

    @pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
    async def test_wrong_password(self, mechanism: str) -> None:
        server = SaslServerDouble({"alice": "the-real-one"})
        session = server.new_session()
        with pytest.raises(AuthenticationFailed) as info:
            await sasl_authenticate(Wire(session).send, plain_settings(mechanism))
        message = str(info.value)
        assert "SASL_AUTHENTICATION_FAILED" in message
        assert f"SASL {mechanism} authentication for user alice failed" in message
        assert_clean(message, repr(info.value))
        assert "the-real-one" not in message
        assert session.failed and not session.authenticated
        assert not session.permits(3)
        assert not session.permits(18)

    @pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
    async def test_unknown_user(self, mechanism: str) -> None:
        session = SaslServerDouble(USERS).new_session()
        settings = SecuritySettings(
            protocol="SASL_SSL", sasl_mechanism=mechanism,  # type: ignore[arg-type]
            sasl_username="mallory", sasl_password=Secret(SECRET),
        )
        with pytest.raises(AuthenticationFailed) as info:
            await sasl_authenticate(Wire(session).send, settings)
        assert "mallory" in str(info.value)
        assert_clean(str(info.value))

    async def test_broker_message_echoing_password_is_redacted(self, server: SaslServerDouble) -> None:
        session = server.new_session()
        wire = Wire(session)

        def leaky(response: Any) -> Any:
            if response.__api_key__ == 36:
                return build(type(response), {
                    "error_code": ErrorCode.sasl_authentication_failed,
                    "error_message": f"bad password {SECRET}",
                    "auth_bytes": b"",
                })
            return response

        wire.tamper = leaky
        with pytest.raises(AuthenticationFailed) as info:
            await sasl_authenticate(wire.send, plain_settings())
        assert "bad password ***" in str(info.value)
        assert_clean(str(info.value))

    async def test_scram_bad_server_signature(self, server: SaslServerDouble) -> None:
        session = server.new_session()
        wire = Wire(session)
        rounds = 0

        def forge(response: Any) -> Any:
            nonlocal rounds
            if response.__api_key__ == 36:
                rounds += 1
                if rounds == 2:
                    return build(type(response), {
                        "error_code": ErrorCode.none, "error_message": None,
                        "auth_bytes": b"v=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
                    })
            return response

        wire.tamper = forge
        with pytest.raises(AuthenticationFailed, match="SCRAM exchange rejected") as info:
            await sasl_authenticate(wire.send, plain_settings("SCRAM-SHA-256"))
        assert_clean(str(info.value))

    async def test_unsupported_mechanism_names_mechanisms(self) -> None:
        server = SaslServerDouble(USERS, mechanisms=("SCRAM-SHA-512", "PLAIN"))
        session = server.new_session()
        with pytest.raises(AuthenticationFailed) as info:
            await sasl_authenticate(Wire(session).send, plain_settings("SCRAM-SHA-256"))
        message = str(info.value)
        assert "SCRAM-SHA-256" in message
        assert "enabled mechanisms: SCRAM-SHA-512, PLAIN" in message
        assert_clean(message)
        assert session.failed

    async def test_oauthbearer_static_token(self, server: SaslServerDouble) -> None:
        session = server.new_session()
        await sasl_authenticate(Wire(session).send, oauth_settings())
        assert session.authenticated
        assert session.principal == "User:oauth-client"

    @pytest.mark.parametrize("is_async", [False, True])
    async def test_oauthbearer_provider(self, is_async: bool) -> None:
        server = SaslServerDouble({}, tokens={TOKEN: "svc-reconciler"})
        calls = 0

        def sync_provider() -> str:
            nonlocal calls
            calls += 1
            return TOKEN

        async def async_provider() -> str:
            return sync_provider()

        provider = async_provider if is_async else sync_provider
        session = server.new_session()
        await sasl_authenticate(Wire(session).send, oauth_settings(token=None, provider=provider))
        assert calls == 1
        assert session.principal == "User:svc-reconciler"

    async def test_oauthbearer_invalid_token(self, server: SaslServerDouble) -> None:
        session = server.new_session()
        wire = Wire(session)
        bad = "bad-" + TOKEN
        with pytest.raises(AuthenticationFailed) as info:
            await sasl_authenticate(wire.send, oauth_settings(token=None, provider=lambda: bad))
        message = str(info.value)
        assert "invalid_token" in message
        assert "SASL_AUTHENTICATION_FAILED" in message
        assert bad not in message
        assert_clean(message)
        assert wire.calls == [17, 36, 36]  # error challenge acknowledged with %x01
        assert session.failed

    async def test_oauthbearer_provider_failure_is_wrapped(self, server: SaslServerDouble) -> None:
        async def broken() -> str:
            raise RuntimeError("token endpoint unreachable")

        with pytest.raises(AuthenticationFailed, match="token provider failed: RuntimeError: token endpoint"):
            await sasl_authenticate(Wire(server.new_session()).send, oauth_settings(None, broken))

    async def test_oauthbearer_token_file_missing(self, server: SaslServerDouble, tmp_path: Path) -> None:
        provider = FileTokenProvider(str(tmp_path / "absent"))
        with pytest.raises(AuthenticationFailed, match="cannot read OAUTHBEARER token file"):
            await sasl_authenticate(Wire(server.new_session()).send, oauth_settings(None, provider))

    async def test_oauthbearer_provider_returns_nothing(self, server: SaslServerDouble) -> None:
        with pytest.raises(AuthenticationFailed, match="returned no token"):
            await sasl_authenticate(Wire(server.new_session()).send, oauth_settings(None, lambda: ""))

    async def test_not_a_sasl_protocol(self, server: SaslServerDouble) -> None:
        with pytest.raises(SecurityConfigError, match="does not use SASL"):
            await sasl_authenticate(Wire(server.new_session()).send, SecuritySettings(protocol="SSL"))

    async def test_exception_text_from_every_failure_is_clean(self, caplog: pytest.LogCaptureFixture) -> None:
        server = SaslServerDouble({"alice": "x"}, mechanisms=("PLAIN", "SCRAM-SHA-256"))
        failures = [
            plain_settings("PLAIN"),
            plain_settings("SCRAM-SHA-256"),
            plain_settings("SCRAM-SHA-512"),
            oauth_settings(),
        ]
        for settings in failures:
            with pytest.raises(AuthenticationFailed) as info:
                await sasl_authenticate(Wire(server.new_session()).send, settings)
            assert_clean(str(info.value), repr(info.value), repr(info.value.args))
        assert_clean(caplog.text)


class TestSaslServerDouble:
    def authenticate_request(self, data: bytes, version: int = 2) -> Any:
        return build(request_class(36, version), {"auth_bytes": data})

    def handshake_request(self, mechanism: str) -> Any:
        return build(request_class(17, 1), {"mechanism": mechanism})

    def test_authenticate_before_handshake_is_illegal(self, server: SaslServerDouble) -> None:
        session = server.new_session()
        assert session.permits(17) and session.permits(18) and session.permits(36)
        assert not session.permits(3)
        response = session.handle(36, 2, self.authenticate_request(b"\0alice\0" + SECRET.encode()))
        assert response.error_code == ErrorCode.illegal_sasl_state
        assert response.error_message
        assert session.failed

    def test_second_handshake_mid_exchange_is_illegal(self, server: SaslServerDouble) -> None:
        session = server.new_session()
        assert session.handle(17, 1, self.handshake_request("PLAIN")).error_code == ErrorCode.none
        response = session.handle(17, 1, self.handshake_request("PLAIN"))
        assert response.error_code == ErrorCode.illegal_sasl_state
        assert set(response.mechanisms) == set(server.mechanisms)

    def test_reauthentication_after_success(self, server: SaslServerDouble) -> None:
        session = server.new_session()
        session.handle(17, 1, self.handshake_request("PLAIN"))
        session.handle(36, 2, self.authenticate_request(b"\0alice\0" + SECRET.encode()))
        assert session.authenticated
        assert session.handle(17, 1, self.handshake_request("PLAIN")).error_code == ErrorCode.none
        response = session.handle(36, 2, self.authenticate_request(b"alice\0alice\0" + SECRET.encode()))
        assert response.error_code == ErrorCode.none
        assert session.authenticated
        # Any further SaslAuthenticate without a new handshake is illegal.
        again = session.handle(36, 2, self.authenticate_request(b"\0alice\0" + SECRET.encode()))
        assert again.error_code == ErrorCode.illegal_sasl_state

    @pytest.mark.parametrize(
        "data",
        [b"alice" + SECRET.encode(), b"\0\0" + SECRET.encode(), b"mallory\0alice\0" + SECRET.encode()],
    )
    def test_malformed_plain(self, server: SaslServerDouble, data: bytes) -> None:
        session = server.new_session()
        session.handle(17, 1, self.handshake_request("PLAIN"))
        response = session.handle(36, 1, self.authenticate_request(data, 1))
        assert response.error_code == ErrorCode.sasl_authentication_failed
        assert_clean(response.error_message)

    @pytest.mark.parametrize(
        "data", [b"garbage", b"n,,\x01auth=Basic abc\x01\x01", b"n,,\x01auth=Bearer x\x01", b"\xff\x01\x01"]
    )
    def test_malformed_oauthbearer(self, server: SaslServerDouble, data: bytes) -> None:
        session = server.new_session()
        session.handle(17, 1, self.handshake_request("OAUTHBEARER"))
        response = session.handle(36, 0, self.authenticate_request(data, 0))
        assert response.error_code == ErrorCode.sasl_authentication_failed

    def test_rejects_other_apis(self, server: SaslServerDouble) -> None:
        with pytest.raises(ValueError):
            server.new_session().handle(3, 12, None)

    def test_scram_credentials_cached(self, server: SaslServerDouble) -> None:
        first = server.scram_credentials("SCRAM-SHA-256", "alice")
        assert server.scram_credentials("SCRAM-SHA-256", "alice") is first
        with pytest.raises(KeyError):
            server.scram_credentials("SCRAM-SHA-256", "nobody")


# --------------------------------------------------------------------------- TLS


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A test CA, a server cert for localhost, and a client cert with an encrypted key."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl CLI not available: cannot generate test certificates")
    d = tmp_path_factory.mktemp("pki")

    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)

    ec = ("-pkeyopt", "ec_paramgen_curve:P-256")
    for ca in ("ca", "other-ca"):
        run("req", "-x509", "-newkey", "ec", *ec, "-nodes", "-keyout", f"{ca}.key", "-out", f"{ca}.pem",
            "-days", "2", "-subj", f"/CN=kafkaops-{ca}",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    (d / "server.ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n")
    run("genpkey", "-algorithm", "EC", *ec, "-out", "server.key")
    run("req", "-new", "-key", "server.key", "-subj", "/CN=localhost", "-out", "server.csr")
    run("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
        "-out", "server.pem", "-days", "2", "-extfile", "server.ext")
    run("genpkey", "-algorithm", "EC", *ec, "-aes-256-cbc", "-pass", f"pass:{SECRET}", "-out", "client.key")
    run("req", "-new", "-key", "client.key", "-passin", f"pass:{SECRET}", "-subj", "/CN=client", "-out", "client.csr")
    run("x509", "-req", "-in", "client.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
        "-out", "client.pem", "-days", "2")
    (d / "client-bundle.pem").write_text((d / "client.pem").read_text() + (d / "client.key").read_text())
    return d


def tls_settings(pki: Path, *, ca: str = "ca.pem", check_hostname: bool = True, **extra: Any) -> SecuritySettings:
    return SecuritySettings(
        protocol="SSL", ssl_cafile=str(pki / ca), ssl_check_hostname=check_hostname, **extra
    )


def client_cert_settings(pki: Path, password: str | None = SECRET, bundle: bool = False) -> SecuritySettings:
    if bundle:
        files = {"ssl_certfile": str(pki / "client-bundle.pem")}
    else:
        files = {"ssl_certfile": str(pki / "client.pem"), "ssl_keyfile": str(pki / "client.key")}
    return tls_settings(pki, ssl_key_password=Secret(password) if password is not None else None, **files)


async def tls_roundtrip(pki: Path, context: ssl.SSLContext, server_hostname: str, mutual: bool = False) -> bytes:
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(pki / "server.pem", pki / "server.key")
    if mutual:
        server_ctx.load_verify_locations(pki / "ca.pem")
        server_ctx.verify_mode = ssl.CERT_REQUIRED

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            data = await reader.read(4)
            writer.write(data.upper())
            await writer.drain()
        except (ssl.SSLError, ConnectionError):
            pass
        finally:
            writer.close()

    srv = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=server_ctx)
    port = srv.sockets[0].getsockname()[1]
    try:
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", port, ssl=context, server_hostname=server_hostname
        )
        writer.write(b"ping")
        await writer.drain()
        reply = await asyncio.wait_for(reader.read(4), 5)
        writer.close()
        return reply
    finally:
        srv.close()
        await srv.wait_closed()


class TestSslContext:
    def test_none_without_tls(self) -> None:
        assert ssl_context(SecuritySettings()) is None
        assert ssl_context(plain_settings().__class__(
            protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN", sasl_username="a", sasl_password=Secret("b")
        )) is None

    def test_system_defaults_without_ca(self) -> None:
        context = ssl_context(SecuritySettings(protocol="SSL"))
        assert context is not None
        assert context.verify_mode == ssl.CERT_REQUIRED
        assert context.check_hostname is True

    @pytest.mark.parametrize("check_hostname", [True, False])
    def test_loads_ca_and_honours_check_hostname(self, pki: Path, check_hostname: bool) -> None:
        context = ssl_context(tls_settings(pki, check_hostname=check_hostname))
        assert context is not None
        assert context.check_hostname is check_hostname
        assert context.verify_mode == ssl.CERT_REQUIRED
        assert context.minimum_version >= ssl.TLSVersion.TLSv1_2
        assert any("kafkaops-ca" in str(c.get("subject")) for c in context.get_ca_certs())

    @pytest.mark.parametrize("bundle", [False, True])
    def test_loads_client_cert_with_encrypted_key(self, pki: Path, bundle: bool) -> None:
        assert ssl_context(client_cert_settings(pki, bundle=bundle)) is not None

    @pytest.mark.parametrize("password", ["wrong-password", None])
    def test_bad_key_password(self, pki: Path, password: str | None) -> None:
        with pytest.raises(SecurityConfigError, match="cannot load client certificate") as info:
            ssl_context(client_cert_settings(pki, password=password))
        assert_clean(str(info.value))
        assert "wrong-password" not in str(info.value)

    def test_missing_ca_file(self, tmp_path: Path) -> None:
        with pytest.raises(SecurityConfigError, match="cannot load CA bundle .*missing.pem"):
            ssl_context(SecuritySettings(protocol="SSL", ssl_cafile=str(tmp_path / "missing.pem")))

    def test_from_properties(self, pki: Path) -> None:
        text = (
            "security.protocol=SSL\n"
            f"ssl.truststore.type=PEM\nssl.truststore.location={pki / 'ca.pem'}\n"
            f"ssl.keystore.type=PEM\nssl.keystore.location={pki / 'client-bundle.pem'}\n"
            f"ssl.key.password={SECRET}\n"
            "ssl.endpoint.identification.algorithm=\n"
        )
        context = ssl_context(parse_properties(text))
        assert context is not None and context.check_hostname is False

    async def test_handshake_verifies_hostname(self, pki: Path) -> None:
        context = ssl_context(tls_settings(pki))
        assert context is not None
        assert await tls_roundtrip(pki, context, "localhost") == b"PING"
        with pytest.raises(ssl.SSLCertVerificationError, match="Hostname mismatch|match"):
            await tls_roundtrip(pki, context, "wrong.example")

    async def test_no_hostname_check_still_verifies_chain(self, pki: Path) -> None:
        context = ssl_context(tls_settings(pki, check_hostname=False))
        assert context is not None
        assert await tls_roundtrip(pki, context, "wrong.example") == b"PING"
        untrusting = ssl_context(tls_settings(pki, ca="other-ca.pem", check_hostname=False))
        assert untrusting is not None
        with pytest.raises(ssl.SSLCertVerificationError):
            await tls_roundtrip(pki, untrusting, "localhost")

    async def test_mutual_tls(self, pki: Path) -> None:
        context = ssl_context(client_cert_settings(pki))
        assert context is not None
        assert await tls_roundtrip(pki, context, "localhost", mutual=True) == b"PING"
