"""plan() is pure: desired + observed (+ ownership) -> per-resource actions. Every rule here."""

from __future__ import annotations

from dataclasses import replace

from kafkaops.kafka import AlterOp, ConfigResource, ConfigSource, KafkaError
from kafkaops.kafka.errors import ErrorCode
from kafkaops.reconcile import Action, Ownership, PlanOptions, plan
from kafkaops.reconcile.actions import (
    AlterConfigs,
    ChangeReplicas,
    CreateAcls,
    CreatePartitions,
    CreateTopic,
    DeleteAcls,
    DeleteTopic,
)
from kafkaops.reconcile.configs import values_equal
from kafkaops.reconcile.observed import ObservedConfig
from kafkaops.reconcile.ownership import fingerprint
from kafkaops.resources.acl import AclBinding, AclOperation, AclPermission, PatternType, ResourceType

from engine_helpers import broker_config, desired, kafka_acl, kafka_cluster, observed, observed_topic, topic


def only(result):
    assert len(result.resources) == 1, result.resources
    return result.resources[0]


def ops_of(step: AlterConfigs) -> dict[str, tuple[AlterOp, str | None]]:
    return {op.name: (op.op, op.value) for op in step.ops}


# --- topics -----------------------------------------------------------------------------------


def test_missing_topic_is_created_with_its_configs() -> None:
    r = only(plan(desired(topic("orders", 6, 3, {"retention.ms": 1000})), observed()))
    assert r.action is Action.CREATE and r.problem is None
    (step,) = r.steps
    assert isinstance(step, CreateTopic)
    assert (step.topic.name, step.topic.partitions, step.topic.replication_factor) == ("orders", 6, 3)
    assert step.topic.configs == {"retention.ms": "1000"}
    assert "config.retention.ms: + 1000" in [str(c) for c in r.changes]


def test_omitted_partitions_use_broker_defaults() -> None:
    r = only(plan(desired(topic("orders", None, None)), observed()))
    assert (r.steps[0].topic.partitions, r.steps[0].topic.replication_factor) == (-1, -1)


def test_explicit_assignment_is_created_as_given() -> None:
    r = only(plan(desired(topic("orders", None, None, replicaAssignment=[[1, 2], [2, 3]])), observed()))
    assert r.steps[0].topic.replica_assignment == ((1, 2), (2, 3))


def test_topic_as_declared_needs_nothing() -> None:
    state = observed(observed_topic("orders", 3, 1, overrides={"retention.ms": "1000"}))
    r = only(plan(desired(topic("orders", 3, 1, {"retention.ms": 1000})), state))
    assert r.action is Action.NONE and r.steps == () and not r.pending


def test_changed_config_shows_old_and_new() -> None:
    state = observed(observed_topic("orders", overrides={"retention.ms": "1000"}))
    r = only(plan(desired(topic("orders", config={"retention.ms": 2000})), state))
    assert r.action is Action.UPDATE
    assert [str(c) for c in r.changes] == ["config.retention.ms: 1000 -> 2000"]
    assert ops_of(r.steps[0]) == {"retention.ms": (AlterOp.SET, "2000")}
    assert r.steps[0].resource == ConfigResource.topic("orders")


def test_declared_value_equal_to_the_default_is_pinned_as_an_override() -> None:
    state = observed(observed_topic("orders", defaults={"retention.ms": "604800000"}))
    r = only(plan(desired(topic("orders", config={"retention.ms": 604800000})), state))
    assert ops_of(r.steps[0]) == {"retention.ms": (AlterOp.SET, "604800000")}
    assert str(r.changes[0]) == "config.retention.ms: 604800000 (default) -> 604800000"


def test_kafka_spellings_of_equal_values_are_equal() -> None:
    assert values_equal("cleanup.policy", "compact,delete", "delete, compact")
    assert values_equal("min.cleanable.dirty.ratio", "0.5", "0.50")
    assert values_equal("preallocate", "TRUE", "true")
    assert not values_equal("retention.ms", "1000", "1001")
    assert not values_equal("compression.type", "zstd", None)


def test_removed_key_is_reset_only_when_kafkaops_owned_it() -> None:
    state = observed(observed_topic("orders", overrides={"retention.ms": "1000", "segment.ms": "5000"}))
    want = desired(topic("orders"))
    unowned = only(plan(want, state))
    assert unowned.action is Action.NONE, "a key kafkaops never set is left alone"
    owned = only(plan(want, state, Ownership({"topic/orders": {"retention.ms": None}})))
    assert ops_of(owned.steps[0]) == {"retention.ms": (AlterOp.DELETE, None)}
    assert [str(c) for c in owned.changes] == ["config.retention.ms: - 1000"]


