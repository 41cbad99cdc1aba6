"""`kafkaops snapshot`: the snapshot format (version 1) against noida-db and the fake cluster
double, read back with pyarrow as the fleet pipeline reads it.

Topics on the shared noida server start with the `unique` prefix and every assertion on noida
rows filters on it (other tests' topics live there too).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from kafkaops import kafka
from kafkaops.cli.main import cli
from kafkaops.kafka import AdminClient, AlterConfigOp, Batcher, ConfigResource, NewTopic
from kafkaops.snapshot.format import (
    FORMAT,
    HEADER_FILE,
    SCHEMAS,
    TABLES,
    VERSION,
    SnapshotFormatError,
    read_header,
    snapshot_dirs,
    table_file,
)
from kafkaops.snapshot.take import Snapshot, take_snapshot
from kafkaops.snapshot.write import write_snapshot
from kafkaops.kafka import QuotaAlteration, QuotaEntity, scram_upsertion
from kafkaops.testing.fake_cluster import FakeClusterDouble
from kafkaops.testing.servers import free_port

SECRET = "s3cr3t-keystore-pass-do-not-leak"
W = kafka


def read_tables(path: Path) -> dict[str, list[dict]]:
    """Every table of a snapshot directory as rows, after checking its schema is exactly SCHEMAS'."""
    out = {}
    for table in TABLES:
        data = pq.read_table(path / table_file(table))
        assert data.schema == SCHEMAS[table], (table, data.schema)
        out[table] = data.to_pylist()
    return out


def header_of(**changes: object) -> dict:
    header = {"format": FORMAT, "version": VERSION, "cluster": "c1", "clusterId": None, "bootstrap": "h:1",
              "controllerId": 1, "brokers": [{"id": 1, "host": "h", "port": 1, "rack": None}],
              "takenAt": "2024-01-02T03:04:05Z", "seconds": 0.5,
              "counts": dict.fromkeys(TABLES, 0), "notes": []}
    header.update(changes)
    return header


def snapshot_cli(*args: str):
    return CliRunner().invoke(cli, ["snapshot", *args])


# --- noida-db ---------------------------------------------------------------------------------------


@pytest.mark.noida
async def test_noida_topics_partitions_and_non_default_configs(noida, unique, tmp_path):
    async with AdminClient.connect(noida.bootstrap, linger=0.01) as admin:
        created = await admin.create_topics([
            NewTopic(f"{unique}.orders", 3, 1, {"retention.ms": "3600000", "cleanup.policy": "compact,delete"}),
            NewTopic(f"{unique}.plain", 1, 1),
        ])
        assert created.all_ok, created.failed()
        admin.requests_by_api.clear()
        taken = await take_snapshot(admin, Batcher(admin), "noida")
        # in bulk: one Metadata for every topic, one DescribeAcls, no per-topic Metadata
        assert admin.requests_by_api.get("Metadata", 0) <= 2, admin.requests_by_api
        assert admin.requests_by_api.get("DescribeAcls") == 1, admin.requests_by_api

    path = write_snapshot(taken, tmp_path / "snaps")
    assert path == tmp_path / "snaps" / "noida"
    assert sorted(p.name for p in path.iterdir()) == sorted([HEADER_FILE, *(table_file(t) for t in TABLES)])
    tables = read_tables(path)
    mine = {t: [r for r in rows if r.get("topic", "").startswith(unique)] for t, rows in tables.items()}

    assert {r["cluster"] for rows in tables.values() for r in rows} == {"noida"}
    topics = {r["topic"]: r for r in mine["topics"]}
    assert set(topics) == {f"{unique}.orders", f"{unique}.plain"}
    orders = topics[f"{unique}.orders"]
    assert (orders["partitions"], orders["replication_factor"], orders["internal"]) == (3, 1, False)
    assert orders["topic_id"] is None or len(orders["topic_id"]) == 36  # noida reports no topic ids

    partitions = sorted((r["topic"], r["partition"]) for r in mine["partitions"])
    assert partitions == [(f"{unique}.orders", 0), (f"{unique}.orders", 1), (f"{unique}.orders", 2),
                          (f"{unique}.plain", 0)]
    for row in mine["partitions"]:
        assert row["leader"] in row["replicas"] and len(row["replicas"]) == 1 and row["isr"] == row["replicas"]

    configs = {(r["topic"], r["key"]): r for r in mine["topic_configs"]}
    assert set(configs) == {(f"{unique}.orders", "retention.ms"), (f"{unique}.orders", "cleanup.policy")}
    assert configs[(f"{unique}.orders", "cleanup.policy")] == {
        "cluster": "noida", "topic": f"{unique}.orders", "key": "cleanup.policy", "value": "compact,delete",
        "source": "DYNAMIC_TOPIC_CONFIG", "sensitive": False}
    assert {r["source"] for r in tables["topic_configs"]} <= {"DYNAMIC_TOPIC_CONFIG"}  # never defaults

    assert tables["acls"] == []  # noida has no authorizer: empty table, with its schema, and a note
    header = read_header(path)
    assert any("SECURITY_DISABLED" in n and "acls.parquet is empty" in n for n in header["notes"]), header["notes"]
    assert header["counts"] == {t: len(rows) for t, rows in tables.items()}
    assert header["cluster"] == "noida" and header["bootstrap"] == noida.bootstrap
    assert header["brokers"] and all(set(b) == {"id", "host", "port", "rack"} for b in header["brokers"])
    assert {r["broker"] for r in tables["broker_configs"]} <= {""} | {str(b["id"]) for b in header["brokers"]}


