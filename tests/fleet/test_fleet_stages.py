"""Each stage of the fleet pipeline on small inputs: manifests and snapshots written to tmp dirs,
read by the real readers, checked row by row."""

from __future__ import annotations

import dataclasses
import gc
import shutil
import types
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from bench_helpers import load_bench
from fleet_helpers import SnapTopic, acl, client_quota, entry, kcluster, topic, user, write_snapshot, write_yaml

from kafkaops.fleet import access, desired, drift, observed, orphans, plan
from kafkaops.fleet import policy as policy_stage
from kafkaops.fleet.documents import directory_cluster, parse_file, parse_files, schema_predicate
from kafkaops.reconcile.plan import DEFAULT_PROTECTED_TOPICS
from kafkaops.resources.loader import find_yaml_files, load_paths
from kafkaops.resources.schemas import validator_for
from kafkaops.resources.validation import load_and_validate

CORPUS = Path(__file__).resolve().parents[1] / "resources" / "corpus"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def rows(frame) -> list[dict[str, Any]]:
    return [r.asDict(recursive=True) for r in frame.collect()]


# --- documents (pure Python) -----------------------------------------------------------------------------------


def test_directory_convention_and_cluster_ref():
    assert directory_cluster("file:/repo/clusters/prod/topics/a.yaml") == "prod"
    assert directory_cluster("/repo/teams/clusters/dev/a.yaml") == "dev"
    assert directory_cluster("/repo/clusters/a.yaml") is None  # the file itself is not a <name> directory
    text = "\n---\n".join([
        "apiVersion: kafkaops.io/v1alpha1\nkind: KafkaTopic\nmetadata: {name: a}\nspec: {partitions: 1}",
        "apiVersion: kafkaops.io/v1alpha1\nkind: KafkaTopic\nmetadata: {name: b}\nspec: {clusterRef: {name: dev}}",
    ])
    first, second = parse_file("file:/repo/clusters/prod/t.yaml", text)
    assert (first["cluster"], first["cluster_from"], first["valid"]) == ("prod", "directory", True)
    assert (second["cluster"], second["cluster_from"], second["valid"]) == ("dev", "clusterRef", True)
    assert [i["rule"] for i in second["issues"]] == ["ClusterRefOutsideDirectory"]
    (outside,) = parse_file("/repo/teams/t.yaml", text.split("\n---\n")[0])
    assert outside["cluster"] is None and not outside["valid"]
    assert any(i["rule"] == "SchemaViolation" and i["path"] == "spec.clusterRef" for i in outside["issues"])


def test_yaml_error_is_a_row_naming_the_file_and_line():
    (row,) = parse_file("file:/repo/clusters/prod/broken.yaml", "kind: [KafkaTopic\nmetadata: {}\n")
    assert row["file"] == "/repo/clusters/prod/broken.yaml" and not row["valid"]
    issue = row["issues"][0]
    assert (issue["severity"], issue["rule"]) == ("error", "YamlSyntaxError") and issue["line"]
    assert "YAML syntax error" in issue["message"]


def test_fast_schema_check_accepts_exactly_what_the_schema_accepts():
    documents = load_paths([CORPUS, EXAMPLES]).documents
    assert len(documents) > 50
    for doc in documents:
        assert schema_predicate(doc.kind)(doc.body) == validator_for(doc.kind).is_valid(doc.body), doc.source


def test_parsing_makes_no_reference_cycles_so_a_task_parses_with_the_collector_paused():
    """parse_files pauses the cyclic collector while a task parses its files: safe only if loading
    and checking a document leaves nothing only that collector would free (a recursive closure in
    the one-walk construction once held each document's loader and maps until a collection)."""
    texts = [(f"file:{path}", path.read_text()) for path in find_yaml_files(CORPUS) + find_yaml_files(EXAMPLES)]
    texts.append(("file:/repo/clusters/prod/fallback.yaml",  # an anchor and a merge key: PyYAML's own walk
                  "apiVersion: kafkaops.io/v1alpha1\nkind: KafkaTopic\nmetadata: {name: m}\n"
                  "spec: {<<: &base {partitions: 3}, replicationFactor: 1, config: {}}\n"))
    texts.append(("file:/repo/clusters/prod/broken.yaml", "kind: [KafkaTopic\n"))
    gc.collect()
    assert gc.isenabled()
    gc.set_debug(gc.DEBUG_SAVEALL)  # whatever a collection finds from here on is kept for the count
    try:
        during = [gc.isenabled() for _ in parse_files(texts)]
        assert gc.isenabled()  # resumed when the iteration ends
        gc.collect()
        # each such cycle holds one of our functions (and the loader, for the documents' walks);
        # other garbage a background thread may make meanwhile is not counted
        found = [o for o in gc.garbage if isinstance(o, yaml.CSafeLoader)
                 or (isinstance(o, types.FunctionType) and o.__module__.startswith("kafkaops."))]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert len(during) > 50 and not any(during)
    assert found == []


# --- desired -------------------------------------------------------------------------------------------------------


