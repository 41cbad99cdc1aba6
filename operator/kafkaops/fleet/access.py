"""The access stage: for every principal, the topics it can read and write, and the bindings that grant it.

Kafka's authorizer semantics, for the Topic bindings whose operation is Read, Write or All:
a binding applies to a topic when its pattern is LITERAL with the topic's name, LITERAL `*`
(every topic), or PREFIXED with a prefix of the topic's name; Deny wins over Allow. A binding of
the wildcard principal (`User:*`) applies to every principal: its Allow rows keep the principal
`User:*` (read: "every principal"), its Denies are applied to every principal's rows.

No cross product: LITERAL bindings are an equi-join on the name; PREFIXED ones an equi-join on
the topic's prefixes of the lengths the cluster's prefixed bindings have (a topic of n
characters offers at most as many keys as there are distinct prefix lengths); only LITERAL `*`
bindings meet every topic of their cluster, which is what they mean.

Columns: cluster, principal, topic, access (read|write), granted_by (the Allow bindings, as
text), denied_by (matching Deny bindings, the wildcard principal's included), effective (some
Allow, and no Deny from every host `*`; a Deny from one host only leaves the access effective
from the others).

Not modelled: super.users, and authorizers other than Kafka's StandardAuthorizer/AclAuthorizer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkaops.fleet.drift import binding_text

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

ACCESS_COLUMNS = ["cluster", "principal", "topic", "access", "granted_by", "denied_by", "effective"]
_OPERATIONS = {"Read": ["read"], "Write": ["write"], "All": ["read", "write"]}
MAX_PREFIX_LENGTHS = 4096


def matches(topics: DataFrame, bindings: DataFrame) -> DataFrame:
    """(binding, topic) pairs where the binding's pattern covers the topic: cluster, principal, topic,
    permission, host, operation, binding (text)."""
    from pyspark.sql import functions as F

    col = F.col
    relevant = (bindings.filter((col("resource_type") == "Topic") & col("operation").isin(*_OPERATIONS))
                .select("cluster", "principal", "resource_name", "pattern_type", "operation", "permission", "host",
                        binding_text(col("principal")).alias("binding")))
    names = topics.select("cluster", "topic").distinct()
    literal = relevant.filter((col("pattern_type") == "Literal") & (col("resource_name") != "*"))
    by_name = literal.join(names, (literal["cluster"] == names["cluster"]) & (literal["resource_name"] == names["topic"]))
    by_name = by_name.select(literal["cluster"], "principal", "topic", "permission", "host", "operation", "binding")
    wildcard = relevant.filter((col("pattern_type") == "Literal") & (col("resource_name") == "*"))
    prefixed = relevant.filter(col("pattern_type") == "Prefixed").withColumn("_len", F.length("resource_name"))
    # what the driver needs to shape the joins: the distinct prefix lengths (and -1 when some binding is '*')
    shape = (relevant.filter(col("pattern_type") == "Prefixed").select(F.length("resource_name").alias("n"))
             .unionByName(wildcard.select(F.lit(-1).alias("n"))).distinct().limit(MAX_PREFIX_LENGTHS + 2).collect())
    lengths = sorted(r[0] for r in shape if r[0] >= 0)
    parts = [by_name]
    if any(r[0] < 0 for r in shape):
        parts.append(wildcard.join(names, "cluster").select("cluster", "principal", "topic", "permission", "host",
                                                            "operation", "binding"))
    if lengths:
        if len(lengths) > MAX_PREFIX_LENGTHS:  # pragma: no cover - absurd prefixes; stays correct, just slower
            keys = F.transform(F.sequence(F.lit(1), F.length("topic")), lambda n: F.substring(col("topic"), 1, n))
        else:
            keys = F.filter(F.transform(F.array(*(F.lit(n) for n in lengths)),
                                        lambda n: F.when(F.length("topic") >= n, F.substring(col("topic"), F.lit(1), n))),
                            lambda k: k.isNotNull())
        prefixes = names.select("cluster", "topic", F.explode(keys).alias("resource_name"))
        parts.append(prefixed.join(prefixes, ["cluster", "resource_name"]).select(
            "cluster", "principal", "topic", "permission", "host", "operation", "binding"))
    out = parts[0]
    for part in parts[1:]:
        out = out.unionByName(part)
    mapping = F.create_map(*[x for op, kinds in _OPERATIONS.items() for x in (F.lit(op), F.array(*map(F.lit, kinds)))])
    return out.withColumn("access", F.explode(mapping[col("operation")]))


def run(topics: DataFrame, bindings: DataFrame) -> DataFrame:
    """Who can read/write what: one row per (cluster, principal, topic, access) that some Allow grants."""
    from pyspark.sql import functions as F

    col = F.col
    pairs = matches(topics, bindings)
    per = pairs.groupBy("cluster", "principal", "topic", "access").agg(
        F.array_sort(F.collect_set(F.when(col("permission") == "Allow", col("binding")))).alias("granted_by"),
        F.array_sort(F.collect_set(F.when(col("permission") == "Deny", col("binding")))).alias("denied_by"),
        F.max((col("permission") == "Deny") & (col("host") == "*")).alias("_denied_everywhere"))
    granted = per.filter(F.size("granted_by") > 0)
    wildcard_denies = (pairs.filter((col("permission") == "Deny") & col("principal").endswith(":*"))
                       .groupBy("cluster", "topic", "access").agg(
                           F.array_sort(F.collect_set("binding")).alias("_all_denied_by"),
                           F.max(col("host") == "*").alias("_all_denied_everywhere")))
    joined = granted.join(wildcard_denies, ["cluster", "topic", "access"], "left")
    return joined.select(
        "cluster", "principal", "topic", "access", "granted_by",
        F.array_sort(F.array_distinct(F.concat(col("denied_by"), F.coalesce(col("_all_denied_by"),
                                                                            F.array().cast("array<string>"))))).alias("denied_by"),
        (~col("_denied_everywhere") & ~F.coalesce(col("_all_denied_everywhere"), F.lit(False))).alias("effective"),
    ).select(*ACCESS_COLUMNS)


def top_principals(rows: DataFrame, limit: int) -> DataFrame:
    """The `limit` principals with the most effective access (run's rows): how many topics each
    can read and write, and the clusters they are in, most first (ties by principal).

    run's rows are one per (cluster, principal, topic, access), so counting rows counts distinct
    topics: no distinct aggregate (Spark expands each into a copy of the rows and a shuffle of
    its own: at 1,070,950 rows, 2.8-3.1 s against 0.6 s, warm, the same 15 rows)."""
    from pyspark.sql import functions as F

    col = F.col
    return (rows.filter(col("effective")).groupBy("principal").agg(
        F.count(F.when(col("access") == "read", True)).alias("read"),
        F.count(F.when(col("access") == "write", True)).alias("write"),
        F.array_sort(F.collect_set("cluster")).alias("clusters"))
        .orderBy((col("read") + col("write")).desc(), col("principal")).limit(limit))