@pytest.mark.noida
def test_cli_against_noida_and_resnapshot_replaces(noida, unique, tmp_path):
    async def create(*names: str) -> None:
        async with AdminClient.connect(noida.bootstrap, linger=0.01) as admin:
            created = await admin.create_topics([NewTopic(n, 2, 1, {"retention.ms": "120000"}) for n in names])
            assert created.all_ok, created.failed()

    asyncio.run(create(f"{unique}.first"))
    out = tmp_path / "fleet"
    result = snapshot_cli("--bootstrap-server", noida.bootstrap, "--cluster", "noida-a", "--output-dir", str(out))
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("snapshot of noida-a: ") and str(out / "noida-a") in lines[0]
    assert "3 notes in header.json" in lines[0]  # the ACL note, and noida-db has no SCRAM or quota APIs
    first = read_header(out / "noida-a")
    assert first["cluster"] == "noida-a" and first["format"] == FORMAT and first["version"] == VERSION
    assert f"{unique}.first" in {r["topic"] for r in read_tables(out / "noida-a")["topics"]}
    (out / "noida-a" / "stale.parquet").write_bytes(b"left by an older kafkaops")

    asyncio.run(create(f"{unique}.second"))
    again = snapshot_cli("--bootstrap-server", noida.bootstrap, "--cluster", "noida-a", "--output-dir", str(out))
    assert again.exit_code == 0, again.output
    snap = out / "noida-a"
    assert not (snap / "stale.parquet").exists()  # replaced whole, not merged
    assert sorted(p.name for p in out.iterdir()) == ["noida-a"]  # no temporary or old directories left
    topics = {r["topic"] for r in read_tables(snap)["topics"] if r["topic"].startswith(unique)}
    assert topics == {f"{unique}.first", f"{unique}.second"}
    assert read_header(snap)["counts"]["topics"] >= first["counts"]["topics"] + 1

    # another cluster name lives next to it
    other = snapshot_cli("--bootstrap-server", noida.bootstrap, "--cluster", "noida-b", "--output-dir", str(out))
    assert other.exit_code == 0, other.output
    assert sorted(p.name for p in out.iterdir()) == ["noida-a", "noida-b"]
    (out / ".noida-c.tmp-0123").mkdir()  # a write in progress is not a snapshot
    (out / ".noida-c.tmp-0123" / HEADER_FILE).write_text("{")
    assert snapshot_dirs(out) == [out / "noida-a", out / "noida-b"]
    assert {json.loads((p / HEADER_FILE).read_text())["cluster"] for p in snapshot_dirs(out)} == {"noida-a", "noida-b"}


