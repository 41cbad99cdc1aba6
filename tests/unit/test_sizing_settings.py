"""Request sizing by metadata records, dedupe, and the settings object."""

import pytest

from kafkaops.kafka.models import NewTopic
from kafkaops.kafka.settings import ClientSettings, parse_bootstrap
from kafkaops.kafka.sizing import dedupe, split_by_records, topic_records


def test_dedupe_keeps_the_last_item_for_a_key():
    result = dedupe([("a", 1), ("b", 2), ("a", 3)])
    assert result == {"b": 2, "a": 3}
    assert list(result) == ["b", "a"]


def test_topic_records_count_topic_partitions_and_configs():
    assert topic_records(NewTopic("t", 3, 1, {"a": "1", "b": "2"})) == 6
    assert topic_records(NewTopic("t")) == 2  # broker default partitions count as one
    assert topic_records(NewTopic("t", replica_assignment=[[1], [2], [3], [1]])) == 5


def test_split_respects_the_record_budget_and_keeps_order():
    items = {f"t{i}": NewTopic(f"t{i}", 99, 1) for i in range(250)}  # 100 records each
    chunks = split_by_records(items, topic_records, 10_000)
    assert [len(c) for c in chunks] == [100, 100, 50]
    assert [k for c in chunks for k in c] == list(items)
    assert all(sum(topic_records(t) for t in c.values()) <= 10_000 for c in chunks)


def test_an_item_over_the_budget_travels_alone():
    items = {"small": NewTopic("small", 1, 1), "huge": NewTopic("huge", 20_000, 1), "after": NewTopic("after", 1, 1)}
    chunks = split_by_records(items, topic_records, 10_000)
    assert [list(c) for c in chunks] == [["small"], ["huge"], ["after"]]


def test_bootstrap_parsing():
    assert parse_bootstrap("a:1, b:2") == (("a", 1), ("b", 2))
    assert parse_bootstrap(["[::1]:9092"]) == (("::1", 9092),)
    for bad in ["", "host", "host:0", "host:x", ":9092"]:
        with pytest.raises(ValueError):
            parse_bootstrap(bad)


def test_settings_validate_their_values():
    settings = ClientSettings.create("127.0.0.1:9092", linger=0.01)
    assert settings.linger == 0.01 and settings.bootstrap == (("127.0.0.1", 9092),)
    with pytest.raises(ValueError):
        ClientSettings.create("127.0.0.1:9092", linger=5)
    with pytest.raises(ValueError):
        ClientSettings.create("127.0.0.1:9092", max_in_flight=0)
