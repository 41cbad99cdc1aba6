"""The soak's invariants (bench/soak_invariants.py) catch each kind of divergence they name."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import soak_invariants as inv  # noqa: E402


def topic(name: str, partitions: int = 1, rf: int = 1, **config: str) -> dict[str, Any]:
    return {"kind": "KafkaTopic", "metadata": {"name": name, "namespace": "soak", "generation": 2},
            "spec": {"partitions": partitions, "replicationFactor": rf, "config": config},
            "status": {"observedGeneration": 2, "conditions": [{"type": "Ready", "status": "True"}]}}


def kafka(**topics: Any) -> dict[str, Any]:
    return {"topics": topics, "acls": [], "created": {n: 1 for n in topics}, "already_exists": {},
            "default_broker_configs": {}, "broker_configs": {}, "reassignments": []}


def held(replicas: list[list[int]], **configs: str) -> dict[str, Any]:
    return {"replicas": replicas, "configs": configs}


def names(found: list[inv.Divergence]) -> list[str]:
    return sorted(d.invariant for d in found)


def test_matching_state_holds() -> None:
    state = kafka(a=held([[1, 2]], **{"retention.ms": "5", "unowned.key": "x"}))
    assert inv.check_topics([topic("a", rf=2, **{"retention.ms": "5"})], state, inv.Expectation()) == []
    assert inv.check_settled([topic("a")]) == []


def test_each_topic_divergence_is_named() -> None:
    expect = inv.Expectation(deleted_topics={"kept": True, "gone": False}, ever_configured={"a": {"segment.bytes"}})
    state = kafka(a=held([[1], [2]], **{"segment.bytes": "9", "leader.replication.throttled.replicas": "0:1"}),
                  gone=held([[1]]), stray=held([[1]]))
    state["created"]["a"] = 2
    state["deleted"] = {"kept": 1}  # a DeleteTopics for a topic released under Retain
    found = inv.check_topics([topic("a", partitions=1, rf=2)], state, expect)
    assert names(found) == ["created-once", "delete-removes-topic", "kafka-matches-spec", "kafka-matches-spec",
                            "kafka-matches-spec", "no-unexpected-topics", "retain-keeps-topic", "throttles-removed"]


def test_a_retained_topic_that_was_never_created_is_no_divergence() -> None:
    """Released while its create was still in flight: nothing was deleted, nothing to keep."""
    expect = inv.Expectation(deleted_topics={"never": True})
    assert inv.check_topics([], kafka(), expect) == []


def test_not_ready_stale_and_wedged_resources_are_named() -> None:
    stale, wedged = topic("s"), topic("w")
    stale["status"]["observedGeneration"] = 1
    wedged["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert names(inv.check_settled([stale, wedged])) == ["no-wedged-deletion", "ready-at-generation"]


def test_acl_counts_and_deleted_principals() -> None:
    acl = {"kind": "KafkaAcl", "metadata": {"name": "x", "namespace": "soak"},
           "spec": {"principal": "User:x", "acls": [{"resource": {"type": "Topic", "name": "x."},
                                                     "operations": ["Read", "Write"]}]}}
    state = kafka()
    state["acls"] = [{"principal": "User:x"}, {"principal": "User:old"}]
    found = inv.check_acls([acl], state, inv.Expectation(deleted_principals={"User:old"}))
    assert names(found) == ["delete-removes-acls", "kafka-matches-spec"]


def test_deletions_over_the_cap_within_a_window_are_named() -> None:
    mine = {"a", "b", "c", "d"}
    spread = [(0.0, "a"), (5.0, "b"), (11.0, "c"), (17.0, "d"), (1.0, "other-cluster")]
    assert inv.check_deletion_cap(spread, mine, cap=2, window=10, until=100) == []
    burst = [(0.0, "a"), (2.0, "b"), (4.0, "c")]
    assert names(inv.check_deletion_cap(burst, mine, cap=2, window=10, until=100)) == ["deletion-cap"]
    assert inv.check_deletion_cap(burst, mine, cap=2, window=10, until=3.0) == [], "confirmed by a person at t=3"


def test_a_secret_in_a_log_event_or_status_is_named() -> None:
    texts = {"operator-0.log": "connected as soak", "events": "Applied", "status": "{'password': 'pw-2'}"}
    assert [d.resource for d in inv.check_secrets(texts, ["pw-1", "pw-2"])] == ["status"]
