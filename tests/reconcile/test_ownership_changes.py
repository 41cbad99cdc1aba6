"""ownership_changes (reconcile/engine.py): what an apply records as kafkaops' own keys, and for a
sensitive key the salted fingerprint of the value it set, never the value (the next plan compares
a declared secret with it, since Kafka never returns one)."""

from __future__ import annotations

from kafkaops.kafka import AlterConfigOp, AlterOp, ConfigResource, NewTopic
from kafkaops.reconcile.actions import Action, AlterConfigs, CreateTopic, ResourcePlan, StepResult
from kafkaops.reconcile.apply import Applied
from kafkaops.reconcile.configs import sensitive_keys
from kafkaops.reconcile.engine import ownership_changes
from kafkaops.reconcile.ownership import Ownership, fingerprint, fingerprint_matches
from kafkaops.resources.documents import Source

SECRET = "hunter2-topic-secret"


def _applied(owner: str, keys: set[str], *steps) -> Applied:
    plan = ResourcePlan(Source("m.yaml", 1, "KafkaTopic", None, owner), "KafkaTopic", owner, Action.CREATE,
                        steps=tuple(steps), owner=owner, owned_keys=frozenset(keys))
    return Applied(plan, tuple(StepResult.ok(step) for step in steps))


def test_a_created_topic_records_its_keys_and_a_fingerprint_of_its_secret():
    create = CreateTopic(NewTopic("t", 3, 1, {"retention.ms": "1000", "custom.secret": SECRET}))
    changes = ownership_changes(Ownership(), [_applied("topic/t", {"retention.ms", "custom.secret"}, create)])
    entry = changes["topic/t"]
    assert entry["retention.ms"] is None  # a plain key: owned, no value kept
    assert entry["custom.secret"].startswith("scrypt$") and SECRET not in repr(changes)
    assert fingerprint_matches(SECRET, entry["custom.secret"])
    assert not fingerprint_matches("another value", entry["custom.secret"])


def test_a_broker_secret_set_is_fingerprinted_and_one_not_set_now_keeps_its_fingerprint():
    kept = fingerprint("set-last-time")
    old = Ownership({"broker/default": {"listener.name.a.ssl.key.password": kept, "ssl.truststore.password": None}})
    alter = AlterConfigs(ConfigResource.broker(), (AlterConfigOp("ssl.truststore.password", "new-trust"),
                                                      AlterConfigOp("log.retention.ms", "5", AlterOp.SET)))
    applied = _applied("broker/default", {"listener.name.a.ssl.key.password", "ssl.truststore.password",
                                          "log.retention.ms"}, alter)
    entry = ownership_changes(old, [applied])["broker/default"]
    assert fingerprint_matches("new-trust", entry["ssl.truststore.password"])
    assert entry["listener.name.a.ssl.key.password"] == kept  # not set by this apply: its fingerprint stays
    assert entry["log.retention.ms"] is None


def test_sensitive_keys_by_name():
    keys = frozenset({"retention.ms", "sasl.jaas.config", "ssl.key.password", "my.secret", "x.key", "cleanup.policy"})
    assert set(sensitive_keys(keys)) == {"sasl.jaas.config", "ssl.key.password", "my.secret", "x.key"}
    assert sensitive_keys(frozenset({"retention.ms"})) == ()
