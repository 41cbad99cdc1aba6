"""The drift stage: declared (owned) values that differ in the cluster, for resources that exist there.

Joins in Spark, no per-row Python except a small UDF that applies the engine's Kafka-aware value
equality (`reconcile.configs.values_equal`: list order, `1.0` vs `1`, `TRUE` vs `true`) to the
few config pairs that differ as strings.

| kind | field | desired | observed |
|---|---|---|---|
| KafkaTopic | `partitions`, `replicationFactor` | declared | snapshot |
| KafkaTopic | `replicaAssignment` (when declared) | declared | snapshot (`[[1,2],[2,3]]`) |
| KafkaTopic | `config.<key>` (declared keys) | declared value | the value in effect, `observed_source` says where it comes from (`DYNAMIC_TOPIC_CONFIG`: the topic's own override; anything else, or null for Kafka's default: the topic does not hold the declared value itself) |
| KafkaAcl | `acl` | a declared binding the cluster lacks (observed null) | a binding of that principal the cluster has and the manifest lacks (desired null) |
| KafkaBrokerConfig | `config.<key>` | declared | the dynamic override (broker or cluster-default) |

A topic or principal absent from the cluster is not drift (it is a `create` in the plan).
Sensitive values are never shown (both sides read `(sensitive)`), and a value the cluster hides
(flagged sensitive) cannot be compared: it is not reported as drift, while the plan, without the
fingerprint an ownership record would hold, sets it again (as `kafkaops plan --no-state` does).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkaops.reconcile.configs import _SENSITIVE_NAME, values_equal
from kafkaops.resources.kinds import KAFKA_ACL, KAFKA_BROKER_CONFIG, KAFKA_TOPIC

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from kafkaops.fleet.desired import Desired
    from kafkaops.fleet.observed import Observed

DRIFT_COLUMNS = ["cluster", "kind", "name", "field", "desired", "observed", "observed_source", "file"]
SENSITIVE = "(sensitive)"


def _same(key, desired, observed):  # type: ignore[no-untyped-def] # (hints would make Spark guess a pandas UDF)
    if key is None or desired is None:
        return False
    return values_equal(key, desired, observed)


# The engine's "named like a secret" rule (reconcile.configs), as a Java regex: no Python per row.
SENSITIVE_KEY = "(?i)" + _SENSITIVE_NAME.pattern


def binding_text(principal: Column, b: Column | None = None) -> Column:
    """The engine's text for a binding (`AclBinding.__str__`): `Allow User:a Read on Topic:t (Literal) from *`."""
    from pyspark.sql import functions as F

    def c(name: str) -> Column:
        return F.col(name) if b is None else b[name]

    return F.concat(c("permission"), F.lit(" "), principal, F.lit(" "), c("operation"), F.lit(" on "),
                    c("resource_type"), F.lit(":"), c("resource_name"), F.lit(" ("), c("pattern_type"),
                    F.lit(") from "), c("host"))


def _assignment_text(column: Column) -> Column:
    from pyspark.sql import functions as F

    return F.concat(F.lit("["), F.array_join(F.transform(column, lambda r: F.concat(
        F.lit("["), F.array_join(F.transform(r, lambda x: x.cast("string")), ","), F.lit("]"))), ", "), F.lit("]"))


def _config_drift(joined: DataFrame, kind: str, name: Column, overridden: Column, same: Column) -> DataFrame:
    """Declared keys the resource does not hold as its own override, or holds with another value.
    Two filters, so that the Python equality (`same`) only ever sees the few pairs that differ as
    strings: Spark evaluates a Python UDF on every row reaching it."""
    from pyspark.sql import functions as F

    col = F.col
    held = F.coalesce(overridden, F.lit(False))
    hidden = F.coalesce(col("o_sensitive"), F.lit(False)) | col("key").rlike(SENSITIVE_KEY)
    not_held = joined.filter(~held)
    differ = joined.filter(held & ~hidden & (col("desired") != col("observed")))
    differ = differ.filter(~same(col("key"), col("desired"), col("observed")))
    return not_held.unionByName(differ).select(
        "cluster", F.lit(kind).alias("kind"), name.alias("name"), F.concat(F.lit("config."), col("key")).alias("field"),
        F.when(hidden, F.lit(SENSITIVE)).otherwise(col("desired")).alias("desired"),
        F.when(hidden & col("observed").isNotNull(), F.lit(SENSITIVE)).otherwise(col("observed")).alias("observed"),
        F.coalesce(col("source"), F.lit("DEFAULT_CONFIG")).alias("observed_source"), "file")


