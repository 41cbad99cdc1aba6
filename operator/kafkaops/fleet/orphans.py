"""The orphans stage: what a cluster has and no manifest declares (anti-joins in Spark).

- KafkaTopic rows: topics of the snapshot that no valid KafkaTopic of that cluster declares,
  except internal ones (the snapshot's `internal` flag, or a name matching the internal-topics
  pattern, matched at the start of the name like the engine's `re.match`: by default the engine's
  protected topics, `__*`, `_schemas`, `_confluent*`, Connect's).
- KafkaAcl rows: ACL bindings of the snapshot that no valid KafkaAcl of that cluster declares
  (same principal, resource, pattern, operation, permission and host). `principal_declared`
  tells an unmanaged principal (false: nobody declares it) from a stray binding of a declared
  principal (true: `kafkaops apply` would delete it; it is in drift too).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkaops.fleet.drift import binding_text
from kafkaops.resources.kinds import KAFKA_ACL, KAFKA_TOPIC

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from kafkaops.fleet.desired import Desired
    from kafkaops.fleet.observed import Observed

ORPHAN_COLUMNS = ["cluster", "kind", "name", "detail", "partitions", "replication_factor", "resource_type",
                  "resource_name", "pattern_type", "operation", "permission", "host", "principal_declared"]


def run(desired: Desired, observed: Observed, internal_pattern: str) -> DataFrame:
    from pyspark.sql import functions as F

    col = F.col
    null = F.lit(None)
    declared_topics = desired.topics.select("cluster", "topic")
    topics = (observed.topics
              .filter(~F.coalesce(col("internal"), F.lit(False)) & ~col("topic").rlike(f"^(?:{internal_pattern})"))
              .join(declared_topics, ["cluster", "topic"], "left_anti")
              .select("cluster", F.lit(KAFKA_TOPIC).alias("kind"), col("topic").alias("name"),
                      F.concat(F.lit("partitions="), col("partitions").cast("string"), F.lit(", replicationFactor="),
                               col("replication_factor").cast("string")).alias("detail"),
                      "partitions", "replication_factor",
                      *(null.cast("string").alias(c) for c in ("resource_type", "resource_name", "pattern_type",
                                                               "operation", "permission", "host")),
                      null.cast("boolean").alias("principal_declared")))
    keys = ["cluster", "principal", "resource_type", "resource_name", "pattern_type", "operation", "permission", "host"]
    principals = desired.acls.select("cluster", "principal").distinct().withColumn("_declared", F.lit(True))
    acls = (observed.acls.join(desired.bindings.select(*keys), keys, "left_anti")
            .join(principals, ["cluster", "principal"], "left")
            .select("cluster", F.lit(KAFKA_ACL).alias("kind"), col("principal").alias("name"),
                    binding_text(col("principal")).alias("detail"), null.cast("int").alias("partitions"),
                    null.cast("int").alias("replication_factor"), "resource_type", "resource_name", "pattern_type",
                    "operation", "permission", "host",
                    F.coalesce(col("_declared"), F.lit(False)).alias("principal_declared")))
    return topics.unionByName(acls).select(*ORPHAN_COLUMNS)
