"""The desired stage: every manifest under the desired path(s), parsed and validated inside Spark.

1. The files are listed and read by Spark (`*.yaml`/`*.yml`, recursively, any Hadoop path);
   each file is one row, parsed in a task by documents.parse_files (per-document checks); a
   local run keeps the documents in few partitions (document_partitions), not one per read split.
2. The checks that need the whole set run as aggregations over the parsed documents:
   duplicates (topic, ACL principal, KafkaUser, quota entity, broker config per cluster; KafkaCluster
   names; kind/namespace/name), unknown clusterRefs (when the tree declares KafkaClusters), allowedNamespaces and
   topicPrefixes admission, and the '.'/'_' topic-name collision warning.
3. What is valid becomes the desired tables (topics, ACL bindings, broker configs, clusters);
   every issue goes to the issues table, named by file, document index and field path.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from kafkaops.fleet import hadoopfs, jvm_rows
from kafkaops.fleet.documents import DOC_COLUMNS, parse_files
from kafkaops.fleet.errors import FleetError
from kafkaops.resources.kinds import (
    KAFKA_ACL,
    KAFKA_BROKER_CONFIG,
    KAFKA_CLIENT_QUOTA,
    KAFKA_CLUSTER,
    KAFKA_TOPIC,
    KAFKA_USER,
)
from kafkaops.resources.set_rules import (
    DUPLICATE_ACL_PRINCIPAL,
    DUPLICATE_BROKER_CONFIG,
    DUPLICATE_CLUSTER,
    DUPLICATE_QUOTA_ENTITY,
    DUPLICATE_RESOURCE_NAME,
    DUPLICATE_TOPIC,
    DUPLICATE_USER,
    NAMESPACE_NOT_ALLOWED,
    TOPIC_NAME_COLLISION,
    TOPIC_PREFIX_NOT_ALLOWED,
    UNKNOWN_CLUSTER_REF,
)

if TYPE_CHECKING:
    from pyspark import Accumulator
    from pyspark.sql import Column, DataFrame, SparkSession

YAML_GLOB = "*.{yaml,yml}"


def doc_schema():  # -> StructType (pyspark imported lazily)
    from pyspark.sql.types import (
        ArrayType,
        BooleanType,
        DoubleType,
        IntegerType,
        MapType,
        StringType,
        StructField,
        StructType,
    )

    s, i, b = StringType(), IntegerType(), BooleanType()
    binding = StructType([StructField(n, s) for n in
                          ("resource_type", "resource_name", "pattern_type", "host", "operation", "permission")])
    issue = StructType([StructField("severity", s), StructField("rule", s), StructField("path", s),
                        StructField("line", i), StructField("message", s)])
    allowed = StructType([StructField("namespace", s), StructField("topic_prefixes", ArrayType(s))])
    types = {
        "file": s, "index": i, "line": i, "kind": s, "namespace": s, "name": s, "cluster": s, "cluster_from": s,
        "ref_namespace": s, "valid": b, "topic_name": s, "topic_name_path": s, "partitions": i,
        "replication_factor": i, "replica_assignment": ArrayType(ArrayType(i)), "config": MapType(s, s),
        "deletion_policy": s, "principal": s, "bindings": ArrayType(binding), "broker_id": i, "has_broker_id": b,
        "bootstrap": ArrayType(s), "max_deletions": i, "allowed_namespaces": ArrayType(allowed),
        "lines": MapType(s, i), "field_lines": MapType(s, i), "issues": ArrayType(issue),
        "mechanism": s, "iterations": i, "password_source": s, "secret_name": s, "quotas": MapType(s, DoubleType()),
        "entity": ArrayType(StructType([StructField("type", s), StructField("name", s)])), "quota_entity": s,
        "manages_acls": b, "principal_path": s,
    }
    return StructType([StructField(c, types[c]) for c in DOC_COLUMNS])


@dataclass
class Desired:
    """The desired stage's tables (DataFrames, cached) and counts for the report."""

    docs: DataFrame  # every document row (valid or not), with its own issues
    issues: DataFrame  # file, index, kind, namespace, name, cluster, severity, rule, path, line, message
    topics: DataFrame  # valid KafkaTopics
    acls: DataFrame  # valid KafkaAcls and KafkaUsers with inline ACL rules (one row per principal, `kind`,
    # bindings array)
    bindings: DataFrame  # their bindings, one row each
    broker_configs: DataFrame
    clusters: DataFrame  # valid KafkaClusters
    users: DataFrame | None = None  # valid KafkaUsers: principal, mechanism, iterations, password_source,
    # secret_name, quotas (null: not managed), bindings (null: ACLs not managed)
    client_quotas: DataFrame | None = None  # valid KafkaClientQuotas: quota_entity, entity, quotas
    valid: DataFrame | None = None  # the valid documents (cached), which the tables above select from;
    # with `line` (where the document starts) and `field_lines` (field -> line, for the report's links)
    reader: str = "off"  # the JVM reader (jvm_rows.state): on | off | not built
    jvm_files: Accumulator[int] | None = None  # files it read, once the documents are computed

    def reader_note(self) -> str:
        """How the files were read, for the stage's line."""
        if self.reader == "on" and self.jvm_files is not None:
            return f"{self.jvm_files.value:,} read in the JVM"
        if self.reader == "not built":
            return (f"all parsed in Python: the JVM reader ({jvm_rows.JAR_NAME}) is not built; "
                    "`python -m kafkaops.fleet.jvm_build` builds it (a JDK 17+)")
        return "all parsed in Python"

    def kept(self) -> Desired:
        """These tables with the valid documents and the issues computed now and kept with a plan of one
        step (a local run): the documents' own plan (parse, set rules, the join that drops the rejected)
        is some 65,000 characters, and Spark analyses a query's whole plan each time a frame is built
        from it, so every select, join and union of the later stages re-read it: 0.3-1.3 s per union of
        two frames on a small run. docs/architecture.md, "The desired tables' short plan".

        A local checkpoint keeps the rows in the block store (memory, then disk) like `persist`; on a
        cluster it would be lost with an executor, so there the cached lineage stays (computed now, so
        that the parsed documents need not be read again)."""
        from pyspark import StorageLevel

        if self.valid is None:
            return self
        if not self.valid.sparkSession.sparkContext.master.startswith("local"):
            self.valid.count()
            return self
        # the valid documents straight from the parsed ones (still cached): not first into a columnar
        # cache that the checkpoint would read back and drop (1.05-1.22 s against 1.44-1.90 s at 20,000
        # topics); the issues are already cached (the stage counted them)
        self.valid.unpersist()
        valid = self.valid.localCheckpoint(eager=True, storageLevel=StorageLevel.MEMORY_AND_DISK)
        issues = self.issues.localCheckpoint(eager=True, storageLevel=StorageLevel.MEMORY_AND_DISK)
        self.issues.unpersist()
        return replace(self, issues=issues, valid=valid, **_tables(valid))

    def unpersist(self) -> None:
        for frame in (self.docs, self.issues, self.valid):
            if frame is not None:
                frame.unpersist()
                _release_checkpoint(frame)