# --- the fake cluster double: ACLs, racks, broker configs ---------------------------------------------


async def test_fake_cluster_acls_broker_configs_and_secrets(unique, tmp_path):
    async with FakeClusterDouble(brokers=3, racks=["rack-a", "rack-b", "rack-c"], acls_enabled=True,
                                 tick_interval=None) as double:
        async with AdminClient.connect(double.bootstrap, linger=0.01, retry_backoff=0.01) as admin:
            created = await admin.create_topics([
                NewTopic(f"{unique}.events", 6, 3, {"retention.ms": "86400000", "min.insync.replicas": "2"}),
                NewTopic(f"{unique}.state", 2, 2),
            ])
            assert created.all_ok, created.failed()
            made = await admin.create_acls([
                W.AclBinding(W.ResourceType.TOPIC, f"{unique}.", W.PatternType.PREFIXED, "User:svc", "*",
                             W.AclOperation.READ, W.AclPermission.ALLOW),
                W.AclBinding(W.ResourceType.GROUP, "g1", W.PatternType.LITERAL, "User:svc", "*",
                             W.AclOperation.READ, W.AclPermission.ALLOW),
                W.AclBinding(W.ResourceType.TOPIC, "payments", W.PatternType.LITERAL, "User:svc", "10.1.2.3",
                             W.AclOperation.WRITE, W.AclPermission.DENY),
                W.AclBinding(W.ResourceType.CLUSTER, "kafka-cluster", W.PatternType.LITERAL, "User:admin", "*",
                             W.AclOperation.IDEMPOTENT_WRITE, W.AclPermission.ALLOW),
                W.AclBinding(W.ResourceType.USER, "bob", W.PatternType.LITERAL, "User:admin", "*",
                             W.AclOperation.ALL, W.AclPermission.ALLOW),  # no manifest spelling: skipped
            ])
            assert made.all_ok, made.failed()
            altered = await admin.incremental_alter_configs({
                ConfigResource.broker(None): [AlterConfigOp("log.retention.ms", "604800000")],
                ConfigResource.broker(1): [AlterConfigOp("log.cleaner.threads", "2")],
                ConfigResource.broker(2): [AlterConfigOp("ssl.keystore.password", SECRET)],
            })
            assert altered.all_ok, altered.failed()
            scram = await admin.alter_user_scram_credentials([
                scram_upsertion("svc", "SCRAM-SHA-512", SECRET), scram_upsertion("svc", "SCRAM-SHA-256", SECRET, 8192)])
            assert all(r.ok for r in scram.values())
            quotas = await admin.alter_client_quotas([
                QuotaAlteration(QuotaEntity.of(user="svc"), {"producer_byte_rate": 1024}),
                QuotaAlteration(QuotaEntity.of(user=None, client_id="app"), {"request_percentage": 12.5})])
            assert all(r.ok for r in quotas.values())
            double.clear_requests()
            taken = await take_snapshot(admin, Batcher(admin), "fake")
            assert double.count(29) == 1  # one DescribeAcls
            assert double.count(50) == 1 and double.count(48) == 1  # one DescribeUserScramCredentials, DescribeClientQuotas
            assert double.count(3) <= 2  # Metadata: the one for every topic (and at most one again)

    assert SECRET not in repr(taken)
    path = write_snapshot(taken, tmp_path)
    for file in path.iterdir():
        assert SECRET.encode() not in file.read_bytes(), file.name
    tables = read_tables(path)
    header = read_header(path)

    assert header["clusterId"] == double.cluster_id
    assert header["brokers"] == [{"id": 1, "host": "127.0.0.1", "port": double.address(1)[1], "rack": "rack-a"},
                                 {"id": 2, "host": "127.0.0.1", "port": double.address(2)[1], "rack": "rack-b"},
                                 {"id": 3, "host": "127.0.0.1", "port": double.address(3)[1], "rack": "rack-c"}]
    assert header["controllerId"] in (1, 2, 3)
    assert header["counts"] == {t: len(rows) for t, rows in tables.items()}

    assert [(r["topic"], r["partitions"], r["replication_factor"]) for r in tables["topics"]] == [
        (f"{unique}.events", 6, 3), (f"{unique}.state", 2, 2)]
    assert tables["topics"][0]["topic_id"] == str(double.state.topics[f"{unique}.events"].topic_id)
    events = [r for r in tables["partitions"] if r["topic"] == f"{unique}.events"]
    assert [r["partition"] for r in events] == list(range(6))
    for row in events:
        truth = double.partition(f"{unique}.events", row["partition"])
        assert row["replicas"] == list(truth.replicas) and row["leader"] == truth.leader
        assert row["isr"] == list(truth.isr) and len(row["replicas"]) == 3
    assert {(r["topic"], r["key"], r["value"]) for r in tables["topic_configs"]} == {
        (f"{unique}.events", "retention.ms", "86400000"), (f"{unique}.events", "min.insync.replicas", "2")}

    acls = {(r["principal"], r["resource_type"], r["resource_name"], r["pattern_type"], r["operation"],
             r["permission"], r["host"]) for r in tables["acls"]}
    assert acls == {
        ("User:svc", "Topic", f"{unique}.", "Prefixed", "Read", "Allow", "*"),
        ("User:svc", "Group", "g1", "Literal", "Read", "Allow", "*"),
        ("User:svc", "Topic", "payments", "Literal", "Write", "Deny", "10.1.2.3"),
        ("User:admin", "Cluster", "kafka-cluster", "Literal", "IdempotentWrite", "Allow", "*"),
    }
    assert any("1 ACL binding not in acls.parquet" in n and "resource type USER" in n for n in header["notes"]), \
        header["notes"]

    brokers = {(r["broker"], r["key"]): r for r in tables["broker_configs"]}
    assert brokers[("", "log.retention.ms")] == {
        "cluster": "fake", "broker": "", "key": "log.retention.ms", "value": "604800000",
        "source": "DYNAMIC_DEFAULT_BROKER_CONFIG", "sensitive": False}
    assert brokers[("1", "log.cleaner.threads")]["source"] == "DYNAMIC_BROKER_CONFIG"
    assert brokers[("1", "log.cleaner.threads")]["value"] == "2"
    secret = brokers[("2", "ssl.keystore.password")]
    assert secret["value"] is None and secret["sensitive"] is True
    # per broker only its own dynamic configs: the cluster default does not repeat under 1, 2, 3
    assert set(brokers) == {("", "log.retention.ms"), ("1", "log.cleaner.threads"), ("2", "ssl.keystore.password")}

    assert tables["scram_credentials"] == [
        {"cluster": "fake", "user": "svc", "mechanism": "SCRAM-SHA-256", "iterations": 8192},
        {"cluster": "fake", "user": "svc", "mechanism": "SCRAM-SHA-512", "iterations": 4096}]
    assert tables["client_quotas"] == [
        {"cluster": "fake", "entity": "user=<default>,client-id=app", "user": None, "client_id": "app", "ip": None,
         "key": "request_percentage", "value": 12.5},
        {"cluster": "fake", "entity": "user=svc", "user": "svc", "client_id": None, "ip": None,
         "key": "producer_byte_rate", "value": 1024.0}]