def topic_drift(desired: Desired, observed: Observed, cached: list | None = None) -> DataFrame:
    from pyspark.sql import functions as F
    from pyspark.sql.types import BooleanType

    col = F.col
    same = F.udf(_same, BooleanType(), useArrow=False)
    # the declared topics that exist, once (both uses below read it)
    d = desired.topics.select("cluster", "topic", "file", "config", col("partitions").alias("d_partitions"),
                              col("replication_factor").alias("d_rf"))
    o = observed.topics.select("cluster", "topic", col("partitions").alias("o_partitions"),
                               col("replication_factor").alias("o_rf"))
    both = d.join(o, ["cluster", "topic"]).persist()
    if cached is not None:
        cached.append(both)
    rows = []
    shape = both.select(
        "cluster", "topic", "file",
        F.array(
            F.struct(F.lit("partitions").alias("field"), col("d_partitions").cast("string").alias("desired"),
                     col("o_partitions").cast("string").alias("observed")),
            F.struct(F.lit("replicationFactor").alias("field"), col("d_rf").cast("string").alias("desired"),
                     col("o_rf").cast("string").alias("observed")),
        ).alias("pairs"))
    rows.append(shape.select("cluster", "topic", "file", F.explode("pairs").alias("p"))
                .filter(col("p.desired").isNotNull() & (col("p.desired") != col("p.observed")))
                .select("cluster", F.lit(KAFKA_TOPIC).alias("kind"), col("topic").alias("name"),
                        col("p.field").alias("field"), col("p.desired").alias("desired"),
                        col("p.observed").alias("observed"), F.lit(None).cast("string").alias("observed_source"), "file"))
    # declared replica assignments
    assigned = desired.topics.filter(col("replica_assignment").isNotNull()).select(
        "cluster", "topic", "file", _assignment_text(col("replica_assignment")).alias("desired"))
    actual = (observed.partitions.join(F.broadcast(assigned.select("cluster", "topic")), ["cluster", "topic"], "left_semi")
              .groupBy("cluster", "topic")
              .agg(F.sort_array(F.collect_list(F.struct("partition", "replicas"))).alias("_p"))
              .select("cluster", "topic", _assignment_text(F.transform("_p", lambda p: p["replicas"])).alias("observed")))
    rows.append(assigned.join(actual, ["cluster", "topic"]).filter(col("desired") != col("observed")).select(
        "cluster", F.lit(KAFKA_TOPIC).alias("kind"), col("topic").alias("name"),
        F.lit("replicaAssignment").alias("field"), "desired", "observed",
        F.lit(None).cast("string").alias("observed_source"), "file"))
    # declared config keys against the topic's overrides
    declared = both.select("cluster", "topic", "file", F.explode("config").alias("key", "desired"))
    configs = observed.topic_configs.select("cluster", "topic", "key", col("value").alias("observed"), "source",
                                            col("sensitive").alias("o_sensitive"))
    joined = declared.join(configs, ["cluster", "topic", "key"], "left")
    rows.append(_config_drift(joined, KAFKA_TOPIC, col("topic"), col("source") == "DYNAMIC_TOPIC_CONFIG", same))
    out = rows[0]
    for frame in rows[1:]:
        out = out.unionByName(frame)
    return out


def acl_drift(desired: Desired, observed: Observed) -> DataFrame:
    from pyspark.sql import functions as F

    col = F.col
    keys = ["cluster", "principal", "resource_type", "resource_name", "pattern_type", "operation", "permission", "host"]
    wanted = desired.bindings.select(*keys, "file")
    present = observed.acls.select(*keys)
    principals = wanted.select("cluster", "principal", "file").distinct()
    existing = present.select("cluster", "principal").distinct()
    wanted_here = wanted.join(existing, ["cluster", "principal"], "left_semi")
    missing = wanted_here.join(present, keys, "left_anti").select(
        "cluster", F.lit(KAFKA_ACL).alias("kind"), col("principal").alias("name"), F.lit("acl").alias("field"),
        binding_text(col("principal")).alias("desired"), F.lit(None).cast("string").alias("observed"),
        F.lit(None).cast("string").alias("observed_source"), "file")
    extra = (present.join(principals, ["cluster", "principal"], "inner").join(wanted.drop("file"), keys, "left_anti")
             .select("cluster", F.lit(KAFKA_ACL).alias("kind"), col("principal").alias("name"),
                     F.lit("acl").alias("field"), F.lit(None).cast("string").alias("desired"),
                     binding_text(col("principal")).alias("observed"),
                     F.lit(None).cast("string").alias("observed_source"), "file"))
    return missing.unionByName(extra)


def broker_drift(desired: Desired, observed: Observed) -> DataFrame:
    from pyspark.sql import functions as F
    from pyspark.sql.types import BooleanType

    col = F.col
    same = F.udf(_same, BooleanType(), useArrow=False)
    declared = desired.broker_configs.select(
        "cluster", F.coalesce(col("broker_id").cast("string"), F.lit("")).alias("broker"), "file",
        F.explode("config").alias("key", "desired"))
    declared = declared.join(observed.topics.select("cluster").distinct(), "cluster", "left_semi")
    present = observed.broker_configs.select("cluster", "broker", "key", col("value").alias("observed"), "source",
                                             col("sensitive").alias("o_sensitive"))
    joined = declared.join(present, ["cluster", "broker", "key"], "left")
    override = F.when(col("broker") == "", F.lit("DYNAMIC_DEFAULT_BROKER_CONFIG")).otherwise(F.lit("DYNAMIC_BROKER_CONFIG"))
    name = F.concat(F.lit("brokers/"), F.when(col("broker") == "", F.lit("default")).otherwise(col("broker")))
    return _config_drift(joined, KAFKA_BROKER_CONFIG, name, col("source") == override, same)


def run(desired: Desired, observed: Observed, cached: list | None = None) -> DataFrame:
    """Every drifted value: cluster, kind, name, field, desired, observed, observed_source, file.
    Frames cached on the way are appended to `cached` (the caller unpersists them once written)."""
    return topic_drift(desired, observed, cached).unionByName(acl_drift(desired, observed)).unionByName(
        broker_drift(desired, observed)).select(*DRIFT_COLUMNS)