def test_keys_set_by_others_are_never_touched() -> None:
    others = {"leader.replication.throttled.replicas": "0:1,1:2", "follower.replication.throttled.replicas": "*"}
    state = observed(observed_topic("orders", overrides={"retention.ms": "1", **others}))
    r = only(plan(desired(topic("orders", config={"retention.ms": 2})), state,
                  Ownership({"topic/orders": {"retention.ms": None}})))
    assert set(ops_of(r.steps[0])) == {"retention.ms"}


def test_partition_increase() -> None:
    r = only(plan(desired(topic("orders", 6)), observed(observed_topic("orders", 3))))
    assert r.action is Action.PARTITION_INCREASE
    (step,) = r.steps
    assert isinstance(step, CreatePartitions) and (step.request.topic, step.request.total_count) == ("orders", 6)
    assert [str(c) for c in r.changes] == ["partitions: 3 -> 6"]


def test_partition_increase_then_configs_in_that_order() -> None:
    r = only(plan(desired(topic("orders", 6, config={"retention.ms": 5})), observed(observed_topic("orders", 3))))
    assert [type(s) for s in r.steps] == [CreatePartitions, AlterConfigs]


def test_partition_decrease_is_refused_and_nothing_planned() -> None:
    state = observed(observed_topic("orders", 6, overrides={"retention.ms": "1"}))
    r = only(plan(desired(topic("orders", 3, config={"retention.ms": 2})), state))
    assert r.problem is not None and r.problem.reason == "PartitionDecrease" and not r.problem.retriable
    assert "6 partitions" in r.problem.message and "3" in r.problem.message
    assert r.steps == ()


def test_replication_factor_change_is_planned_as_a_replica_change() -> None:
    r = only(plan(desired(topic("orders", 3, 3)), observed(observed_topic("orders", 3, 1))))
    assert r.action is Action.REPLICA_CHANGE
    assert isinstance(r.steps[0], ChangeReplicas) and r.steps[0].replication_factor == 3
    assert r.steps[0].target == ((1, 2, 3), (2, 1, 3), (3, 1, 2))  # existing replicas kept, leaders spread
    assert [str(c) for c in r.changes] == ["replicationFactor: 1 -> 3",
                                           "replicaAssignment: [[1], [2], [3]] -> [[1,2,3], [2,1,3], [3,1,2]]"]


def test_a_topic_in_the_middle_of_a_move_is_planned_from_its_original_replicas() -> None:
    from kafkaops.kafka import Reassignment, TopicPartition

    moving = observed_topic("orders", 1, 1)  # Metadata during a 1 -> 3 move shows [1, 2, 3]
    moving = replace(moving, assignment=((1, 2, 3),))
    state = observed(moving, reassignments={TopicPartition("orders", 0): Reassignment(
        TopicPartition("orders", 0), (1, 2, 3), adding=(2, 3), removing=())})
    r = only(plan(desired(topic("orders", 1, 3)), state))
    assert r.action is Action.REPLICA_CHANGE and r.steps[0].target == ((1, 2, 3),)
    assert only(plan(desired(topic("orders", 1, 1)), state)).action is Action.NONE


def test_partition_increase_with_a_new_replication_factor_grows_at_the_old_factor_then_moves_all() -> None:
    """Kafka refuses new partitions whose replica count differs from the existing partitions'
    (INVALID_REPLICA_ASSIGNMENT, found by the soak): they are created at today's factor and the
    replica change takes all four to the new one."""
    r = only(plan(desired(topic("orders", 4, 2)), observed(observed_topic("orders", 2, 1))))
    grow, change = r.steps
    assert isinstance(grow, CreatePartitions) and all(len(replicas) == 1 for replicas in grow.request.assignments)
    assert isinstance(change, ChangeReplicas) and len(change.target) == 4 and all(len(t) == 2 for t in change.target)
    assert [t[0] for t in change.target[2:]] == [a[0] for a in grow.request.assignments], "leaders stay put"


def test_assignment_change_is_planned_as_a_replica_change() -> None:
    current = observed_topic("orders", 2, 1)
    target = [[3], [1]]
    assert current.assignment != ((3,), (1,))
    r = only(plan(desired(topic("orders", None, None, replicaAssignment=target)), observed(current)))
    assert r.action is Action.REPLICA_CHANGE and r.steps[0].target == ((3,), (1,))


