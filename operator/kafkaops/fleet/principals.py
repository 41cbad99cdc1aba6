"""The principals table: every principal of every cluster with its credential, quotas and ACLs.

For the report's "Principals" section and the `principals/` dataset. A principal is listed when a
KafkaUser or a KafkaAcl declares it or its cluster knows it: a SCRAM credential (`User:<user>`), quotas of the
entity `user=<user>`, or an ACL binding. Spark SQL only (aggregations and joins on small tables):

| column | |
|---|---|
| `cluster`, `principal` | |
| `declared_mechanism` | the KafkaUser's credential (`SCRAM-SHA-512 (4096 iterations)`), else null |
| `password_source` | `passwordSecretRef` or `generated` (where the password lives; never the password) |
| `credentials` | the cluster's credentials of the user (mechanism and iterations: all a snapshot has) |
| `quotas` | the cluster's quotas of the entity `user=<user>`, `key=value` |
| `declared_quotas` | the KafkaUser's quotas, `key=value` |
| `acl_count`, `acls` | the cluster's ACL bindings of the principal (text, sorted) |
| `file`, `index` | the KafkaUser's manifest, else the KafkaAcl's, else null |

No secret can appear: snapshots hold none, and the desired rows only name where a password is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from kafkaops.fleet.desired import Desired
    from kafkaops.fleet.observed import Observed

PRINCIPAL_COLUMNS = ["cluster", "principal", "declared_mechanism", "password_source", "credentials", "quotas",
                     "declared_quotas", "acl_count", "acls", "file", "index"]


def _number(value: Column) -> Column:
    """A quota value as the planner prints it: 1048576, not 1048576.0."""
    from pyspark.sql import functions as F

    return F.when(value == F.floor(value), value.cast("bigint").cast("string")).otherwise(value.cast("string"))


def run(desired: Desired, observed: Observed) -> DataFrame:
    from pyspark.sql import functions as F

    from kafkaops.fleet.drift import binding_text

    col = F.col
    user_of = lambda c: F.concat(F.lit("User:"), c)  # noqa: E731
    declared = desired.users.select(
        "cluster", "principal",
        F.when(col("mechanism").isNotNull(), F.concat(col("mechanism"), F.lit(" ("), col("iterations").cast("string"),
                                                      F.lit(" iterations)"))).alias("declared_mechanism"),
        "password_source",
        F.array_sort(F.transform(F.map_entries(F.coalesce("quotas", F.create_map().cast("map<string,double>"))),
                                 lambda e: F.concat(e["key"], F.lit("="), _number(e["value"])))).alias("declared_quotas"),
        "file", "index")
    credentials = observed.scram_credentials.groupBy("cluster", user_of(col("user")).alias("principal")).agg(
        F.array_sort(F.collect_list(F.concat(col("mechanism"), F.lit(" ("), col("iterations").cast("string"),
                                             F.lit(" iterations)")))).alias("credentials"))
    quotas = (observed.client_quotas.filter(col("entity") == F.concat(F.lit("user="), col("user")))
              .groupBy("cluster", user_of(col("user")).alias("principal"))
              .agg(F.array_sort(F.collect_list(F.concat(col("key"), F.lit("="), _number(col("value"))))).alias("quotas")))
    acls = observed.acls.groupBy("cluster", "principal").agg(
        F.count(F.lit(1)).alias("acl_count"), F.array_sort(F.collect_list(binding_text(col("principal")))).alias("acls"))
    keys = ["cluster", "principal"]
    acl_manifests = desired.acls.filter(col("kind") != "KafkaUser").select(
        "cluster", "principal", col("file").alias("acl_file"), col("index").alias("acl_index"))
    return (declared.join(acl_manifests, keys, "full").join(credentials, keys, "full").join(quotas, keys, "full")
            .join(acls, keys, "full")
            .select("cluster", "principal", "declared_mechanism", "password_source",
                    F.coalesce("credentials", F.array().cast("array<string>")).alias("credentials"),
                    F.coalesce("quotas", F.array().cast("array<string>")).alias("quotas"),
                    F.coalesce("declared_quotas", F.array().cast("array<string>")).alias("declared_quotas"),
                    F.coalesce("acl_count", F.lit(0)).cast("int").alias("acl_count"),
                    F.coalesce("acls", F.array().cast("array<string>")).alias("acls"),
                    F.when(col("file").isNotNull(), col("file")).otherwise(col("acl_file")).alias("file"),
                    F.when(col("file").isNotNull(), col("index")).otherwise(col("acl_index")).alias("index")))