def _release_checkpoint(frame: DataFrame) -> None:
    """Free the blocks of a local checkpoint (`unpersist` does not: the rows belong to the plan's RDD, which
    Spark's cleaner frees only once the JVM collects it)."""
    plan = frame._jdf.logicalPlan()
    if plan.getClass().getSimpleName() == "LogicalRDD":
        plan.rdd().unpersist(False)


def read_files(spark: SparkSession, paths: list[str]) -> DataFrame:
    """(file, text) of every *.yaml / *.yml under `paths` (files or directories, any Hadoop path).

    Spark skips names starting with `_` or `.` (its hidden-file rule), like the CLI skips hidden
    directories."""
    from pyspark.errors import AnalysisException

    reader = spark.read.option("recursiveFileLookup", "true").option("pathGlobFilter", YAML_GLOB)
    try:
        frame = reader.text(paths, wholetext=True)
    except AnalysisException as exc:
        raise FleetError(f"cannot read the desired state at {', '.join(paths)}: {_first_line(exc)}") from exc
    return frame.select("_metadata.file_path", "value")


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def parse(spark: SparkSession, files: DataFrame, partitions: int | None = None,
          jvm_files: Accumulator[int] | None = None) -> DataFrame:
    """Parse and check every document, distributed: one row per document (doc_schema), in at most
    `partitions` partitions (document_partitions).

    A file the JVM reader vouches for (jvm_rows.py) has its rows made in the JVM (counted in
    `jvm_files`); every other file is parsed by documents.parse_files in a Python worker. Either way
    a file's rows are one text of JSON lines, which Spark splits and reads as typed rows. The
    reader's rows pass through the Python task untouched: the other ways of joining the two, a
    Python UDF beside the reader's column (Spark then queued the reader's rows while Python worked:
    the JVM's peak 4.5 GiB against 3.2) or two scans of the files (the reader run twice), cost more
    (docs/benchmarks.md, "Plain topic files read in the JVM")."""
    from pyspark.sql import functions as F

    file, text = (F.col(c) for c in files.columns[:2])
    on = jvm_files is not None or jvm_rows.state(spark) == "on"  # load() has asked already when it counts
    rows = jvm_rows.rows_column(file, text) if on else F.lit(None).cast("string")
    # the text goes on to Python only for a file the JVM reader left to it
    read = files.select(file.alias("file"), text.alias("text"), rows.alias("rows")).select(
        "file", F.when(F.col("rows").isNull(), F.col("text")).alias("text"), "rows")

    def blocks(part: Iterable[Any]) -> Iterator[tuple[str]]:
        for name, content, made in part:
            if made is not None and jvm_files is not None:
                jvm_files.add(1)
            block = made if made is not None else "\n".join(parse_files(((name, content),)))
            if block:
                yield (block,)

    lines = spark.createDataFrame(read.rdd.mapPartitions(blocks), "block string").select(
        F.explode(F.split("block", "\n")).alias("row"))
    parsed = lines.select(F.from_json("row", doc_schema(), {"mode": "FAILFAST"}).alias("d")).select("d.*")
    return parsed if partitions is None else parsed.coalesce(partitions)