def test_unknown_broker_in_assignment_is_refused_before_sending() -> None:
    r = only(plan(desired(topic("orders", None, None, replicaAssignment=[[1, 9]])), observed(brokers=3)))
    assert r.problem.reason == "UnknownBroker" and "[9]" in r.problem.message and r.steps == ()


def test_replication_factor_above_the_live_brokers_is_refused_and_retried_as_one_may_be_restarting() -> None:
    r = only(plan(desired(topic("orders", 3, 3)), observed(brokers=1)))
    assert r.problem.reason == "InvalidReplicationFactor" and r.steps == ()
    # Metadata lists live brokers only: a broker restarting looks absent, so it is retried (soak)
    assert r.problem.retriable and "live broker" in r.problem.message


def test_topic_read_error_fails_only_that_topic() -> None:
    error = KafkaError.of(ErrorCode.topic_authorization_failed)
    result = plan(desired(topic("secret"), topic("orders")), observed(topic_errors={"secret": error}))
    by_name = {r.name: r for r in result.resources}
    assert by_name["secret"].problem.reason == "TOPIC_AUTHORIZATION_FAILED"
    assert by_name["orders"].action is Action.CREATE


# --- sensitive values -----------------------------------------------------------------------------


def test_sensitive_values_are_never_shown_and_compared_by_fingerprint() -> None:
    secret = "hunter2-very-secret"
    key = "listener.name.internal.ssl.key.password"
    hidden = {key: ObservedConfig(None, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, sensitive=True)}
    want = desired(broker_config("brokers", {key: secret}))
    first = only(plan(want, observed(broker_configs={"": hidden})))
    assert first.action is Action.UPDATE
    assert secret not in repr(first) and secret not in str(first.changes[0])
    assert "(sensitive)" in str(first.changes[0])
    remembered = Ownership({"broker/default": {key: fingerprint(secret)}})
    assert only(plan(want, observed(broker_configs={"": hidden}), remembered)).action is Action.NONE
    changed = desired(broker_config("brokers", {key: "another-secret"}))
    assert only(plan(changed, observed(broker_configs={"": hidden}), remembered)).action is Action.UPDATE


# --- ACLs ---------------------------------------------------------------------------------------------


def binding(name: str, op: AclOperation, principal: str = "User:orders") -> AclBinding:
    return AclBinding(ResourceType.TOPIC, name, PatternType.LITERAL, principal, "*", op, AclPermission.ALLOW)


def test_acl_bindings_no_longer_declared_are_deleted_before_new_ones_are_created() -> None:
    current = {"User:orders": frozenset({binding("orders", AclOperation.READ), binding("old", AclOperation.WRITE)}),
               "User:other": frozenset({binding("x", AclOperation.READ, "User:other")})}
    want = desired(kafka_acl("orders", "User:orders", [
        {"resource": {"type": "Topic", "name": "orders"}, "operations": ["Read", "Write"]}]))
    r = only(plan(want, observed(acls=current)))
    assert r.action is Action.UPDATE
    assert [type(s) for s in r.steps] == [DeleteAcls, CreateAcls]
    assert r.steps[0].bindings == (binding("old", AclOperation.WRITE),)
    assert r.steps[1].bindings == (binding("orders", AclOperation.WRITE),)


def test_acls_as_declared_need_nothing_and_other_principals_are_ignored() -> None:
    current = {"User:orders": frozenset({binding("orders", AclOperation.READ)}),
               "User:other": frozenset({binding("x", AclOperation.READ, "User:other")})}
    want = desired(kafka_acl("orders", "User:orders", [{"resource": {"type": "Topic", "name": "orders"},
                                                         "operations": ["Read"]}]))
    assert only(plan(want, observed(acls=current))).action is Action.NONE


def test_unreadable_acls_fail_the_acl_resources_with_kafkas_reason() -> None:
    want = desired(kafka_acl("orders", "User:orders", [{"resource": {"type": "Topic", "name": "o"}, "operations": ["Read"]}]),
                   topic("orders"))
    result = plan(want, observed(acls=None, acls_error=KafkaError.of(ErrorCode.security_disabled)))
    by_kind = {r.kind: r for r in result.resources}
    assert by_kind["KafkaAcl"].problem.reason == "SECURITY_DISABLED"
    assert by_kind["KafkaTopic"].action is Action.CREATE


# --- broker configs ----------------------------------------------------------------------------------


