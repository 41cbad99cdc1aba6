"""Framing on kio: requests and responses survive a round trip at several versions."""

import datetime

import pytest

from kafkaops.kafka import wire
from kafkaops.kafka.apis import Api


@pytest.mark.parametrize("version", [2, 5, 7])
def test_create_topics_request_round_trip(version):
    request = wire.build(
        wire.request_class(Api.CREATE_TOPICS, version),
        {
            "topics": [
                {"name": "orders", "num_partitions": 3, "replication_factor": 1, "assignments": [], "configs": [{"name": "retention.ms", "value": "1"}]}
            ],
            "timeout": datetime.timedelta(seconds=5),
            "validate_only": True,
            "field_this_version_lacks": 1,
        },
    )
    frame = wire.encode_request(request, 42, "kafkaops")
    assert wire.read_size(frame[:4]) == len(frame) - 4
    decoded = wire.decode_request(frame[4:])
    assert (decoded.api_key, decoded.api_version, decoded.correlation_id, decoded.client_id) == (19, version, 42, "kafkaops")
    assert decoded.body == request


def test_response_round_trip_uses_header_v0_for_api_versions():
    cls = wire.response_class(Api.API_VERSIONS, 3)
    response = wire.build(cls, {"error_code": 0, "api_keys": [{"api_key": 3, "min_version": 0, "max_version": 12}], "throttle_time": datetime.timedelta(0)})
    frame = wire.encode_response(response, 7)
    assert wire.peek_correlation_id(frame[4:]) == 7
    assert wire.decode_response(frame[4:], Api.API_VERSIONS, 3) == response


def test_garbage_response_is_a_frame_error():
    with pytest.raises(wire.FrameError):
        wire.decode_response(b"\x00\x00\x00\x01\xff", Api.METADATA, 12)


def test_unknown_request_version_decodes_without_body():
    frame = wire.encode_request(wire.build(wire.request_class(Api.API_VERSIONS, 0), {}), 1, None)
    payload = bytearray(frame[4:])
    payload[2:4] = (99).to_bytes(2, "big")  # ApiVersions v99
    decoded = wire.decode_request(bytes(payload))
    assert decoded.api_key == 18 and decoded.api_version == 99 and decoded.body is None
