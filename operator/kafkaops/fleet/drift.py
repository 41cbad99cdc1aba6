"""The drift stage: declared (owned) values that differ in the cluster, for resources that exist there.

Computed inside the plan stage's task of each cluster, from the same `DesiredState` and
`ObservedState` the planner gets (so no extra join over the million topics): `drift_rows` walks
the declared resources and compares each declared value with the snapshot, with the engine's own
value equality (`reconcile.configs.values_equal`: list order, `1.0` vs `1`, `TRUE` vs `true`) and
sensitivity rule (`is_sensitive`). `run` selects those rows from the plan stage's output.

| kind | field | desired | observed |
|---|---|---|---|
| KafkaTopic | `partitions`, `replicationFactor` | declared | snapshot |
| KafkaTopic | `replicaAssignment` (when declared) | declared | snapshot (`[[1,2], [2,3]]`) |
| KafkaTopic | `config.<key>` (declared keys) | declared value | the value in effect; `observed_source` says where it comes from (`DYNAMIC_TOPIC_CONFIG`: the topic's own override; `DEFAULT_CONFIG`: Kafka's default, the snapshot having no override) |
| KafkaAcl | `acl` | a declared binding the cluster lacks (observed null) | a binding of that principal the cluster has and the manifest lacks (desired null) |
| KafkaBrokerConfig | `config.<key>` | declared | the dynamic override (broker or cluster-wide default), else null |
| KafkaUser | `credential` | the declared mechanism and iterations (`SCRAM-SHA-512 (4096 iterations)`) | the user's credentials in the cluster (`SCRAM-SHA-256 (4096 iterations)`), null when it has none |
| KafkaUser, KafkaClientQuota | `quota.<key>` (declared keys) | declared | the entity's value, null when it lacks the key |
| KafkaUser | `acl` (inline ACL rules) | as KafkaAcl | as KafkaAcl |

A declared config key the resource does not hold as its own override is drift even when the value
in effect is equal (the plan sets it, pinning the value). A topic or principal absent from the
cluster is not drift (it is a `create` in the plan): a KafkaUser's credential is drift when its
principal exists in the cluster otherwise (a credential of another mechanism, quotas or ACL
bindings), a quota key when its entity holds quotas. Passwords are not compared (the snapshot has
none). Sensitive values are never shown (both sides
read `(sensitive)`), and a value the cluster hides cannot be compared: it is not reported as drift,
while the plan, without the fingerprint an ownership record would hold, sets it again (as
`kafkaops plan --no-state` does).

`binding_text` (the engine's text of an ACL binding, as a Spark expression) is shared with the
orphans, policy and access stages.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from kafkaops.kafka import ConfigSource
from kafkaops.reconcile.configs import is_sensitive, values_equal
from kafkaops.reconcile.desired import DesiredState
from kafkaops.reconcile.observed import ObservedConfig, ObservedState, broker_key
from kafkaops.reconcile.ownership import Ownership
from kafkaops.reconcile.principals import client_quota_entity, quota_ops, user_quota_entity
from kafkaops.resources.acl import AclBinding
from kafkaops.resources.documents import Source
from kafkaops.resources.kinds import KAFKA_ACL, KAFKA_BROKER_CONFIG, KAFKA_CLIENT_QUOTA, KAFKA_TOPIC, KAFKA_USER

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

DRIFT_COLUMNS = ["cluster", "kind", "name", "field", "desired", "observed", "observed_source", "file", "index"]
SENSITIVE = "(sensitive)"


def binding_text(principal: Column, b: Column | None = None) -> Column:
    """The engine's text for a binding (`AclBinding.__str__`): `Allow User:a Read on Topic:t (Literal) from *`."""
    from pyspark.sql import functions as F

    def c(name: str) -> Column:
        return F.col(name) if b is None else b[name]

    return F.concat(c("permission"), F.lit(" "), principal, F.lit(" "), c("operation"), F.lit(" on "),
                    c("resource_type"), F.lit(":"), c("resource_name"), F.lit(" ("), c("pattern_type"),
                    F.lit(") from "), c("host"))


def _assignment_text(assignment: Any) -> str:
    return "[" + ", ".join("[" + ",".join(map(str, r)) + "]" for r in assignment) + "]"


def _config_drift(declared: Mapping[str, str], current: Mapping[str, ObservedConfig], own: ConfigSource
                  ) -> Iterator[tuple[str, str | None, str | None, str]]:
    """(field, desired, observed, observed_source) of each declared key not held as declared."""
    for key, value in sorted(declared.items()):
        seen = current.get(key)
        held = seen is not None and seen.source is own
        hidden = is_sensitive(key, seen)
        if held and (hidden or values_equal(key, value, seen.value)):
            continue  # equal, or hidden by Kafka: nothing to compare with
        observed = None if seen is None else (SENSITIVE if hidden and seen.value is not None else seen.value)
        yield (f"config.{key}", SENSITIVE if hidden else value, observed,
               seen.source.name if seen is not None else ConfigSource.DEFAULT_CONFIG.name)