def test_broker_config_set_and_owned_reset() -> None:
    current = {"2": {"log.cleaner.threads": ObservedConfig("1", ConfigSource.DYNAMIC_BROKER_CONFIG),
                     "num.io.threads": ObservedConfig("8", ConfigSource.DYNAMIC_BROKER_CONFIG)}}
    want = desired(broker_config("b2", {"log.cleaner.threads": 2}, broker_id=2))
    r = only(plan(want, observed(broker_configs=current), Ownership({"broker/2": {"num.io.threads": None}})))
    assert r.steps[0].resource == ConfigResource.broker(2)
    assert ops_of(r.steps[0]) == {"log.cleaner.threads": (AlterOp.SET, "2"), "num.io.threads": (AlterOp.DELETE, None)}


def test_cluster_default_broker_config_compares_with_dynamic_default_source() -> None:
    current = {"": {"log.cleaner.threads": ObservedConfig("2", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)}}
    want = desired(broker_config("defaults", {"log.cleaner.threads": 2}))
    assert only(plan(want, observed(broker_configs=current))).action is Action.NONE


def test_broker_config_for_an_unknown_broker_is_refused() -> None:
    r = only(plan(desired(broker_config("b9", {"log.cleaner.threads": 2}, broker_id=9)), observed(broker_configs={})))
    assert r.problem.reason == "UnknownBroker"


# --- pruning ------------------------------------------------------------------------------------------------


def undeclared_state(*names: str):
    return observed(observed_topic("kept"), *(observed_topic(n) for n in names),
                    observed_topic("__consumer_offsets", internal=True), observed_topic("_schemas"))


def test_without_prune_undeclared_topics_are_kept_with_a_note() -> None:
    result = plan(desired(kafka_cluster(policy="Delete"), topic("kept")), undeclared_state("old1", "old2"))
    assert [r.action for r in result.resources] == [Action.NONE]
    assert any("2 topic(s)" in n and "--prune" in n for n in result.notes)


def test_prune_with_retain_policy_deletes_nothing_and_says_why() -> None:
    result = plan(desired(kafka_cluster(policy="Retain"), topic("kept")), undeclared_state("old1"), options=PlanOptions(prune=True))
    assert not any(r.action is Action.DELETE for r in result.resources)
    assert any("Retain" in n for n in result.notes)


def test_prune_over_the_cap_deletes_nothing() -> None:
    result = plan(desired(kafka_cluster(policy="Delete", cap=1), topic("kept")), undeclared_state("old1", "old2"),
                  options=PlanOptions(prune=True))
    deletes = [r for r in result.resources if r.action is Action.DELETE]
    assert len(deletes) == 2 and all(r.problem.reason == "DeletionCapExceeded" and r.steps == () for r in deletes)


def test_prune_under_the_cap_deletes_undeclared_but_never_internal_topics() -> None:
    result = plan(desired(kafka_cluster(policy="Delete", cap=5), topic("kept")), undeclared_state("old1"),
                  options=PlanOptions(prune=True))
    deletes = [r for r in result.resources if r.action is Action.DELETE]
    assert [r.name for r in deletes] == ["old1"] and deletes[0].steps == (DeleteTopic("old1"),)


def test_prune_without_a_kafkacluster_keeps_everything() -> None:
    result = plan(desired(topic("kept")), undeclared_state("old1"), options=PlanOptions(prune=True))
    assert not any(r.action is Action.DELETE for r in result.resources)


def test_plan_is_pure_and_repeatable() -> None:
    want = desired(topic("orders", 6, config={"retention.ms": 5}), topic("new"))
    state = observed(observed_topic("orders", 3))
    assert plan(want, state) == plan(want, state)


def test_a_topic_not_read_is_not_taken_for_gone_when_it_is_deleted() -> None:
    """Found by the sharding e2e in CI: a connection lost while the deletion read the topic answers
    NETWORK_EXCEPTION for it; "not in the topics read" was taken for "already gone", and the resource
    was released with the topic still in Kafka. Likewise a broker config not read."""
    from kafkaops.reconcile.plan import plan_removal

    lost = KafkaError.of(ErrorCode.network_exception, "connection closed")
    doomed = desired(topic("doomed", 1, 1)).topics[0]
    planned = plan_removal(doomed, observed(topic_errors={"doomed": lost}), Ownership())
    assert planned.problem is not None and planned.problem.retriable and planned.steps == ()
    assert plan_removal(doomed, observed(), Ownership()).problem is None, "really gone: nothing to do"
    defaults = desired(broker_config("defaults", {"log.retention.ms": 1})).broker_configs[0]
    planned = plan_removal(defaults, observed(broker_config_errors={"": lost}), Ownership())
    assert planned.problem is not None and planned.problem.retriable
