"""Users and quotas as typed values: client-side SCRAM salting (checked against scramp's own
derivation), secrets kept out of reprs, quota entities, and kio encoding at every version."""

from __future__ import annotations

import pickle

import pytest
import scramp

from kafkaops.kafka import wire
from kafkaops.kafka.models import (
    QuotaAlteration,
    QuotaEntity,
    QuotaFilter,
    QuotaFilterComponent,
    ScramDeletion,
    ScramMechanism,
)
from kafkaops.kafka.principal_messages import encode_alter_quotas, encode_alter_scram, encode_describe_quotas, encode_describe_scram
from kafkaops.kafka.scram import MAX_ITERATIONS, scram_upsertion
from kafkaops.kafka.security import Secret
from kafkaops.testing.fake.principals import ScramCredentialDouble


@pytest.mark.parametrize("mechanism", [ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512])
def test_salted_password_gives_the_keys_scramp_derives(mechanism):
    salt = b"0123456789abcdef"
    up = scram_upsertion("alice", mechanism, Secret("pencil-Ü"), 4096, salt=salt)
    assert (up.salt, up.iterations) == (salt, 4096)
    scramp_salt, stored, server, iterations = scramp.ScramMechanism(mechanism.sasl_name).make_auth_info(
        "pencil-Ü", iteration_count=4096, salt=salt
    )
    assert ScramCredentialDouble(4096, salt, up.salted_password).keys(int(mechanism)) == (stored, server)


def test_each_upsertion_has_a_fresh_salt_and_hides_it():
    first, second = (scram_upsertion("bob", "scram-sha-512", "same-password") for _ in range(2))
    assert first.salt != second.salt and len(first.salt) == 32
    assert first.salted_password != second.salted_password
    for text in (repr(first), str(first), f"{first}"):
        assert text == "ScramUpsertion(user='bob', mechanism=SCRAM-SHA-512, iterations=4096)"
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(first)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("", "SCRAM-SHA-256", "pw"), "user must be a non-empty string"),
        (("carol", "SCRAM-SHA-1", "pw"), "SCRAM credential for user 'carol': mechanism: unknown SCRAM mechanism 'SCRAM-SHA-1'"),
        (("carol", "SCRAM-SHA-256", "pw", 4095), "iterations 4095 is outside Kafka's range 4096-16384"),
        (("carol", "SCRAM-SHA-256", "pw", MAX_ITERATIONS + 1), "iterations 16385 is outside"),
        (("carol", "SCRAM-SHA-256", ""), "password must not be empty"),
    ],
)
def test_bad_input_names_user_field_and_reason_never_the_password(args, message):
    with pytest.raises(ValueError) as raised:
        scram_upsertion(*args)
    assert message in str(raised.value)
    assert "pw" not in str(raised.value).replace("password", "")


def test_quota_entities_are_canonical_and_checked():
    assert QuotaEntity((("client-id", "app"), ("user", "u"))) == QuotaEntity.of(user="u", client_id="app")
    assert hash(QuotaEntity.of(user=None, client_id="a")) == hash(QuotaEntity((("client-id", "a"), ("user", None))))
    assert str(QuotaEntity.of(user=None, client_id="app")) == "user=<default>,client-id=app"
    entity = QuotaEntity.of(user="u")
    assert entity.has("user") and not entity.has("ip") and entity.name("user") == "u"
    for bad, reason in [
        ((), "needs at least one"),
        ((("group", "g"),), "unknown entity type 'group'"),
        ((("ip", "1.2.3.4"), ("user", "u")), "ip cannot be combined"),
        ((("user", ""),), "user must be a non-empty name"),
        ((("user", "a"), ("user", "b")), "appears twice"),
    ]:
        with pytest.raises(ValueError, match=reason):
            QuotaEntity(bad)
    with pytest.raises(ValueError, match="user=u: producer_byte_rate: expected a number or None"):
        QuotaAlteration(entity, {"producer_byte_rate": "10"})
    alteration = QuotaAlteration(entity, {"producer_byte_rate": 10, "consumer_byte_rate": None})
    assert alteration.ops == {"producer_byte_rate": 10.0, "consumer_byte_rate": None}
    assert hash(alteration) == hash(QuotaAlteration(entity, {"consumer_byte_rate": None, "producer_byte_rate": 10.0}))


@pytest.mark.parametrize(
    ("api", "versions", "payload"),
    [
        (50, (0,), encode_describe_scram(["a", "b"])),
        (50, (0,), encode_describe_scram(None)),
        (51, (0,), encode_alter_scram([scram_upsertion("a", "SCRAM-SHA-256", "pw"), ScramDeletion("b", ScramMechanism.SCRAM_SHA_512)])),
        (48, (0, 1), encode_describe_quotas(QuotaFilter((QuotaFilterComponent.exact("user", "a"), QuotaFilterComponent.default("client-id"))))),
        (49, (0, 1), encode_alter_quotas([QuotaAlteration(QuotaEntity.of(user=None), {"producer_byte_rate": 5, "request_percentage": None})], True)),
    ],
)
def test_payloads_encode_and_decode_at_every_version(api, versions, payload):
    for version in versions:
        request = wire.build(wire.request_class(api, version), payload)
        frame = wire.encode_request(request, 7, "test")
        decoded = wire.decode_request(frame[4:])
        assert decoded.body == request
