"""plan(desired, observed) -> ordered actions per resource. Pure: no I/O, no clock.

Safety rules applied here (and tested in tests/reconcile/test_plan.py):
- a partition decrease is refused: the resource gets a problem and no step;
- replication-factor / assignment changes are planned as ChangeReplicas with the target placement
  computed here (placement.py), from the replicas before any reassignment in flight;
- a config key is SET when it is declared and Kafka does not hold that value
  as an override of this resource; a key is DELETEd only when kafkaops owned
  it (Ownership) and the manifest no longer declares it: keys set by others
  are never touched;
- sensitive values are never compared in the clear nor shown: a salted
  fingerprint of what kafkaops applied stands in for them;
- ACLs: bindings no longer declared are deleted first, then new ones created;
- users and client quotas: principals.py (credential upserted only when missing, re-iterated or
  its password changed; quota keys removed only when kafkaops set them);
- topics absent from the manifests are deleted only with `prune`, a Delete
  policy, and at most `maxDeletionsPerReconcile` of them; over the cap none is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from kafkaops.frozen import frozen
from kafkaops.kafka import AlterConfigOp, AlterOp, ConfigResource, ConfigSource, NewPartitions, NewTopic
from kafkaops.reconcile.actions import (
    Action,
    AlterConfigs,
    ChangeReplicas,
    CreatePartitions,
    CreateTopic,
    DeleteAcls,
    DeleteTopic,
    FieldChange,
    Plan,
    Problem,
    ResourcePlan,
    Step,
)
from kafkaops.reconcile.configs import is_sensitive, values_equal
from kafkaops.reconcile.desired import DesiredState
from kafkaops.reconcile.observed import ObservedConfig, ObservedState, broker_key
from kafkaops.reconcile.ownership import Ownership, broker_owner, fingerprint_matches, topic_owner
from kafkaops.reconcile.placement import plan_placement
from kafkaops.reconcile.principals import acl_diff, plan_client_quota, plan_user, plan_user_removal
from kafkaops.resources.documents import Source
from kafkaops.resources.kinds import KAFKA_ACL, KAFKA_BROKER_CONFIG, KAFKA_TOPIC
from kafkaops.resources.models import DeletionPolicy, KafkaAcl, KafkaBrokerConfig, KafkaTopic
from kafkaops.resources.users import KafkaClientQuota, KafkaUser

# Topics never pruned: Kafka's internal topics and common platform topics.
DEFAULT_PROTECTED_TOPICS = r"^(__.*|_schemas|_confluent.*|connect-(configs|offsets|status))$"

# Rule names used as problem reasons.
PARTITION_DECREASE = "PartitionDecrease"
INVALID_REPLICATION_FACTOR = "InvalidReplicationFactor"
UNKNOWN_BROKER = "UnknownBroker"
DELETION_CAP_EXCEEDED = "DeletionCapExceeded"
NOT_READ = "ObserveFailed"


@frozen
class PlanOptions:
    prune: bool = False
    protected_topics: str = DEFAULT_PROTECTED_TOPICS


def plan(
    desired: DesiredState,
    observed: ObservedState,
    ownership: Ownership | None = None,
    options: PlanOptions = PlanOptions(),
    cluster: str = "",
) -> Plan:
    ownership = ownership or Ownership()
    resources: list[ResourcePlan] = []
    resources.extend(plan_topic(t, observed, ownership) for t in desired.topics)
    resources.extend(plan_acl(a, observed) for a in desired.acls)
    resources.extend(plan_broker_config(b, observed, ownership) for b in desired.broker_configs)
    resources.extend(plan_user(u, observed, ownership, desired.passwords.get(u.user_name)) for u in desired.users)
    resources.extend(plan_client_quota(q, observed, ownership) for q in desired.client_quotas)
    pruned, notes = plan_prune(desired, observed, options)
    resources.extend(pruned)
    return Plan(cluster or (desired.cluster.name if desired.cluster else ""), tuple(resources), tuple(notes),
                observed.cluster_id)


# --- topics ------------------------------------------------------------------------------


def plan_topic(topic: KafkaTopic, observed: ObservedState, ownership: Ownership) -> ResourcePlan:
    name = topic.topic_name
    current = observed.topic(name)
    error = observed.topic_errors.get(name)
    problem = _placement_problem(topic, observed) if error is None else None
    if current is None and error is None and problem is None:
        return _plan_create(topic)  # builds its one ResourcePlan itself: a first apply plans thousands
    # positional: keyword arguments cost a frozen dataclass twice as much (5,000 topics, 5,000 times)
    base = ResourcePlan(topic.source, KAFKA_TOPIC, name, Action.NONE, (), (), None, topic_owner(name),
                        frozenset(topic.config))
    if error is not None:
        return _with(base, problem=Problem(error.name, f"cannot read topic {name!r}"
                                           + (f": {error.message}" if error.message else ""), error.retriable))
    if problem:
        return _with(base, problem=problem)
    if current.configs is None:
        error = current.configs_error
        return _with(base, problem=Problem(error.name if error else NOT_READ,
                                           f"cannot read the configs of topic {topic.topic_name!r}"
                                           + (f": {error.message}" if error and error.message else ""),
                                           retriable=bool(error and error.retriable)))
    steps: list[Step] = []
    changes: list[FieldChange] = []
    headline = Action.NONE

    wanted = topic.desired_partitions
    if wanted is not None and wanted < current.partitions:
        return _with(base, changes=(FieldChange("partitions", str(current.partitions), str(wanted)),), problem=Problem(
            PARTITION_DECREASE,
            f"topic {topic.topic_name!r} has {current.partitions} partitions and the manifest asks for {wanted}: "
            "Kafka cannot remove partitions, so nothing was changed",
        ))
    original = observed.original_assignment(current)
    brokers = {b.node_id: b.rack for b in observed.brokers.values()}
    if wanted is not None and wanted > current.partitions:
        if topic.replica_assignment:
            extra = topic.replica_assignment[current.partitions:]
        elif topic.replication_factor not in (None, current.replication_factor) and brokers and original:
            # Kafka refuses new partitions whose replica count differs from the existing ones'
            # (INVALID_REPLICA_ASSIGNMENT; soak finding): they get today's factor, placed with the
            # rest, and the replica change below moves every partition, the new ones too
            full = plan_placement(original + ((),) * (wanted - current.partitions), len(original[0]), brokers)
            extra = full[current.partitions:]
            original = original + tuple(extra)
        else:
            extra = None
        steps.append(CreatePartitions(NewPartitions(topic.topic_name, wanted, extra)))
        changes.append(FieldChange("partitions", str(current.partitions), str(wanted)))
        headline = Action.PARTITION_INCREASE

    replica_change = _replica_change(topic, original, brokers)
    if replica_change is not None:
        step, more = replica_change
        steps.append(step)
        changes.extend(more)
        headline = Action.REPLICA_CHANGE

    ops, config_changes = _config_ops(base.owner or "", topic.config, current.configs,
                                      ConfigSource.DYNAMIC_TOPIC_CONFIG, ownership)
    if ops:
        steps.insert(1 if headline is Action.PARTITION_INCREASE else 0,
                     AlterConfigs(ConfigResource.topic(topic.topic_name), ops))
        changes.extend(config_changes)
        if headline is Action.NONE:
            headline = Action.UPDATE
    if not steps and not changes:  # as declared: the base entry is the plan (a resync's usual case, 10,000 times)
        return base
    return _with(base, action=headline, changes=tuple(changes), steps=tuple(steps))


def _plan_create(topic: KafkaTopic) -> ResourcePlan:
    assignment = topic.replica_assignment
    name = topic.topic_name
    config = dict(topic.config.items())
    new = NewTopic(
        name,
        -1 if assignment or topic.partitions is None else topic.partitions,
        -1 if assignment or topic.replication_factor is None else topic.replication_factor,
        config,
        assignment,
    )
    changes = [FieldChange("topic", None, topic.topic_name)]
    if assignment:
        changes.append(FieldChange("replicaAssignment", None, _assignment_text(assignment)))
    else:
        changes.append(FieldChange("partitions", None, str(topic.partitions) if topic.partitions else "(broker default)"))
        changes.append(FieldChange("replicationFactor", None,
                                   str(topic.replication_factor) if topic.replication_factor else "(broker default)"))
    changes += [FieldChange(f"config.{k}", None, config[k], is_sensitive(k)) for k in sorted(config)]
    return ResourcePlan(topic.source, KAFKA_TOPIC, name, Action.CREATE, tuple(changes), (CreateTopic(new),), None,
                        topic_owner(name), frozenset(config))


def _placement_problem(topic: KafkaTopic, observed: ObservedState) -> Problem | None:
    brokers = set(observed.brokers)
    if not brokers:
        return None
    rf = topic.desired_replication_factor
    if topic.replica_assignment:
        unknown = sorted({b for replicas in topic.replica_assignment for b in replicas} - brokers)
        if unknown:
            return Problem(UNKNOWN_BROKER, f"spec.replicaAssignment names broker(s) {unknown} that the cluster "
                                           f"does not list (live brokers: {sorted(brokers)}){DOWN_NOTE}",
                           retriable=True)
    elif rf is not None and rf > len(brokers):
        return Problem(INVALID_REPLICATION_FACTOR, f"spec.replicationFactor is {rf} but the cluster lists only "
                                                   f"{len(brokers)} live broker(s){DOWN_NOTE}", retriable=True)
    return None


# Metadata lists live brokers only: a broker that is restarting looks absent. So these problems
# are retried (Reconciling), never final (soak: a broker restart left topics Stalled for ever).
DOWN_NOTE = "; retried, as a broker that is down is not listed"


def _replica_change(
    topic: KafkaTopic, original: tuple[tuple[int, ...], ...], brokers: Mapping[int, str | None]
) -> tuple[ChangeReplicas, list[FieldChange]] | None:
    """A replication-factor or assignment change of the existing partitions, with its target
    placement computed now (rack-aware, balanced, fewest moves: placement.py) so plans show it."""
    if not original:
        return None
    if topic.replica_assignment is not None:
        target = tuple(topic.replica_assignment[: len(original)])
        if target == original[: len(target)]:
            return None
        return (ChangeReplicas(topic.topic_name, target, len(target[0])),
                [FieldChange("replicaAssignment", _assignment_text(original), _assignment_text(target))])
    rf = topic.replication_factor
    if rf is None or rf == len(original[0]):
        return None
    changes = [FieldChange("replicationFactor", str(len(original[0])), str(rf))]
    if not brokers or rf > len(brokers):
        return ChangeReplicas(topic.topic_name, None, rf), changes
    target = plan_placement(original, rf, brokers)
    changes.append(FieldChange("replicaAssignment", _assignment_text(original), _assignment_text(target)))
    return ChangeReplicas(topic.topic_name, target, rf), changes


def _assignment_text(assignment: tuple[tuple[int, ...], ...]) -> str:
    return "[" + ", ".join("[" + ",".join(map(str, r)) + "]" for r in assignment) + "]"


# --- configs (topics and brokers) ----------------------------------------------------------


def _config_ops(
    owner: str,
    declared: Mapping[str, str],
    current: Mapping[str, ObservedConfig],
    override_source: ConfigSource,
    ownership: Ownership,
) -> tuple[tuple[AlterConfigOp, ...], list[FieldChange]]:
    """SET for declared keys Kafka does not hold as this resource's override; DELETE for keys
    kafkaops owned that the manifest dropped and that are still overridden."""
    ops: list[AlterConfigOp] = []
    changes: list[FieldChange] = []
    for key, value in sorted(declared.items()):
        seen = current.get(key)
        overridden = seen is not None and seen.source is override_source
        sensitive = is_sensitive(key, seen)
        if sensitive:
            same = overridden and fingerprint_matches(value, ownership.fingerprint(owner, key))
        else:
            same = overridden and values_equal(key, value, seen.value if seen else None)
        if same:
            continue
        ops.append(AlterConfigOp(key, value, AlterOp.SET))
        if seen is None:
            old = None
        elif overridden:
            old = seen.value if seen.value is not None else "(set)"
        else:
            old = f"{seen.value} (default)"
        changes.append(FieldChange(f"config.{key}", old, value, sensitive))
    for key in sorted(ownership.keys(owner) - set(declared)):
        seen = current.get(key)
        if seen is not None and seen.source is override_source:
            ops.append(AlterConfigOp(key, None, AlterOp.DELETE))
            changes.append(FieldChange(f"config.{key}", seen.value or "(set)", None, is_sensitive(key, seen)))
    return tuple(ops), changes


# --- ACLs --------------------------------------------------------------------------------------


def plan_acl(acl: KafkaAcl, observed: ObservedState) -> ResourcePlan:
    base = ResourcePlan(acl.source, KAFKA_ACL, acl.principal, Action.NONE)
    made = acl_diff(acl.principal, acl.bindings, observed)
    if isinstance(made, Problem):
        return _with(base, problem=made)
    steps, changes, existed = made
    if not steps:
        return base
    return _with(base, action=Action.UPDATE if existed else Action.CREATE, changes=changes, steps=steps)


# --- broker configs -----------------------------------------------------------------------------


def plan_broker_config(config: KafkaBrokerConfig, observed: ObservedState, ownership: Ownership) -> ResourcePlan:
    key = broker_key(config.broker_id)
    name = f"brokers/{key or 'default'}"
    owner = broker_owner(key)
    base = ResourcePlan(config.source, KAFKA_BROKER_CONFIG, name, Action.NONE, owner=owner,
                        owned_keys=frozenset(config.config))
    if config.broker_id is not None and observed.brokers and config.broker_id not in observed.brokers:
        return _with(base, problem=Problem(UNKNOWN_BROKER, f"spec.brokerId {config.broker_id} is not a broker of this "
                                                           f"cluster (brokers: {sorted(observed.brokers)})"))
    if key in observed.broker_config_errors or key not in observed.broker_configs:
        error = observed.broker_config_errors.get(key)
        return _with(base, problem=Problem(error.name if error else NOT_READ,
                                           f"cannot read the configs of {name}" + (f": {error.message}" if error and error.message else ""),
                                           retriable=bool(error and error.retriable)))
    source = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG if config.broker_id is None else ConfigSource.DYNAMIC_BROKER_CONFIG
    ops, changes = _config_ops(owner, config.config, observed.broker_configs[key], source, ownership)
    if not ops:
        return base
    resource = ConfigResource.broker(config.broker_id)
    return _with(base, action=Action.UPDATE, changes=tuple(changes), steps=(AlterConfigs(resource, ops),))


# --- removal of a deleted resource (the operator's Delete policy) --------------------------------


def plan_removal(resource: KafkaTopic | KafkaAcl | KafkaBrokerConfig | KafkaUser | KafkaClientQuota,
                 observed: ObservedState, ownership: Ownership) -> ResourcePlan:
    """What deleting `resource` with a Delete policy does in Kafka: the topic goes; every binding
    of the KafkaAcl's principal goes; a KafkaBrokerConfig's owned keys are reset; a KafkaUser's
    credential, owned quota keys and (when it manages them) ACL bindings go; a KafkaClientQuota's
    owned quota keys go."""
    if isinstance(resource, KafkaUser):
        return plan_user_removal(resource, observed, ownership)
    if isinstance(resource, KafkaClientQuota):
        return plan_client_quota(resource, observed, ownership, removal=True)
    if isinstance(resource, KafkaTopic):
        base = ResourcePlan(resource.source, KAFKA_TOPIC, resource.topic_name, Action.NONE,
                            owner=topic_owner(resource.topic_name))
        if (error := observed.topic_errors.get(resource.topic_name)) is not None:
            # not read (a connection lost mid-read answers NETWORK_EXCEPTION per topic): that is no
            # proof it is gone, and "gone" would release the resource with the topic still in Kafka
            return _with(base, problem=Problem(error.name, f"cannot read topic {resource.topic_name!r}"
                                               + (f": {error.message}" if error.message else ""), retriable=True))
        if resource.topic_name not in observed.topics:
            return base
        return _with(base, action=Action.DELETE, changes=(FieldChange("topic", resource.topic_name, None),),
                     steps=(DeleteTopic(resource.topic_name),))
    if isinstance(resource, KafkaAcl):
        base = ResourcePlan(resource.source, KAFKA_ACL, resource.principal, Action.NONE)
        if observed.acls is None:
            return plan_acl(resource, observed)  # the read problem
        current = sorted(observed.acls.get(resource.principal, frozenset()))
        if not current:
            return base
        return _with(base, action=Action.DELETE, changes=tuple(FieldChange("acl", str(b), None) for b in current),
                     steps=(DeleteAcls(tuple(current)),))
    key = broker_key(resource.broker_id)
    owner = broker_owner(key)
    base = ResourcePlan(resource.source, KAFKA_BROKER_CONFIG, f"brokers/{key or 'default'}", Action.NONE, owner=owner,
                        owned_keys=frozenset())
    if key in observed.broker_config_errors:  # not read: resetting nothing would release it with the keys set
        error = observed.broker_config_errors[key]
        return _with(base, problem=Problem(error.name, f"cannot read the configs of brokers/{key or 'default'}"
                                           + (f": {error.message}" if error.message else ""), retriable=True))
    source = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG if resource.broker_id is None else ConfigSource.DYNAMIC_BROKER_CONFIG
    ops, changes = _config_ops(owner, {}, observed.broker_configs.get(key, {}), source, ownership)
    if not ops:
        return base
    return _with(base, action=Action.DELETE, changes=tuple(changes),
                 steps=(AlterConfigs(ConfigResource.broker(resource.broker_id), ops),))


# --- pruning ---------------------------------------------------------------------------------------


def plan_prune(desired: DesiredState, observed: ObservedState, options: PlanOptions) -> tuple[list[ResourcePlan], list[str]]:
    if observed.all_topic_names is None:
        return [], []
    protected = re.compile(options.protected_topics)
    undeclared = sorted(
        name for name in observed.all_topic_names - desired.topic_names
        if not protected.match(name) and not (name in observed.topics and observed.topics[name].internal)
    )
    if not undeclared:
        return [], []
    if not options.prune:
        return [], [f"{len(undeclared)} topic(s) in the cluster are not declared and are kept "
                    "(--prune deletes them when the cluster's topicDeletion.policy is Delete)"]
    deletion = desired.topic_deletion
    if deletion.policy is not DeletionPolicy.DELETE:
        return [], [f"--prune: {len(undeclared)} undeclared topic(s) kept because the cluster's "
                    f"topicDeletion.policy is {deletion.policy} (set it to Delete in the KafkaCluster to prune)"]
    cap = deletion.max_deletions_per_reconcile
    over = len(undeclared) > cap
    plans = []
    for name in undeclared:
        base = ResourcePlan(Source(None, 0, KAFKA_TOPIC, None, name), KAFKA_TOPIC, name, Action.DELETE,
                            (FieldChange("topic", name, None),), owner=topic_owner(name))
        if over:
            plans.append(_with(base, problem=Problem(
                DELETION_CAP_EXCEEDED,
                f"--prune would delete {len(undeclared)} topics, more than the cluster's "
                f"topicDeletion.maxDeletionsPerReconcile ({cap}): nothing was deleted",
            )))
        else:
            plans.append(_with(base, steps=(DeleteTopic(name),)))
    return plans, []


_SAME: object = object()
# _with names every field: one added to ResourcePlan must be added there too
assert [f.name for f in fields(ResourcePlan)] == ["source", "kind", "name", "action", "changes", "steps", "problem",
                                                  "owner", "owned_keys"], "update plan._with"


def _with(base: ResourcePlan, *, action: Any = _SAME, changes: Any = _SAME, steps: Any = _SAME,
          problem: Any = _SAME) -> ResourcePlan:
    """`dataclasses.replace(base, ...)` for the fields plans change, without its per-call
    introspection (it runs once per resource: 5,000 times for 5,000 topics)."""
    return ResourcePlan(base.source, base.kind, base.name, base.action if action is _SAME else action,
                        base.changes if changes is _SAME else changes, base.steps if steps is _SAME else steps,
                        base.problem if problem is _SAME else problem, base.owner, base.owned_keys)