# --- the format -------------------------------------------------------------------------------------


def test_empty_snapshot_writes_every_table_with_its_schema(tmp_path):
    path = write_snapshot(Snapshot(header_of(cluster="empty")), tmp_path)
    tables = read_tables(path)  # asserts each schema == SCHEMAS[table]
    assert all(rows == [] for rows in tables.values())
    for table in TABLES:
        assert pq.read_schema(path / table_file(table)) == SCHEMAS[table]


def test_header_round_trip(tmp_path):
    header = header_of(cluster="rt", clusterId="abc", notes=["a note", "ünïcode"],
                       brokers=[{"id": 1, "host": "h1", "port": 9092, "rack": "r1"},
                                {"id": 2, "host": "h2", "port": 9092, "rack": None}])
    path = write_snapshot(Snapshot(header), tmp_path / "out")
    assert read_header(path) == header
    assert read_header(path / HEADER_FILE) == header  # the directory or the file itself


def test_schemas_are_the_contract():
    assert FORMAT == "kafkaops-snapshot" and VERSION == 1
    assert {t: SCHEMAS[t].names for t in TABLES} == {
        "topics": ["cluster", "topic", "topic_id", "partitions", "replication_factor", "internal"],
        "partitions": ["cluster", "topic", "partition", "leader", "replicas", "isr"],
        "topic_configs": ["cluster", "topic", "key", "value", "source", "sensitive"],
        "acls": ["cluster", "principal", "resource_type", "resource_name", "pattern_type", "operation",
                 "permission", "host"],
        "broker_configs": ["cluster", "broker", "key", "value", "source", "sensitive"],
        "scram_credentials": ["cluster", "user", "mechanism", "iterations"],
        "client_quotas": ["cluster", "entity", "user", "client_id", "ip", "key", "value"],
    }
    nullable = {(t, f.name) for t in TABLES for f in SCHEMAS[t] if f.nullable}
    assert nullable == {("topics", "topic_id"), ("topic_configs", "value"), ("broker_configs", "value"),
                        ("client_quotas", "user"), ("client_quotas", "client_id"), ("client_quotas", "ip")}
    assert str(SCHEMAS["partitions"].field("replicas").type) == "list<item: int32>"


