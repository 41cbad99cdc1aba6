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
    found = inv.check_topics([topic("a", partitions=1, rf=2)], state, expect)
    assert names(found) == ["created-once", "delete-removes-topic", "kafka-matches-spec", "kafka-matches-spec",
                            "kafka-matches-spec", "no-unexpected-topics", "retain-keeps-topic", "throttles-removed"]


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