# Spark reads the manifests in splits of spark.sql.files.maxPartitionBytes, counting 4 MB more for
# each file opened: the 1,000,000-topic fleet's 1,120 files (277 MB) are 280 splits. The parsed
# documents are cached and scanned by some thirty queries (set rules, one filter per kind, the
# plan's per-cluster lists, orphans, policy, access, the report), and a scan of 280 small
# partitions is 280 tasks whose scheduling costs more than their work: at 1,000,000 topics such a
# stage took 3-10 s for 1-4 s of task time, and the plan's union of five of them was 1,432 tasks.
# So in a local run the documents are parsed and kept in two partitions per core, or more for a
# large input (128 MB of manifests each, Spark's default split), merged from the splits without a
# shuffle. docs/benchmarks.md has the figures. A cluster (--master, spark-submit) keeps Spark's
# splits: its executors may still be coming (dynamic allocation: defaultParallelism counts the
# cores registered so far), and it has cores to spread small tasks over.
PARTITIONS_PER_CORE = 2
MANIFEST_BYTES_PER_PARTITION = 128 * 1024 * 1024


def kept_partitions(spark: SparkSession, paths: list[str]) -> int | None:
    """document_partitions for this session and the manifests under `paths`."""
    sc = spark.sparkContext
    return document_partitions(sc.master, sc.defaultParallelism, lambda: hadoopfs.total_bytes(spark, paths))