@pytest.mark.parametrize(("content", "reason"), [
    (json.dumps(header_of(version=2)), "version 2 is not supported"),
    (json.dumps(header_of(version="1")), "version '1' is not supported"),
    (json.dumps(header_of(format="something-else")), "format is 'something-else'"),
    ('{"format": "kafkaops-snapshot", "version": 1, "clus', "not valid JSON"),
    ("[1, 2]", "JSON list, not an object"),
    (json.dumps({"format": FORMAT, "version": VERSION}), "lacks cluster"),
])
def test_read_header_errors_name_the_file(tmp_path, content, reason):
    snap = tmp_path / "prod"
    snap.mkdir()
    (snap / HEADER_FILE).write_text(content)
    with pytest.raises(SnapshotFormatError) as caught:
        read_header(snap)
    assert caught.value.path == snap / HEADER_FILE
    assert str(snap / HEADER_FILE) in str(caught.value) and reason in str(caught.value), str(caught.value)


def test_read_header_missing(tmp_path):
    with pytest.raises(SnapshotFormatError, match="no snapshot header") as caught:
        read_header(tmp_path)
    assert str(tmp_path / HEADER_FILE) in str(caught.value)


def test_a_failed_write_leaves_the_older_snapshot(tmp_path):
    write_snapshot(Snapshot(header_of(cluster="keep", notes=["old"])), tmp_path)
    bad = Snapshot(header_of(cluster="keep"), topics=({"cluster": "keep", "topic": None},))  # topic is required
    with pytest.raises(Exception):
        write_snapshot(bad, tmp_path)
    assert read_header(tmp_path / "keep")["notes"] == ["old"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep"]


# --- the command's errors -----------------------------------------------------------------------------


def test_cli_unreachable_cluster_is_one_clear_line(tmp_path):
    # the CLI's own defaults give up fast (--connect-timeout 2, --retry-budget 1)
    bootstrap = f"127.0.0.1:{free_port()}"
    result = snapshot_cli("--bootstrap-server", bootstrap, "--cluster", "gone", "--output-dir", str(tmp_path))
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: cannot snapshot {bootstrap}: "), result.stderr
    assert result.stdout == "" and not (tmp_path / "gone").exists()


@pytest.mark.parametrize("name", ["..", ".hidden", "a/b", ""])
def test_cli_rejects_a_cluster_name_that_cannot_name_a_directory(tmp_path, name):
    result = snapshot_cli("--bootstrap-server", "127.0.0.1:1", "--cluster", name, "--output-dir", str(tmp_path))
    assert result.exit_code == 1 and "--cluster" in result.stderr, result.stderr  # usage errors exit 1


def test_cli_help():
    result = CliRunner().invoke(cli, ["snapshot", "--help"])
    assert result.exit_code == 0
    for word in ("--bootstrap-server", "--command-config", "--cluster", "--output-dir", "Parquet", "snapshot/README.md"):
        assert word in result.output
