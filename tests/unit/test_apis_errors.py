"""Version choice (KIP-35) and error mapping."""

import pytest

from kafkaops.kafka.apis import CLIENT_RANGES, Api, choose_version
from kafkaops.kafka.errors import KafkaError, UnsupportedFeature


def test_highest_common_version_is_chosen():
    assert choose_version(Api.CREATE_TOPICS, {19: (0, 4)}) == 4
    assert choose_version(Api.CREATE_TOPICS, {19: (0, 99)}) == CLIENT_RANGES[Api.CREATE_TOPICS][1]
    assert choose_version(Api.METADATA, {3: (5, 9)}) == 9


def test_missing_api_names_the_api_and_broker():
    with pytest.raises(UnsupportedFeature) as info:
        choose_version(Api.ALTER_PARTITION_REASSIGNMENTS, {19: (0, 7)}, broker_id=3)
    error = info.value
    assert error.api == "AlterPartitionReassignments" and error.api_key == 45 and error.broker_range is None
    assert "broker 3" in str(error) and "AlterPartitionReassignments" in str(error)
    assert error.as_kafka_error().name == "UNSUPPORTED_VERSION"


def test_disjoint_ranges_report_both_ranges():
    with pytest.raises(UnsupportedFeature) as info:
        choose_version(Api.CREATE_TOPICS, {19: (0, 1)}, broker_id=1)
    assert info.value.broker_range == (0, 1)
    assert "versions 0-1" in str(info.value) and "2-7" in str(info.value)


def test_error_codes_map_to_typed_errors():
    assert KafkaError.from_code(0) is None
    error = KafkaError.from_code(41, "moved")
    assert error == KafkaError(41, "NOT_CONTROLLER", "moved", True)
    assert KafkaError.from_code(36).name == "TOPIC_ALREADY_EXISTS"
    assert KafkaError.from_code(36).retriable is False
    unknown = KafkaError.from_code(31999)
    assert unknown.name == "UNKNOWN_ERROR_31999" and not unknown.retriable
    assert str(KafkaError.from_code(17, "bad name")) == "INVALID_TOPIC_EXCEPTION: bad name"


def test_results_answer_as_the_mapping_of_their_items():
    from kafkaops.kafka.errors import KafkaError
    from kafkaops.kafka.models import ItemResult, Results

    error = KafkaError(3, "UNKNOWN_TOPIC_OR_PARTITION", "", False)
    results = Results({"a": ItemResult(1), "b": ItemResult(None, error)})
    assert results.get("a") == ItemResult(1) and results.get("x") is None and results.get("x", ItemResult(0)) == ItemResult(0)
    assert "b" in results and "x" not in results and len(results) == 2
    assert list(results.keys()) == ["a", "b"] and list(results) == ["a", "b"]
    assert dict(results.items()) == {"a": ItemResult(1), "b": ItemResult(None, error)} == dict(results)
    assert list(results.values()) == [ItemResult(1), ItemResult(None, error)]
    assert results == {"a": ItemResult(1), "b": ItemResult(None, error)}
    assert results.failed() == {"b": error} and results.succeeded() == {"a": 1} and not results.all_ok