def document_partitions(master: str, cores: int, manifest_bytes: Callable[[], int | None]) -> int | None:
    """How many partitions the parsed documents are kept in (by coalesce: never more than were
    read); None on a cluster (Spark's splits). `manifest_bytes` is asked in a local run only."""
    if not master.startswith("local"):
        return None
    by_size = -(-(manifest_bytes() or 0) // MANIFEST_BYTES_PER_PARTITION)
    return max(1, PARTITIONS_PER_CORE * cores, by_size)


# --- rules across documents, as aggregations -----------------------------------------------------------


def _place() -> Column:
    """How set_rules names another document: `file[index] Kind/namespace/name`."""
    from pyspark.sql import functions as F

    return F.concat(F.col("file"), F.lit("["), F.col("index").cast("string"), F.lit("] "), F.coalesce(F.col("kind"), F.lit("")),
                    F.lit("/"), F.when(F.col("namespace").isNotNull(), F.concat(F.col("namespace"), F.lit("/")))
                    .otherwise(F.lit("")), F.coalesce(F.col("name"), F.lit("<unnamed>")))


def _suspects(docs: DataFrame) -> DataFrame:
    """The documents sharing a group hash with another document (phase 1 of set_issues)."""
    from pyspark.sql import functions as F

    col = F.col
    kind = col("kind")
    member = kind.isNotNull() & (kind != KAFKA_CLUSTER) & col("cluster").isNotNull()
    groups = F.array(
        F.when((kind == KAFKA_CLUSTER) & col("cluster").isNotNull(), F.xxhash64(F.lit("C"), col("cluster"))),
        F.when(kind.isNotNull() & (kind != KAFKA_CLUSTER) & col("namespace").isNotNull() & col("name").isNotNull(),
               F.xxhash64(F.lit("N"), kind, col("namespace"), col("name"))),
        F.when(member & (kind == KAFKA_TOPIC) & col("topic_name").isNotNull(),
               F.xxhash64(F.lit("T"), col("cluster"), F.translate(col("topic_name"), ".", "_"))),
        F.when(member & ((kind == KAFKA_ACL) | ((kind == KAFKA_USER) & col("manages_acls")))
               & col("principal").isNotNull(), F.xxhash64(F.lit("A"), col("cluster"), col("principal"))),
        F.when(member & (kind == KAFKA_USER) & col("principal").isNotNull(),
               F.xxhash64(F.lit("U"), col("cluster"), col("principal"))),
        F.when(member & col("quota_entity").isNotNull(), F.xxhash64(F.lit("Q"), col("cluster"), col("quota_entity"))),
        F.when(member & (kind == KAFKA_BROKER_CONFIG),
               F.xxhash64(F.lit("B"), col("cluster"), F.coalesce(col("broker_id").cast("string"), F.lit("")))),
    )
    offered = docs.select("file", "index", F.explode(F.filter(groups, lambda g: g.isNotNull())).alias("g"))
    crowded = offered.groupBy("g").count().filter(col("count") > 1).select("g")
    # the crowded groups and their documents are few: broadcast them, never shuffle the documents
    suspects = offered.join(F.broadcast(crowded), "g", "left_semi").select("file", "index").distinct()
    return docs.join(F.broadcast(suspects), ["file", "index"], "left_semi")


def set_issues(docs: DataFrame, clusters: list[tuple[str, str | None]]) -> DataFrame:
    """Issues that need several documents (set_rules' rules, fleet-wide). `clusters`: (name, namespace)
    of every KafkaCluster document (a small list the driver holds).

    Two phases, so that a million valid documents cost one cheap aggregation:
    1. every document offers a 64-bit hash of each group it belongs to (its KafkaCluster name; its
       kind/namespace/name; its cluster and '.'/'_'-folded topic name, principal or broker), and a
       hash aggregation finds the groups of more than one document;
    2. only the documents of those groups (usually none) go through the exact rules: their
       identities (rule, key, what, path), windows naming the other documents."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    col = F.col
    every, docs = docs, _suspects(docs)
    s = lambda c: col(c).cast("string")  # noqa: E731
    kind = col("kind")
    member = kind.isNotNull() & (kind != KAFKA_CLUSTER) & col("cluster").isNotNull()
    quoted = lambda c: F.concat(F.lit("'"), col(c), F.lit("'"))  # noqa: E731

    def identity(rule: str, when: Column, key: Column, what: Column, path: Column) -> Column:
        return F.when(when, F.struct(F.lit(rule).alias("rule"), key.alias("key"), what.alias("what"),
                                     path.alias("path")))

    broker = F.coalesce(s("broker_id"), F.lit("default"))
    identities = F.array(
        identity(DUPLICATE_CLUSTER, (kind == KAFKA_CLUSTER) & col("cluster").isNotNull(), col("cluster"),
                 F.concat(F.lit("KafkaCluster "), quoted("cluster")), F.lit("metadata.name")),
        identity(DUPLICATE_RESOURCE_NAME, kind.isNotNull() & (kind != KAFKA_CLUSTER) & col("namespace").isNotNull()
                 & col("name").isNotNull(), F.concat_ws("\u0000", kind, col("namespace"), col("name")),
                 F.concat(kind, F.lit(" "), col("namespace"), F.lit("/"), col("name")), F.lit("metadata.name")),
        identity(DUPLICATE_TOPIC, member & (kind == KAFKA_TOPIC) & col("topic_name").isNotNull(),
                 F.concat_ws("\u0000", col("cluster"), col("topic_name")),
                 F.concat(F.lit("topic "), quoted("topic_name")), col("topic_name_path")),
        identity(DUPLICATE_ACL_PRINCIPAL, member & ((kind == KAFKA_ACL) | ((kind == KAFKA_USER) & col("manages_acls")))
                 & col("principal").isNotNull(), F.concat_ws("\u0000", col("cluster"), col("principal")),
                 F.concat(F.lit("the ACLs of "), quoted("principal")),
                 F.when(kind == KAFKA_USER, F.lit("spec.acls")).otherwise(F.lit("spec.principal"))),
        identity(DUPLICATE_USER, member & (kind == KAFKA_USER) & col("principal").isNotNull(),
                 F.concat_ws("\u0000", col("cluster"), col("principal")),
                 F.concat(F.lit("KafkaUser "), quoted("principal")), col("principal_path")),
        identity(DUPLICATE_QUOTA_ENTITY, member & col("quota_entity").isNotNull(),
                 F.concat_ws("\u0000", col("cluster"), col("quota_entity")),
                 F.concat(F.lit("quota entity "), col("quota_entity")),
                 F.when(kind == KAFKA_USER, F.lit("spec.quotas")).otherwise(F.lit("spec.entity"))),
        identity(DUPLICATE_BROKER_CONFIG, member & (kind == KAFKA_BROKER_CONFIG)
                 & (col("broker_id").isNotNull() | ~col("has_broker_id")),
                 F.concat_ws("\u0000", col("cluster"), broker),
                 F.when(col("broker_id").isNull(), F.lit("the cluster-wide broker config"))
                 .otherwise(F.concat(F.lit("the config of broker "), s("broker_id"))),
                 F.when(col("has_broker_id"), F.lit("spec.brokerId")).otherwise(F.lit("spec"))),
        identity(TOPIC_NAME_COLLISION, member & (kind == KAFKA_TOPIC) & col("topic_name").isNotNull(),
                 F.concat_ws("\u0000", col("cluster"), F.translate(col("topic_name"), ".", "_")),
                 F.concat(F.lit("topic "), quoted("topic_name")), col("topic_name_path")),
    )
    place = F.concat(col("file"), F.lit("["), s("index"), F.lit("] "), F.coalesce(kind, F.lit("")), F.lit("/"),
                     F.when(col("namespace").isNotNull(), F.concat(col("namespace"), F.lit("/"))).otherwise(F.lit("")),
                     F.coalesce(col("name"), F.lit("<unnamed>")))
    identity_columns = ("file", "index", "kind", "namespace", "name", "cluster")
    offered = (docs.select(*identity_columns, "lines", "topic_name", place.alias("_place"),
                           F.explode(F.filter(identities, lambda i: i.isNotNull())).alias("i"))
               .select(*identity_columns, "lines", "topic_name", "_place", "i.*"))
    # 1. which keys are bad: a partial (hash) aggregation, no sort of the million rows;
    #    several names under one collision key <=> min != max
    stats = offered.groupBy("rule", "key").agg(F.count(F.lit(1)).alias("_n"), F.min("topic_name").alias("_min"),
                                               F.max("topic_name").alias("_max"))
    bad = stats.filter(F.when(col("rule") == TOPIC_NAME_COLLISION, col("_min") != col("_max"))
                       .otherwise(col("_n") > 1)).select("rule", "key")
    # 2. only their documents are gathered to name each other
    hits = offered.join(F.broadcast(bad), ["rule", "key"], "left_semi")
    window = Window.partitionBy("rule", "key")
    grouped = (hits.withColumn("_places", F.collect_list("_place").over(window))
               .withColumn("_names", F.collect_set("topic_name").over(window)))
    collision = col("rule") == TOPIC_NAME_COLLISION
    others = F.array_join(F.filter(col("_places"), lambda p: p != col("_place")), "; ")
    names = F.array_join(F.transform(F.array_sort(F.filter(col("_names"), lambda n: n != col("topic_name"))),
                                     lambda n: F.concat(F.lit("'"), n, F.lit("'"))), ", ")
    result = grouped.select(
        *identity_columns, F.when(collision, F.lit("warning")).otherwise(F.lit("error")).alias("severity"), "rule",
        "path", F.element_at(col("lines"), col("path")).alias("line"),
        F.when(collision, F.concat(col("what"), F.lit(" collides with "), names,
                                   F.lit(": Kafka treats '.' and '_' alike in metric names")))
        .otherwise(F.concat(col("what"), F.lit(" is declared more than once: also at "), others)).alias("message"))
    if clusters:
        result = result.unionByName(_cluster_refs(every, clusters))
    return result


def _cluster_refs(docs: DataFrame, clusters: list[tuple[str, str | None]]) -> DataFrame:
    """UnknownClusterRef (the tree declares KafkaClusters and none matches), and allowedNamespaces /
    topicPrefixes admission against the matching KafkaCluster when it is valid."""
    from pyspark.sql import functions as F

    col = F.col
    known = ", ".join(sorted({name for name, _ in clusters})) or "none"
    by_name: dict[str, list[str | None]] = {}
    for name, namespace in clusters:
        by_name.setdefault(name, []).append(namespace)
    # name -> namespaces of the KafkaClusters of that name: a literal map (the clusters are few), so
    # resolving a million clusterRefs needs no join
    table = F.create_map(*[x for name, spaces in sorted(by_name.items())
                           for x in (F.lit(name), F.array(*[F.lit(ns).cast("string") for ns in spaces]))])
    members = docs.filter(col("kind").isNotNull() & (col("kind") != KAFKA_CLUSTER) & col("cluster").isNotNull())
    namespaces_of = F.coalesce(F.element_at(table, col("cluster")), F.array().cast("array<string>"))
    matches = F.size(F.filter(namespaces_of, lambda ns: col("ref_namespace").isNull() | ns.isNull()
                              | (ns == col("ref_namespace"))))
    unknown = members.filter(matches != 1).select(
        "file", "index", "kind", "namespace", "name", "cluster", F.lit("error").alias("severity"),
        F.lit(UNKNOWN_CLUSTER_REF).alias("rule"), F.lit("spec.clusterRef.name").alias("path"),
        F.element_at(col("lines"), F.lit("spec.clusterRef.name")).alias("line"),
        F.concat(F.lit("no KafkaCluster named '"), col("cluster"), F.lit("'"),
                 F.when(col("ref_namespace").isNotNull(), F.concat(F.lit(" in namespace '"), col("ref_namespace"),
                                                                   F.lit("'"))).otherwise(F.lit("")),
                 F.lit(f" among the validated files (known: {known})")).alias("message"))
    # admission: only against a valid KafkaCluster with allowedNamespaces, for a namespaced document
    valid_clusters = (docs.filter((col("kind") == KAFKA_CLUSTER) & col("valid") & col("allowed_namespaces").isNotNull())
                      .select(col("cluster").alias("a_cluster"), col("namespace").alias("a_namespace"),
                              col("allowed_namespaces").alias("a_allowed")))
    candidates = members.filter(col("namespace").isNotNull()).join(
        F.broadcast(valid_clusters), (col("cluster") == col("a_cluster")) & (
            col("a_namespace").isNull() | (col("ref_namespace") == col("a_namespace"))))
    candidates = candidates.filter(col("a_namespace").isNull() | (col("namespace") != col("a_namespace")))
    entries = F.filter(col("a_allowed"), lambda a: a["namespace"] == col("namespace"))
    prefixes_ok = F.exists(entries, lambda e: (F.size(e["topic_prefixes"]) == 0)
                           | F.exists(e["topic_prefixes"], lambda p: F.startswith(col("topic_name"), p)))
    all_prefixes = F.array_join(F.array_sort(F.array_distinct(F.flatten(F.transform(entries, lambda e: e["topic_prefixes"])))), ", ")
    namespace_bad = F.size(entries) == 0
    prefix_bad = (col("kind") == KAFKA_TOPIC) & col("topic_name").isNotNull() & ~prefixes_ok
    admission = candidates.filter(namespace_bad | prefix_bad).select(
        "file", "index", "kind", "namespace", "name", "cluster", F.lit("error").alias("severity"),
        F.when(namespace_bad, F.lit(NAMESPACE_NOT_ALLOWED)).otherwise(F.lit(TOPIC_PREFIX_NOT_ALLOWED)).alias("rule"),
        F.when(namespace_bad, F.lit("spec.clusterRef")).otherwise(col("topic_name_path")).alias("path"),
        F.element_at(col("lines"), F.when(namespace_bad, F.lit("spec.clusterRef")).otherwise(col("topic_name_path"))).alias("line"),
        F.when(namespace_bad, F.concat(F.lit("namespace '"), col("namespace"), F.lit("' is not in KafkaCluster '"),
                                       col("cluster"), F.lit("''s allowedNamespaces")))
        .otherwise(F.concat(F.lit("topic '"), col("topic_name"), F.lit("' does not start with a prefix namespace '"),
                            col("namespace"), F.lit("' may use on KafkaCluster '"), col("cluster"), F.lit("': "),
                            all_prefixes)).alias("message"))
    return unknown.unionByName(admission)


# --- the stage ----------------------------------------------------------------------------------------------


def load(spark: SparkSession, paths: list[str]) -> Desired:
    """Read, parse and validate the desired state; the valid resources split by kind."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    col = F.col
    reader = jvm_rows.state(spark)
    jvm_files = spark.sparkContext.accumulator(0) if reader == "on" else None
    docs = parse(spark, read_files(spark, paths), kept_partitions(spark, paths), jvm_files).persist(
        StorageLevel.MEMORY_AND_DISK)
    clusters = [(r["cluster"], r["namespace"]) for r in
                docs.filter((col("kind") == KAFKA_CLUSTER) & col("cluster").isNotNull())
                .select("cluster", "namespace").distinct().collect()]
    across = set_issues(docs, clusters)
    own = docs.select("file", "index", "kind", "namespace", "name", "cluster",
                      F.explode("issues").alias("i")).select(
        "file", "index", "kind", "namespace", "name", "cluster", col("i.severity").alias("severity"),
        col("i.rule").alias("rule"), col("i.path").alias("path"), col("i.line").alias("line"),
        col("i.message").alias("message"))
    issues = own.unionByName(across.select(own.columns)).persist(StorageLevel.MEMORY_AND_DISK)
    rejected = issues.filter(col("severity") == "error").select("file", "index").distinct()
    valid = (docs.filter(col("valid")).join(F.broadcast(rejected), ["file", "index"], "left_anti")
             .drop("issues", "lines", "valid", "topic_name_path", "has_broker_id", "principal_path")
             .persist(StorageLevel.MEMORY_AND_DISK))
    return Desired(docs, issues, **_tables(valid), valid=valid, reader=reader, jvm_files=jvm_files)


def _tables(valid: DataFrame) -> dict[str, DataFrame]:
    """The valid documents split by kind: the frames of `Desired` that select from `valid`."""
    from pyspark.sql import functions as F

    col = F.col
    topics = valid.filter(col("kind") == KAFKA_TOPIC).select(
        "cluster", col("topic_name").alias("topic"), "partitions", "replication_factor", "replica_assignment",
        "config", "deletion_policy", "file", "index", "namespace", "name", "ref_namespace",
    )
    # a KafkaUser's inline ACL rules are the ACLs of its principal, exactly like a KafkaAcl's
    acls = valid.filter((col("kind") == KAFKA_ACL) | ((col("kind") == KAFKA_USER) & col("bindings").isNotNull())).select(
        "cluster", "kind", "principal", "bindings", "file", "index", "namespace", "name", "ref_namespace")
    bindings = acls.select("cluster", "principal", "file", F.explode("bindings").alias("b")).select(
        "cluster", "principal", "b.resource_type", "b.resource_name", "b.pattern_type", "b.operation",
        "b.permission", "b.host", "file")
    users = valid.filter(col("kind") == KAFKA_USER).select(
        "cluster", "principal", "mechanism", "iterations", "password_source", "secret_name", "quotas", "bindings",
        "quota_entity", "deletion_policy", "file", "index", "namespace", "name", "ref_namespace")
    client_quotas = valid.filter(col("kind") == KAFKA_CLIENT_QUOTA).select(
        "cluster", "quota_entity", "entity", "quotas", "deletion_policy", "file", "index", "namespace", "name",
        "ref_namespace")
    broker_configs = valid.filter(col("kind") == KAFKA_BROKER_CONFIG).select(
        "cluster", "broker_id", "config", "file", "index", "namespace", "name", "ref_namespace")
    kafka_clusters = valid.filter(col("kind") == KAFKA_CLUSTER).select(
        "cluster", "namespace", "bootstrap", "deletion_policy", "max_deletions", "allowed_namespaces", "file",
        "index", "name")
    return {"topics": topics, "acls": acls, "bindings": bindings, "broker_configs": broker_configs,
            "clusters": kafka_clusters, "users": users, "client_quotas": client_quotas}