def test_desired_stage_finds_what_kafkaops_validate_finds(spark, tmp_path):
    """Per-document checks run distributed and the set rules as aggregations: the same issues
    as `kafkaops validate` (load_and_validate) on a tree full of mistakes."""
    tree = tmp_path / "repo"
    write_yaml(tree / "infra" / "clusters.yaml", kcluster("prod", namespace="kafka", allowedNamespaces=[
        {"namespace": "orders", "topicPrefixes": ["orders."]}]), kcluster("dev"))
    prod = {"name": "prod", "namespace": "kafka"}
    write_yaml(tree / "teams" / "a.yaml",
               topic("orders.a", namespace="orders", clusterRef=prod),
               topic("payments.x", namespace="orders", clusterRef=prod),  # TopicPrefixNotAllowed
               topic("billing.x", namespace="billing", clusterRef=prod),  # NamespaceNotAllowed
               topic("dup", cluster="dev"), topic("my.topic", cluster="dev"),
               acl("app", "User:app", [entry("Topic", "dup", ["Read"])], cluster="dev"))
    write_yaml(tree / "teams" / "b.yaml",
               topic("dup", cluster="dev", partitions=0),  # DuplicateTopic (and its own error)
               topic("my_topic", cluster="dev"),  # TopicNameCollision warning
               acl("app2", "User:app", [entry("Topic", "x", ["Write"])], cluster="dev"),  # DuplicateAclPrincipal
               topic("ghost", cluster="nowhere"))  # UnknownClusterRef
    (tree / "teams" / "c.yml").write_text("apiVersion: kafkaops.io/v1alpha1\nkind: KafkaTopic\nmetadata: {name: [\n")
    loaded = desired.load(spark, [str(tree)])
    got = {(Path(i["file"]).name, i["index"], i["rule"], i["severity"]) for i in rows(loaded.issues)}
    reference = load_and_validate([tree])
    want = {(Path(i.file).name, i.index, i.rule, str(i.severity)) for i in (*reference.errors, *reference.warnings)}
    assert got == want
    assert {"TopicPrefixNotAllowed", "NamespaceNotAllowed", "DuplicateTopic", "DuplicateAclPrincipal",
            "TopicNameCollision", "UnknownClusterRef", "YamlSyntaxError"} <= {rule for _, _, rule, _ in got}
    valid_topics = sorted(r["topic"] for r in rows(loaded.topics))
    assert valid_topics == sorted(t.topic_name for t in reference.topics())
    duplicate = next(i for i in rows(loaded.issues) if i["rule"] == "DuplicateTopic" and i["file"].endswith("a.yaml"))
    assert "also at" in duplicate["message"] and "b.yaml[0]" in duplicate["message"]


def test_documents_are_kept_in_few_partitions_not_one_per_read_split(spark, tmp_path):
    """40 files are 10 read splits (4 MB counted per file opened, 16 MB a split); the parsed and
    the valid documents, scanned by every later query, are kept in two partitions per core (this
    session: 2 cores), every document still there."""
    tree = tmp_path / "repo"
    for i in range(40):
        write_yaml(tree / f"t{i:02}.yaml", topic(f"t.{i}", cluster="dev"), topic(f"u.{i}", cluster="dev"))
    assert desired.read_files(spark, [str(tree)]).rdd.getNumPartitions() == 10
    loaded = desired.load(spark, [str(tree)])
    assert spark.sparkContext.defaultParallelism == 2
    assert loaded.docs.rdd.getNumPartitions() == 4
    assert loaded.valid.rdd.getNumPartitions() == 4
    assert sorted(r["topic"] for r in rows(loaded.topics)) == sorted(f"{p}.{i}" for i in range(40) for p in "tu")
    loaded.unpersist()


def test_a_large_desired_tree_keeps_a_partition_per_128_mb_and_a_cluster_keeps_sparks_splits():
    assert desired.document_partitions("local[2]", 2, lambda: None) == 4
    assert desired.document_partitions("local[*]", 2, lambda: 277 * 10**6) == 4  # the million-topic fleet
    assert desired.document_partitions("local[*]", 2, lambda: 3 * 2**30) == 24  # ten times that: 128 MB each
    assert desired.document_partitions("local[64]", 64, lambda: 3 * 2**30) == 128

    def unasked() -> int:
        raise AssertionError("a cluster's run measures no manifests")

    assert desired.document_partitions("yarn", 2, unasked) is None
    assert desired.document_partitions("spark://master:7077", 200, unasked) is None


# --- observed ------------------------------------------------------------------------------------------------------


def test_observed_stage_skips_bad_snapshots_naming_the_file(spark, tmp_path):
    snaps = tmp_path / "snaps"
    write_snapshot(snaps, "good", [SnapTopic("t1", configs={"retention.ms": "1000"})])
    write_snapshot(snaps, "future", [SnapTopic("t")], header={"version": 2})
    write_snapshot(snaps, "alien", header={"format": "something-else"})
    write_snapshot(snaps, "moved", header={"cluster": "elsewhere"})
    write_snapshot(snaps, "notjson")
    (snaps / "notjson" / "header.json").write_text("{not json")
    write_snapshot(snaps, "partial")
    (snaps / "partial" / "acls.parquet").unlink()
    write_snapshot(snaps, "retyped")
    pq.write_table(pa.table({"cluster": ["retyped"], "topic": ["t"], "topic_id": [None], "partitions": ["three"],
                             "replication_factor": [1], "internal": [False]}), snaps / "retyped" / "topics.parquet")
    write_snapshot(snaps, ".good.tmp-1234")  # a write in progress: never read
    seen = observed.load(spark, str(snaps))
    assert seen.clusters == ["good"]
    problems = {p.cluster: p for p in seen.problems}
    assert set(problems) == {"future", "alien", "moved", "notjson", "partial", "retyped"}
    assert problems["future"].file.endswith("future/header.json") and "version 2" in problems["future"].message
    assert problems["future"].rule == "SnapshotUnknownFormat" and problems["alien"].rule == "SnapshotUnknownFormat"
    assert problems["moved"].rule == "SnapshotClusterMismatch"
    assert problems["notjson"].rule == "SnapshotUnreadable"
    assert problems["partial"].file.endswith("partial/acls.parquet") and problems["partial"].rule == "SnapshotMissingTable"
    assert problems["retyped"].file.endswith("retyped/topics.parquet") and "partitions is string" in problems["retyped"].message
    assert [r["topic"] for r in rows(seen.topics)] == ["t1"]
    assert rows(seen.topic_configs)[0]["value"] == "1000"