def drift_rows(cluster: str, desired: DesiredState, observed: ObservedState) -> Iterator[dict[str, Any]]:
    """Every drifted value of one cluster (DRIFT_COLUMNS)."""
    def row(kind: str, name: str, field: str, want: str | None, have: str | None, source: str | None,
            where: Source) -> dict[str, Any]:
        return {"cluster": cluster, "kind": kind, "name": name, "field": field, "desired": want, "observed": have,
                "observed_source": source, "file": where.file, "index": where.index}

    for topic in desired.topics:
        seen = observed.topics.get(topic.topic_name)
        if seen is None:
            continue
        name, where = topic.topic_name, topic.source
        if topic.replica_assignment is not None:
            want, have = _assignment_text(topic.replica_assignment), _assignment_text(seen.assignment)
            if want != have:
                yield row(KAFKA_TOPIC, name, "replicaAssignment", want, have, None, where)
        else:
            if topic.partitions is not None and topic.partitions != seen.partitions:
                yield row(KAFKA_TOPIC, name, "partitions", str(topic.partitions), str(seen.partitions), None, where)
            if topic.replication_factor is not None and topic.replication_factor != seen.replication_factor:
                yield row(KAFKA_TOPIC, name, "replicationFactor", str(topic.replication_factor),
                          str(seen.replication_factor), None, where)
        for field, want, have, source in _config_drift(topic.config, seen.configs or {},
                                                        ConfigSource.DYNAMIC_TOPIC_CONFIG):
            yield row(KAFKA_TOPIC, name, field, want, have, source, where)
    def acl_drift(kind: str, principal: str, bindings: frozenset[AclBinding], where: Source
                  ) -> Iterator[dict[str, Any]]:
        current = (observed.acls or {}).get(principal)
        if not current:
            return
        for binding in sorted(bindings - current):
            yield row(kind, principal, "acl", str(binding), None, None, where)
        for binding in sorted(current - bindings):
            yield row(kind, principal, "acl", None, str(binding), None, where)

    def quota_drift(kind: str, name: str, entity: Any, declared: Mapping[str, float], where: Source
                    ) -> Iterator[dict[str, Any]]:
        if entity is None or not (observed.quotas or {}).get(entity):
            return  # no quotas read, or none held by the entity: a create in the plan
        made = quota_ops(entity, declared, observed, Ownership())  # declared keys only: no ownership record
        if isinstance(made, tuple):  # else a Problem: quotas not read
            for change in made[1]:
                yield row(kind, name, change.field, change.new, change.old, None, where)

    for acl in desired.acls:
        yield from acl_drift(KAFKA_ACL, acl.principal, acl.bindings, acl.source)
    for user in desired.users:
        entity = user_quota_entity(user)
        auth = user.authentication
        held = (observed.scram or {}).get(user.user_name, ())
        exists = bool(held) or bool(entity and (observed.quotas or {}).get(entity)) or bool(
            (observed.acls or {}).get(user.principal))
        if auth is not None and observed.scram is not None and exists:
            want = f"{auth.type.sasl_name} ({auth.iterations} iterations)"
            have = [f"{info.mechanism.sasl_name} ({info.iterations} iterations)" for info in held]
            if want not in have:
                yield row(KAFKA_USER, user.principal, "credential", want, ", ".join(have) or None, None, user.source)
        if user.quotas is not None:
            yield from quota_drift(KAFKA_USER, user.principal, entity, user.quotas, user.source)
        if user.manages_acls:
            yield from acl_drift(KAFKA_USER, user.principal, user.bindings, user.source)
    for quota in desired.client_quotas:
        entity = client_quota_entity(quota)
        yield from quota_drift(KAFKA_CLIENT_QUOTA, str(entity), entity, quota.quotas, quota.source)
    for config in desired.broker_configs:
        key = broker_key(config.broker_id)
        if key not in observed.broker_configs:
            continue  # not a broker of this cluster: the plan says so (UnknownBroker)
        own = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG if key == "" else ConfigSource.DYNAMIC_BROKER_CONFIG
        name = f"brokers/{key or 'default'}"
        for field, want, have, source in _config_drift(config.config, observed.broker_configs[key], own):
            yield row(KAFKA_BROKER_CONFIG, name, field, want, have, source, config.source)


def run(planned: DataFrame) -> DataFrame:
    """The drift rows among the plan stage's output (records `drift`)."""
    from pyspark.sql import functions as F

    return planned.filter(F.col("record") == "drift").select(*DRIFT_COLUMNS)