def test_observed_tables_are_the_snapshot_format():
    format_module = pytest.importorskip("kafkaops.snapshot.format")
    for table, columns in observed.TABLES.items():
        schema = format_module.SCHEMAS[table]
        assert [name for name, _ in columns] == schema.names, table
        for name, spark_type in columns:
            arrow = schema.field(name).type
            expected = {"string": pa.string(), "int": pa.int32(), "boolean": pa.bool_(),
                        "array<int>": pa.list_(pa.int32()), "double": pa.float64()}[spark_type]
            assert arrow == expected, (table, name)


# --- plan, drift, orphans, access on one small fleet ---------------------------------------------------------------


def _storage_ids(spark) -> set[int]:
    return {info.id() for info in spark.sparkContext._jsc.sc().getRDDStorageInfo()}


def test_kept_tables_have_the_same_rows_a_one_step_plan_and_free_their_blocks(spark, tmp_path):
    """`Desired.kept` (what the pipeline uses after the desired stage): every table the later stages
    read has the rows `load` gives, from a plan of one step instead of the parse's whole plan, which
    Spark would analyse again for every frame built from it; `unpersist` frees the kept rows."""
    tree = tmp_path / "repo"
    write_yaml(tree / "clusters" / "c1" / "all.yaml", kcluster("c1"),
               topic("a", config={"retention.ms": "1000"}), topic("b", partitions=0),  # b: invalid
               acl("app", "User:app", [entry("Topic", "a", ["Read"])]),
               user("svc", quotas={"producer_byte_rate": 1024}, acls=[entry("Topic", "a", ["Write"])]),
               client_quota("apps", {"clientId": "app"}, {"request_percentage": 50}))
    loaded = desired.load(spark, [str(tree)])
    tables = ("valid", "issues", "topics", "acls", "bindings", "broker_configs", "clusters", "users", "client_quotas")

    def contents(d: desired.Desired) -> dict[str, list[str]]:
        return {name: sorted(repr(sorted(r.items())) for r in rows(getattr(d, name))) for name in tables}

    before = contents(loaded)
    assert all(before[name] for name in ("topics", "issues", "users", "bindings", "client_quotas"))
    stored = _storage_ids(spark)
    kept = loaded.kept()
    assert contents(kept) == before
    for name in ("valid", "issues"):
        plan = getattr(kept, name)._jdf.queryExecution().analyzed()
        assert plan.getClass().getSimpleName() == "LogicalRDD", name
        assert len(getattr(loaded, name)._jdf.queryExecution().analyzed().toString()) > 20 * len(plan.toString())
    checkpoints = _storage_ids(spark) - stored
    assert len(checkpoints) == 2
    kept.unpersist()
    assert not checkpoints & _storage_ids(spark)


def test_kept_leaves_a_cluster_runs_tables_as_they_are_computed_now():
    """On a cluster a local checkpoint would be lost with its executor: the cached lineage stays, its
    rows computed now (the pipeline then drops the parsed documents' cache)."""
    counted: list[int] = []
    cluster_session_double = types.SimpleNamespace(sparkContext=types.SimpleNamespace(master="spark://m:7077"))
    valid_double = types.SimpleNamespace(sparkSession=cluster_session_double, count=lambda: counted.append(1) or 3)
    tables = desired.Desired(*(object() for _ in range(7)), valid=valid_double)
    assert tables.kept() is tables
    assert counted == [1]


@pytest.fixture(scope="module")
def small(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("small")
    write_yaml(root / "repo" / "clusters" / "c1" / "all.yaml",
               kcluster("c1", topicDeletion={"policy": "Delete", "maxDeletionsPerReconcile": 1}),
               topic("same", config={"cleanup.policy": "compact,delete", "min.cleanable.dirty.ratio": "0.5"}),
               topic("retention", config={"retention.ms": "1000"}),
               topic("grow", partitions=6),
               topic("shrink", partitions=1),  # refused
               topic("wide", rf=3),  # more than the 2 brokers: refused
               topic("secret", config={"retention.ms": "5000"}),
               topic("fresh"),
               topic("steady", partitions=2, config={"retention.ms": "1000"}),
               acl("app", "User:app", [entry("Topic", "same", ["Read", "Write"]),
                                       entry("Topic", "pre.", ["Read"], pattern="Prefixed")]),
               {"apiVersion": "kafkaops.io/v1alpha1", "kind": "KafkaBrokerConfig", "metadata": {"name": "b"},
                "spec": {"config": {"log.cleaner.threads": 2, "unclean.leader.election.enable": False}}})
    write_snapshot(root / "snaps", "c1", [
        SnapTopic("same", configs={"cleanup.policy": "delete,compact", "min.cleanable.dirty.ratio": "0.50"}),
        SnapTopic("retention", configs={"retention.ms": "2000"}),
        SnapTopic("grow"), SnapTopic("shrink"), SnapTopic("wide", rf=1),
        SnapTopic("steady", partitions=2, configs={"retention.ms": "1000"}),
        SnapTopic("secret", configs={"retention.ms": "5000"}, sensitive={"retention.ms"}),
        SnapTopic("pre.orphan"), SnapTopic("pre.other"), SnapTopic("__consumer_offsets", internal=True),
        SnapTopic("_schemas"),
    ], acls=[
        ("User:app", "Topic", "same", "Literal", "Read", "Allow", "*"),
        ("User:app", "Topic", "stale", "Literal", "Read", "Allow", "*"),
        ("User:etl", "Topic", "pre.", "Prefixed", "All", "Allow", "*"),
        ("User:etl", "Topic", "pre.other", "Literal", "Write", "Deny", "*"),
        ("User:etl", "Topic", "pre.o", "Prefixed", "Read", "Deny", "10.0.0.1"),
        ("User:*", "Topic", "*", "Literal", "Read", "Allow", "*"),
        ("User:*", "Topic", "secret", "Literal", "Read", "Deny", "*"),
        ("User:old", "Topic", "x", "Literal", "Read", "Allow", "*"),
        ("User:old", "Topic", "x", "Prefixed", "All", "Deny", "*"),
    ], broker_configs=[("", "log.cleaner.threads", "1", "DYNAMIC_DEFAULT_BROKER_CONFIG")], brokers=(0, 1))
    d = desired.load(spark, [str(root / "repo")])
    o = observed.load(spark, str(root / "snaps"))
    return d, o


def test_plan_stage_runs_the_engine_planner(small):
    d, o = small
    out = rows(plan.run(d, o, prune=True))
    resources = {(r["kind"], r["name"]): r for r in out if r["record"] == "resource"}
    assert resources[("KafkaTopic", "retention")]["action"] == "update"
    assert resources[("KafkaTopic", "retention")]["changes"] == [{"field": "config.retention.ms", "old": "2000",
                                                                  "new": "1000"}]
    assert resources[("KafkaTopic", "grow")]["action"] == "partition-increase"
    assert resources[("KafkaTopic", "shrink")]["problem_reason"] == "PartitionDecrease"
    assert resources[("KafkaTopic", "wide")]["problem_reason"] == "InvalidReplicationFactor"
    assert resources[("KafkaTopic", "fresh")]["action"] == "create"
    assert resources[("KafkaTopic", "secret")]["changes"][0]["new"] == "(sensitive)"
    assert ("KafkaTopic", "same") not in resources  # Kafka-aware equality: list order, 0.5 == 0.50
    assert resources[("KafkaAcl", "User:app")]["action"] == "update"
    assert resources[("KafkaBrokerConfig", "brokers/default")]["action"] == "update"
    # prune: two undeclared topics, a cap of one: none is deleted, each says why
    pruned = [r for r in resources.values() if r["action"] == "delete"]
    assert {r["name"] for r in pruned} == {"pre.orphan", "pre.other"}
    assert {r["problem_reason"] for r in pruned} == {"DeletionCapExceeded"}
    assert resources[("KafkaTopic", "fresh")]["file"].endswith("all.yaml")


def test_skipping_settled_topics_changes_nothing(small):
    """cluster_rows leaves out the topics `settled_topics` proves unchanged (declaration and snapshot
    rows): the planner's rows are the same as planning every topic (prune on and off)."""
    d, o = small
    headers = {name: h.as_dict() for name, h in o.headers.items()}
    (row,) = plan.cluster_rows(d, o).collect()
    (every,) = plan.cluster_rows(d, o, skip_settled=False).collect()
    fast, full = plan.decode_row(row.asDict()), plan.decode_row(every.asDict())
    assert len(full["d_topics"]) == 8
    # "same" is equal only the Kafka way (the planner decides); "secret" is hidden by the cluster
    assert sorted(t["topic"] for t in full["d_topics"] if t not in fast["d_topics"]) == ["steady"]
    assert "steady" not in {t["topic"] for t in fast["o_topics"]} | {p[0] for p in fast["o_partitions"]}
    assert "steady" in {t["topic"] for t in full["o_topics"]}
    for prune in (False, True):
        skipped = list(plan.plan_cluster(fast, headers, prune, DEFAULT_PROTECTED_TOPICS))
        planned = list(plan.plan_cluster(full, headers, prune, DEFAULT_PROTECTED_TOPICS))
        assert sorted(map(repr, skipped)) == sorted(map(repr, planned))
        assert any(r[0] == "resource" for r in planned)


def test_a_large_cluster_is_planned_in_several_tasks_with_the_same_rows(small):
    """A cluster with more declared topics to plan than `task_topics` is split by topic: each topic
    whole in one task, the undeclared topics (names only) and every other kind in shard 0, and the
    rows those tasks make are the rows of one task (prune on and off: the cap counts every shard)."""
    d, o = small
    headers = {name: h.as_dict() for name, h in o.headers.items()}
    (whole,) = plan.cluster_rows(d, o).collect()
    split: dict[str, int] = {}
    tasks = plan.cluster_rows(d, o, task_topics=2, split=split).collect()
    assert split == {"c1": 4}  # 7 declared topics left to plan (all but "steady"), 2 per task
    assert 1 < len(tasks) <= 4 and sorted(r["shard"] for r in tasks) == sorted({r["shard"] for r in tasks})
    shards = {r["shard"]: plan.decode_row(r.asDict()) for r in tasks}
    home = {t["topic"]: s for s, row in shards.items() for t in row["d_topics"]}
    assert sorted(home) == sorted(t["topic"] for t in plan.decode_row(whole.asDict())["d_topics"])
    undeclared = {"pre.orphan", "pre.other", "__consumer_offsets", "_schemas"}
    for shard, row in shards.items():
        assert {t["topic"] for t in row["o_topics"]} <= {t for t, s in home.items() if s == shard} | (
            undeclared if shard == 0 else set())
        assert all(home[p[0]] == shard for p in row["o_partitions"])  # no undeclared topic's partitions
        assert all(home[c["topic"]] == shard for c in row["o_configs"])
        if shard != 0:
            assert not any(row[k] for k in plan._LISTS if k not in ("d_topics", "o_topics", "o_partitions", "o_configs"))
    assert undeclared <= {t["topic"] for t in shards[0]["o_topics"]}
    assert shards[0]["d_acls"] and shards[0]["d_brokers"] and shards[0]["d_cluster"]
    for prune in (False, True):
        one = list(plan.plan_cluster(plan.decode_row(whole.asDict()), headers, prune, DEFAULT_PROTECTED_TOPICS))
        several = [r for row in shards.values() for r in plan.plan_cluster(row, headers, prune, DEFAULT_PROTECTED_TOPICS)]
        assert sorted(map(repr, several)) == sorted(map(repr, one))
        assert any(isinstance(r, tuple) and r[0] == "note" for r in one) != prune  # kept-undeclared note
    # the stage itself, through Spark and JSON
    key = lambda r: repr(sorted(r.items()))  # noqa: E731
    assert sorted(rows(plan.run(d, o, prune=True, task_topics=2)), key=key) == sorted(rows(plan.run(d, o, prune=True)),
                                                                                       key=key)


def test_only_the_clusters_with_more_to_plan_are_split(spark, tmp_path):
    """Two clusters: c1 with five new topics to plan (three tasks of two), c2 with two (one task);
    the rows are those of one task per cluster."""
    write_yaml(tmp_path / "repo" / "c1.yaml", kcluster("c1"), *(topic(f"new.{i}") for i in range(5)))
    write_yaml(tmp_path / "repo" / "c2.yaml", kcluster("c2"), topic("kept", cluster="c2", partitions=2),
               topic("grow", cluster="c2", partitions=4))
    write_snapshot(tmp_path / "snaps", "c1", [SnapTopic("legacy")])
    write_snapshot(tmp_path / "snaps", "c2", [SnapTopic("kept", partitions=2), SnapTopic("grow", partitions=2),
                                               SnapTopic("legacy")])
    d, o = desired.load(spark, [str(tmp_path / "repo")]), observed.load(spark, str(tmp_path / "snaps"))
    split: dict[str, int] = {}
    tasks = plan.cluster_rows(d, o, task_topics=2, split=split).collect()
    assert split == {"c1": 3}
    assert [r["shard"] for r in tasks if r["cluster"] == "c2"] == [0]
    assert len([r for r in tasks if r["cluster"] == "c1"]) > 1
    key = lambda r: repr(sorted(r.items()))  # noqa: E731
    several = sorted(rows(plan.run(d, o, prune=True, task_topics=2)), key=key)
    assert several == sorted(rows(plan.run(d, o, prune=True)), key=key)
    assert {(r["cluster"], r["name"]) for r in several if r["record"] == "resource"} == {
        *(("c1", f"new.{i}") for i in range(5)), ("c2", "grow")}
    # one note per cluster, from its first task: "legacy" is undeclared and kept (policy Retain)
    assert sorted(r["cluster"] for r in several if r["record"] == "note" and "1 undeclared" in r["note"]) == ["c1", "c2"]


def test_the_settled_sets_hidden_names_are_is_sensitives(spark):
    """The settled set tells a config name the planner would hide by a hash set of the catalog's
    names and the pattern for the others: the same answer as `is_sensitive` for every catalog name
    and for names of each case the pattern covers."""
    from pyspark.sql import functions as F

    from kafkaops.reconcile.configs import is_sensitive
    from kafkaops.resources.topic_configs import TOPIC_CONFIGS

    names = [*TOPIC_CONFIGS, "x.password", "Sasl.JAAS.config", "my.SECRET", "tls.key", "keystore.key.type",
             "api.token", "a.private.thing", "credentials", "retention.MS", "not.hidden", "été.key"]
    frame = spark.createDataFrame([(n,) for n in names], "key string")
    got = {r["key"]: r["hidden"] for r in frame.select("key", plan.hidden_name(F.col("key")).alias("hidden")).collect()}
    assert got == {n: is_sensitive(n) for n in names}
    assert any(got.values()) and not all(got.values())


@pytest.fixture(scope="module")
def shapes(spark, tmp_path_factory):
    """One declared topic per rule of settled_topics, each differing from a settled one in one way."""
    root = tmp_path_factory.mktemp("shapes")
    declared = [topic("ok", partitions=2, rf=2, config={"retention.ms": "1000"}),
                topic("ok.bare", partitions=None, rf=None),
                topic("value", config={"retention.ms": "1000"}),
                topic("source", config={"retention.ms": "1000"}),
                topic("hidden", config={"retention.ms": "1000"}),
                topic("extra.key", config={"retention.ms": "1000", "segment.ms": "5"}),
                topic("twice", config={"retention.ms": "1000"}),
                topic("parts", partitions=4), topic("rf", rf=2), topic("rf3", rf=3),
                topic("assigned", partitions=None, rf=None, replicaAssignment=[[0, 1], [1, 0], [0, 1]]),
                topic("absent")]
    write_yaml(root / "repo" / "clusters" / "c1" / "t.yaml", *declared)
    write_snapshot(root / "snaps", "c1", [
        SnapTopic("ok", partitions=2, rf=2, configs={"retention.ms": "1000"}), SnapTopic("ok.bare"),
        SnapTopic("value", configs={"retention.ms": "2000"}),
        SnapTopic("source", other_configs=[("retention.ms", "1000", "STATIC_BROKER_CONFIG")]),
        SnapTopic("hidden", configs={"retention.ms": "1000"}, sensitive={"retention.ms"}),
        SnapTopic("extra.key", configs={"retention.ms": "1000"}),
        # a snapshot holding two rows of one key (not what Kafka answers): the other one is not an override
        SnapTopic("twice", configs={"retention.ms": "1000"}, other_configs=[("retention.ms", "1000", "STATIC_BROKER_CONFIG")]),
        SnapTopic("parts"), SnapTopic("rf"), SnapTopic("rf3", rf=3), SnapTopic("assigned", rf=2),
    ], brokers=(0, 1, 2))
    return desired.load(spark, [str(root / "repo")]), observed.load(spark, str(root / "snaps"))


def test_settled_topics_are_exactly_those_the_planner_leaves_alone(shapes):
    d, o = shapes
    topics = d.topics.select("cluster", "topic", "partitions", "replication_factor", "replica_assignment", "config")
    assert sorted(r["topic"] for r in plan.settled_topics(topics, o, {"c1": 3}).collect()) == ["ok", "ok.bare", "rf3"]
    # a replication factor over the broker count is never settled, even when the snapshot agrees
    assert sorted(r["topic"] for r in plan.settled_topics(topics, o, {"c1": 2}).collect()) == ["ok", "ok.bare"]
    # a topic exists when the snapshot's topics table has it: its partition rows alone are not enough
    gone = dataclasses.replace(o, topics=o.topics.filter(o.topics["topic"] != "ok"))
    assert sorted(r["topic"] for r in plan.settled_topics(topics, gone, {"c1": 3}).collect()) == ["ok.bare", "rf3"]
    # the others reach the planner, which has something to say about each (but "hidden": a value the
    # cluster hides cannot be compared)
    headers = {name: h.as_dict() for name, h in o.headers.items()}
    (row,) = plan.cluster_rows(d, o).collect()
    decoded = plan.decode_row(row.asDict())
    assert sorted(t["topic"] for t in decoded["d_topics"]) == sorted(
        ["value", "source", "hidden", "extra.key", "twice", "parts", "rf", "assigned", "absent"])
    out = list(plan.plan_cluster(decoded, headers, False, DEFAULT_PROTECTED_TOPICS))
    named = {r[3] for r in out if isinstance(r, tuple) and r[0] == "resource"}
    assert named >= {"value", "source", "extra.key", "parts", "rf", "absent"}


def test_the_jvm_hides_the_config_names_is_sensitive_hides(spark):
    from pyspark.sql import functions as F

    from kafkaops.reconcile.configs import is_sensitive

    names = ["retention.ms", "ssl.KEY", "ssl.key.password", "sasl.jaas.config", "x.Token.y", "a.keystore",
             "a.key", "a.key.b", "PRIVATE", "credentials", "secretive", "cleanup.policy", "\u212aey", "a.\u212aey"]
    frame = spark.createDataFrame([(n,) for n in names], "key string")
    hidden = {r["key"]: r["s"] for r in frame.select("key", F.col("key").rlike(plan.SENSITIVE_NAME_JAVA).alias("s"))
              .collect()}
    assert hidden == {n: is_sensitive(n) for n in names}


def test_drift_stage(small):
    d, o = small
    planned = plan.run(d, o).persist()
    got = {(r["kind"], r["name"], r["field"]): r for r in rows(drift.run(planned))}
    assert got[("KafkaTopic", "retention", "config.retention.ms")]["observed"] == "2000"
    assert got[("KafkaTopic", "grow", "partitions")]["desired"] == "6"
    assert got[("KafkaTopic", "wide", "replicationFactor")]["observed"] == "1"
    assert not [k for k in got if k[1] == "same"]  # equal the Kafka way
    assert not [k for k in got if k[1] == "secret"]  # a value the cluster hides cannot be compared
    assert ("KafkaTopic", "fresh", "partitions") not in got  # absent topics are creates, not drift
    acl_rows = [r for k, r in got.items() if k[0] == "KafkaAcl"]
    assert len(acl_rows) == 0 or all(r["name"] == "User:app" for r in acl_rows)
    acl_values = [(r["desired"], r["observed"]) for r in rows(drift.run(planned)) if r["kind"] == "KafkaAcl"]
    assert ("Allow User:app Write on Topic:same (Literal) from *", None) in acl_values
    assert (None, "Allow User:app Read on Topic:stale (Literal) from *") in acl_values
    broker = got[("KafkaBrokerConfig", "brokers/default", "config.log.cleaner.threads")]
    assert (broker["desired"], broker["observed"]) == ("2", "1")
    unclean = got[("KafkaBrokerConfig", "brokers/default", "config.unclean.leader.election.enable")]
    assert unclean["observed"] is None and unclean["observed_source"] == "DEFAULT_CONFIG"
    planned.unpersist()


def test_orphans_stage(small):
    d, o = small
    got = {(r["kind"], r["name"], r["resource_name"]): r for r in rows(orphans.run(d, o, DEFAULT_PROTECTED_TOPICS))}
    topics = {k[1] for k in got if k[0] == "KafkaTopic"}
    assert topics == {"pre.orphan", "pre.other"}  # internal and protected ones left out
    assert got[("KafkaAcl", "User:app", "stale")]["principal_declared"] is True
    assert got[("KafkaAcl", "User:etl", "pre.")]["principal_declared"] is False
    assert ("KafkaAcl", "User:app", "same") not in got
    custom = {r["name"] for r in rows(orphans.run(d, o, "pre\\.")) if r["kind"] == "KafkaTopic"}
    assert custom == {"_schemas"}


def test_access_stage_expands_patterns_without_a_cross_product(small):
    _, o = small
    got = {(r["principal"], r["topic"], r["access"]): r for r in rows(access.run(o.topics, o.acls))}
    etl_read = {t for p, t, a in got if p == "User:etl" and a == "read"}
    assert etl_read == {"pre.orphan", "pre.other"}  # Prefixed 'pre.' with All
    assert got[("User:etl", "pre.other", "write")]["effective"] is False  # Deny Write from every host
    assert got[("User:etl", "pre.orphan", "read")]["effective"] is True  # the Deny is from one host only
    assert got[("User:etl", "pre.orphan", "read")]["denied_by"] == ["Deny User:etl Read on Topic:pre.o (Prefixed) from 10.0.0.1"]
    everyone = {t for p, t, a in got if p == "User:*"}
    assert "grow" in everyone and "__consumer_offsets" in everyone  # Literal '*'
    assert got[("User:*", "secret", "read")]["effective"] is False
    assert got[("User:app", "same", "read")]["granted_by"] == ["Allow User:app Read on Topic:same (Literal) from *"]
    assert ("User:app", "stale", "read") not in got  # no such topic
    # LITERAL names and PREFIXED patterns are equi-joins; only LITERAL '*' meets every topic (which it means)
    named = o.acls.filter("resource_name != '*'")
    plan_text = access.matches(o.topics, named)._jdf.queryExecution().executedPlan().toString()
    assert "CartesianProduct" not in plan_text and "NestedLoopJoin" not in plan_text


def test_top_principals_count_each_effective_topic_once(small):
    _, o = small
    granted = access.run(o.topics, o.acls)
    every = rows(granted)
    assert len({(r["cluster"], r["principal"], r["topic"], r["access"]) for r in every}) == len(every)  # what it counts on
    expected = {}
    for r in every:
        if r["effective"]:
            read, write, clusters = expected.get(r["principal"], (0, 0, set()))
            expected[r["principal"]] = (read + (r["access"] == "read"), write + (r["access"] == "write"),
                                        clusters | {r["cluster"]})
    top = rows(access.top_principals(granted, 15))
    assert {r["principal"]: (r["read"], r["write"], set(r["clusters"])) for r in top} == expected
    assert [(r["read"] + r["write"], r["principal"]) for r in top] == sorted(
        ((r["read"] + r["write"], r["principal"]) for r in top), key=lambda x: (-x[0], x[1]))
    assert [r["principal"] for r in top] == ["User:*", "User:etl", "User:app"]
    assert expected["User:etl"] == (2, 1, {"c1"})  # pre.other's Write is denied from every host: not counted
    assert [r["principal"] for r in rows(access.top_principals(granted, 1))] == [top[0]["principal"]]


# --- policy --------------------------------------------------------------------------------------------------------


POLICY = """
version: 1
check: both
topics:
  naming:
    - pattern: '[a-z]+'
      clusters: ["c*"]
      message: lower-case letters only
  minReplicationFactor: 2
  minInsyncReplicas: 2
  requireInsyncBelowReplication: true
  retentionMs: {min: 1500, max: 604800000}
  maxPartitions: 4
  exclude: '^_'
acls:
  forbidWildcardPrincipal: true
  forbidWildcardResource: true
  forbidDenyShadowingAllow: true
overrides:
  - clusters: ["c1"]
    topics: {minInsyncReplicas: 1}
severities:
  RetentionAboveMaximum: warning
"""


def test_policy_stage(small, tmp_path):
    d, o = small
    policy = policy_stage.parse_policy(POLICY, "policy.yaml")
    got = rows(policy_stage.run(d, o, policy, ["c1"]))
    by_rule: dict[str, set] = {}
    for r in got:
        by_rule.setdefault(r["rule"], set()).add((r["name"], r["state"]))
    assert ("pre.orphan", "observed") in by_rule["TopicNamePattern"] and ("retention", "desired") not in by_rule["TopicNamePattern"]
    assert ("retention", "desired") in by_rule["ReplicationFactorBelowMinimum"]
    assert "MinInsyncReplicasBelowMinimum" not in by_rule  # the c1 override lowers it to 1
    assert ("retention", "desired") in by_rule["RetentionBelowMinimum"]
    assert ("grow", "desired") in by_rule["PartitionsAboveMaximum"]
    assert ("User:*", "observed") in by_rule["WildcardPrincipal"] and ("User:*", "observed") in by_rule["WildcardResource"]
    assert by_rule["DenyShadowsAllow"] == {("User:old", "observed")}  # a Deny of a part never shadows the whole
    assert not any(r["name"].startswith("_") for r in got if r["kind"] == "KafkaTopic")


@pytest.mark.parametrize(("text", "expected"), [
    ("version: 1\ntopics: {minReplicationFactor: 0}\n", "policy.yaml: topics.minReplicationFactor: 0 is less than"),
    ("version: 2\n", "policy.yaml: version: 1 was expected"),
    ("version: 1\ntopics: {naming: [{pattern: '(['}]}\n", "policy.yaml: topics.naming[0].pattern: not a valid regular"),
    ("version: 1\ntopcs: {}\n", "Additional properties are not allowed ('topcs' was unexpected)"),
    ("version: 1\ntopics: {retentionMs: {min: 10, max: 5}}\n", "min 10 is above max 5"),
    ("version: 1\n  bad: [\n", "policy.yaml: not valid YAML at line"),
])
def test_policy_file_errors_name_the_file_and_field(text, expected):
    with pytest.raises(policy_stage.PolicyError) as raised:
        policy_stage.parse_policy(text, "policy.yaml")
    assert expected in str(raised.value)


def test_compiled_schema_agrees_with_jsonschema_on_mutated_documents():
    """The compiled predicate (fastschema.py) never calls a document valid that jsonschema rejects
    (nor the reverse), on thousands of random mutations of the corpus."""
    import copy
    import random

    rng = random.Random(1234)
    values = [None, 0, -1, 1, 1.5, 2.0, 40000, True, False, "", "x", "a" * 300, "bad name!", "Retain", [], [1], [[0]],
              {}, {"name": "x"}, "kafkaops.io/v1alpha1", "KafkaTopic", "User:a", "*"]

    def paths(node: Any, prefix: tuple = ()) -> list[tuple]:
        out = [prefix]
        if isinstance(node, dict):
            for k, v in node.items():
                out += paths(v, prefix + (k,))
        elif isinstance(node, list):
            for i, v in enumerate(node):
                out += paths(v, prefix + (i,))
        return out

    documents = load_paths([CORPUS, EXAMPLES]).documents
    checked = 0
    for doc in documents:
        for _ in range(40):
            body = copy.deepcopy(dict(doc.body))
            for _ in range(rng.randint(1, 3)):
                path = rng.choice(paths(body)[1:] or [("spec",)])
                parent = body
                for part in path[:-1]:
                    parent = parent[part]
                last = path[-1]
                action = rng.random()
                if action < 0.25 and isinstance(parent, dict):
                    parent.pop(last, None)
                elif action < 0.4 and isinstance(parent, dict):
                    parent["unexpected"] = rng.choice(values)
                else:
                    parent[last] = copy.deepcopy(rng.choice(values))
            assert schema_predicate(doc.kind)(body) == validator_for(doc.kind).is_valid(body), (doc.source, body)
            checked += 1
    assert checked > 3000


def test_the_fleet_benchs_floor_reads_the_same_documents_the_parse_makes(spark, tmp_path, monkeypatch):
    """`fleet_bench.py --floor` times the pipeline with its parsing done beforehand: the rows it
    parsed in other processes, read back by Spark's JSON reader, are the documents (and so the
    issues and topics) the desired stage's own parse makes, mistakes included."""
    bench = load_bench("fleet_bench")
    tree = tmp_path / "repo"
    shutil.copytree(EXAMPLES / "clusters", tree / "clusters")
    write_yaml(tree / "clusters" / "dev" / "bad.yaml", topic("dup", cluster=None, partitions=0),
               topic("orders.events.v1", cluster=None))
    (tree / "clusters" / "dev" / "broken.yml").write_text("kind: KafkaTopic\nmetadata: {name: [\n")
    parsed = bench.parse_beforehand(tree, tmp_path / "rows", 1)
    assert parsed["files"] == len(bench.manifest_files(tree)) == len(find_yaml_files(tree))
    assert parsed["parse_cpu"] > 0 and parsed["yaml_cpu"] > 0

    def documents(loaded: desired.Desired) -> tuple[list, list, list]:
        key = lambda r: (r["file"], r["index"] if r["index"] is not None else -1, str(r))  # noqa: E731
        return (sorted(rows(loaded.docs), key=key), sorted(rows(loaded.issues), key=key),
                sorted(rows(loaded.topics), key=key))

    own = desired.load(spark, [str(tree)])
    want = documents(own)
    own.unpersist()
    monkeypatch.setattr(desired, "parse", bench.rows_reader(tmp_path / "rows"))
    given = desired.load(spark, [str(tree)])
    got = documents(given)
    given.unpersist()
    assert parsed["documents"] == len(want[0])
    assert got == want
    assert {"YamlSyntaxError", "DuplicateTopic"} <= {i["rule"] for i in want[1]}
