"""The observed stage: snapshots written by `kafkaops snapshot` (format `kafkaops-snapshot`, version 1).

`--observed PATH` holds one directory per cluster, `PATH/<cluster>/`:

    header.json            {"format": "kafkaops-snapshot", "version": 1, "cluster": NAME, "clusterId",
                            "bootstrap", "controllerId", "brokers": [{"id","host","port","rack"}],
                            "takenAt", "seconds", "counts", "notes"}
    topics.parquet         cluster, topic, topic_id, partitions, replication_factor, internal
    partitions.parquet     cluster, topic, partition, leader, replicas, isr
    topic_configs.parquet  cluster, topic, key, value, source, sensitive   (non-default entries only)
    acls.parquet           cluster, principal, resource_type, resource_name, pattern_type, operation,
                           permission, host
    broker_configs.parquet cluster, broker ("" = cluster default), key, value, source, sensitive
    scram_credentials.parquet cluster, user, mechanism, iterations        (never a secret: Kafka describes none)
    client_quotas.parquet  cluster, entity, user, client_id, ip, key, value

Each header is read and checked on the driver (small files), and each table's Parquet footer
against the contract (columns and types: int32, list<int32>...); a header that is not JSON, lacks
a key, is of another format or version, or names another cluster than its directory, and a
missing or malformed table, is an InputProblem naming the file: that cluster is skipped and the
others go on. Directories whose name starts with `.` or `_` (a snapshot being written) are not
read. Each table is then read by Spark in one scan over every accepted cluster.

The users and quotas tables (OPTIONAL_TABLES) came with issue 18 in the same format version: a
snapshot without them (taken by an older kafkaops), or whose header notes that they could not be
read (a cluster without the APIs), has them in `SnapshotHeader.unread`; the plan then reports the
users and quotas of that cluster as not read (ObserveFailed) instead of planning to create them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from kafkaops.fleet import hadoopfs
from kafkaops.fleet.errors import (
    SNAPSHOT_BAD_TABLE,
    SNAPSHOT_CLUSTER_MISMATCH,
    SNAPSHOT_MISSING_TABLE,
    SNAPSHOT_UNKNOWN_FORMAT,
    SNAPSHOT_UNREADABLE,
    FleetError,
    InputProblem,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

try:  # the contract in code, from the writer's side (it imports only pyarrow)
    from kafkaops.snapshot.format import FORMAT, HEADER_FILE as HEADER, HEADER_KEYS, VERSION
except ImportError:  # pragma: no cover - a kafkaops without the snapshot writer
    FORMAT, VERSION, HEADER = "kafkaops-snapshot", 1, "header.json"
    HEADER_KEYS = ("format", "version", "cluster", "clusterId", "bootstrap", "controllerId", "brokers",
                   "takenAt", "seconds", "counts", "notes")

# The contract's columns and Spark SQL types, per table.
TABLES: dict[str, list[tuple[str, str]]] = {
    "topics": [("cluster", "string"), ("topic", "string"), ("topic_id", "string"), ("partitions", "int"),
               ("replication_factor", "int"), ("internal", "boolean")],
    "partitions": [("cluster", "string"), ("topic", "string"), ("partition", "int"), ("leader", "int"),
                   ("replicas", "array<int>"), ("isr", "array<int>")],
    "topic_configs": [("cluster", "string"), ("topic", "string"), ("key", "string"), ("value", "string"),
                      ("source", "string"), ("sensitive", "boolean")],
    "acls": [("cluster", "string"), ("principal", "string"), ("resource_type", "string"),
             ("resource_name", "string"), ("pattern_type", "string"), ("operation", "string"),
             ("permission", "string"), ("host", "string")],
    "broker_configs": [("cluster", "string"), ("broker", "string"), ("key", "string"), ("value", "string"),
                       ("source", "string"), ("sensitive", "boolean")],
    "scram_credentials": [("cluster", "string"), ("user", "string"), ("mechanism", "string"), ("iterations", "int")],
    "client_quotas": [("cluster", "string"), ("entity", "string"), ("user", "string"), ("client_id", "string"),
                      ("ip", "string"), ("key", "string"), ("value", "double")],
}
# Tables a version-1 snapshot may lack (written by kafkaops before users and quotas), and the
# header note (snapshot/principals.py) saying the table is empty because it could not be read.
OPTIONAL_TABLES = {"scram_credentials": "no SCRAM credentials:", "client_quotas": "no client quotas:"}


def table_ddl(table: str) -> str:
    return ", ".join(f"`{name}` {type_}" for name, type_ in TABLES[table])


@dataclass(frozen=True)
class SnapshotHeader:
    cluster: str
    cluster_id: str | None
    bootstrap: str
    controller_id: int
    brokers: tuple[tuple[int, str, int, str | None], ...]  # (id, host, port, rack)
    taken_at: str | None
    file: str
    notes: tuple[str, ...] = ()
    unread: tuple[str, ...] = ()  # OPTIONAL_TABLES this snapshot lacks or could not fill

    def as_dict(self) -> dict[str, Any]:
        return {"cluster": self.cluster, "clusterId": self.cluster_id, "bootstrap": self.bootstrap,
                "controllerId": self.controller_id, "brokers": [list(b) for b in self.brokers],
                "takenAt": self.taken_at, "unread": list(self.unread)}


@dataclass
class Observed:
    headers: dict[str, SnapshotHeader]  # accepted clusters
    problems: list[InputProblem]
    topics: DataFrame | None = None
    partitions: DataFrame | None = None
    topic_configs: DataFrame | None = None
    acls: DataFrame | None = None
    broker_configs: DataFrame | None = None
    scram_credentials: DataFrame | None = None
    client_quotas: DataFrame | None = None
    brokers: DataFrame | None = None  # cluster, broker, host, port, rack
    skipped: list[str] = field(default_factory=list)

    @property
    def clusters(self) -> list[str]:
        return sorted(self.headers)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def parse_header(text: str, file: str, directory: str) -> SnapshotHeader | InputProblem:
    """A header.json checked against the contract; an InputProblem naming `file` if it is not one."""
    def problem(rule: str, message: str) -> InputProblem:
        return InputProblem("observed", file, rule, message, directory)

    try:
        data = json.loads(text)
    except ValueError as exc:
        return problem(SNAPSHOT_UNREADABLE, f"not JSON ({exc})")
    if not isinstance(data, dict):
        return problem(SNAPSHOT_UNREADABLE, "not a JSON object")
    fmt, version = data.get("format"), data.get("version")
    if fmt != FORMAT:
        return problem(SNAPSHOT_UNKNOWN_FORMAT, f"format {fmt!r} is not {FORMAT!r}: not a kafkaops snapshot")
    if not _is_int(version) or version != VERSION:
        return problem(SNAPSHOT_UNKNOWN_FORMAT, f"snapshot format version {version!r} is not supported (this "
                                                f"kafkaops reads version {VERSION}); take the snapshot again with "
                                                "a matching kafkaops")
    if missing := [k for k in HEADER_KEYS if k not in data]:
        return problem(SNAPSHOT_UNREADABLE, f"the snapshot header lacks {', '.join(missing)}")
    cluster = data.get("cluster")
    if not isinstance(cluster, str) or not cluster:
        return problem(SNAPSHOT_UNREADABLE, "header has no cluster name")
    if cluster != directory:
        return problem(SNAPSHOT_CLUSTER_MISMATCH, f"header names cluster {cluster!r} but lies in directory "
                                                  f"{directory!r}: snapshots live in <observed>/<cluster>/")
    brokers_raw = data.get("brokers")
    if not isinstance(brokers_raw, list):
        return problem(SNAPSHOT_UNREADABLE, "header has no brokers list")
    brokers = []
    for i, b in enumerate(brokers_raw):
        if not isinstance(b, dict) or not _is_int(b.get("id")):
            return problem(SNAPSHOT_UNREADABLE, f"brokers[{i}] has no integer id")
        rack = b.get("rack")
        brokers.append((b["id"], str(b.get("host") or ""), int(b.get("port") or 0),
                        rack if isinstance(rack, str) and rack else None))
    controller = data.get("controllerId")
    cluster_id = data.get("clusterId")
    notes = data.get("notes")
    return SnapshotHeader(
        cluster, cluster_id if isinstance(cluster_id, str) else None, str(data.get("bootstrap") or ""),
        controller if _is_int(controller) else -1, tuple(brokers),
        data.get("takenAt") if isinstance(data.get("takenAt"), str) else None, file,
        tuple(str(n) for n in notes) if isinstance(notes, list) else (),
    )


def _schema_of(spark: SparkSession, path: str) -> dict[str, str]:
    """Column -> Spark SQL type of a Parquet file: its footer, read with pyarrow for a local file
    (a millisecond), else by Spark (any Hadoop filesystem)."""
    local = hadoopfs.local_path(path)
    if local is not None:
        import pyarrow.parquet as pq

        arrow = {"int32": "int", "int64": "bigint", "int16": "smallint", "int8": "tinyint", "string": "string",
                 "large_string": "string", "bool": "boolean"}
        out = {}
        for f in pq.read_schema(local):
            text = str(f.type)
            if text.startswith(("list<", "large_list<")):
                inner = str(f.type.value_type)
                out[f.name] = f"array<{arrow.get(inner, inner)}>"
            else:
                out[f.name] = arrow.get(text, text)
        return out
    return {f.name: f.dataType.simpleString() for f in spark.read.parquet(path).schema.fields}


def check_table(spark: SparkSession, path: str, table: str) -> str | None:
    """Why the Parquet table at `path` does not fit the contract, or None."""
    try:
        actual = _schema_of(spark, path)
    except Exception as exc:  # noqa: BLE001 - pyarrow and py4j errors of every kind: name the file
        text = str(exc).strip().splitlines()
        return f"cannot read it as Parquet: {text[0] if text else type(exc).__name__}"
    missing = [name for name, _ in TABLES[table] if name not in actual]
    if missing:
        return f"missing column(s) {', '.join(missing)} of the {table} table (format version {VERSION})"
    wrong = [f"{name} is {actual[name]}, not {wanted}" for name, wanted in TABLES[table]
             if name in actual and actual[name] != wanted]
    if wrong:
        return "wrong column type(s): " + "; ".join(wrong)
    return None


def load(spark: SparkSession, root: str, clusters: list[str] | None = None, check_tables: bool = True) -> Observed:
    """Every readable snapshot under `root` (or only `clusters`), its tables as DataFrames."""

    if not hadoopfs.is_dir(spark, root):
        raise FleetError(f"--observed {root}: no such directory")
    directories = [d for d in hadoopfs.list_dirs(spark, root) if clusters is None or d in clusters]
    headers: dict[str, SnapshotHeader] = {}
    absent: dict[str, set[str]] = {}  # cluster -> the OPTIONAL_TABLES its snapshot lacks
    problems: list[InputProblem] = []
    for directory in directories:
        base = hadoopfs.join(root, directory)
        header_path = hadoopfs.join(base, HEADER)
        if not hadoopfs.exists(spark, header_path):
            problems.append(InputProblem("observed", header_path, SNAPSHOT_MISSING_TABLE,
                                         f"no {HEADER}: not a snapshot directory", directory))
            continue
        try:
            text = hadoopfs.read_text(spark, header_path)
        except (ValueError, UnicodeDecodeError, Exception) as exc:  # noqa: BLE001 - py4j: any read failure
            problems.append(InputProblem("observed", header_path, SNAPSHOT_UNREADABLE, f"cannot read it: {exc}",
                                         directory))
            continue
        header = parse_header(text, header_path, directory)
        if isinstance(header, InputProblem):
            problems.append(header)
            continue
        bad = None
        unread = [table for table, note in OPTIONAL_TABLES.items() if any(n.startswith(note) for n in header.notes)]
        for table in TABLES:
            path = hadoopfs.join(base, f"{table}.parquet")
            if not hadoopfs.exists(spark, path):
                if table in OPTIONAL_TABLES:
                    unread.append(table)
                    absent.setdefault(directory, set()).add(table)
                    continue
                bad = InputProblem("observed", path, SNAPSHOT_MISSING_TABLE, f"the {table} table is missing", directory)
            elif check_tables and (why := check_table(spark, path, table)) is not None:
                bad = InputProblem("observed", path, SNAPSHOT_BAD_TABLE, why, directory)
            if bad is not None:
                break
        if bad is not None:
            problems.append(bad)
            continue
        headers[directory] = replace(header, unread=tuple(dict.fromkeys(unread)))
    observed = Observed(headers, problems, skipped=sorted({p.cluster for p in problems if p.cluster}))
    # one scan per table over every accepted cluster (the schema is the contract's: no footer inference)
    frames: dict[str, DataFrame] = {}
    for table in TABLES:
        paths = [hadoopfs.join(root, name, f"{table}.parquet") for name in sorted(headers)
                 if table not in absent.get(name, ())]
        frames[table] = (spark.read.schema(table_ddl(table)).parquet(*paths) if paths
                         else spark.createDataFrame([], table_ddl(table)))
    observed.topics = frames["topics"]
    observed.partitions = frames["partitions"]
    observed.topic_configs = frames["topic_configs"]
    observed.acls = frames["acls"]
    observed.broker_configs = frames["broker_configs"]
    observed.scram_credentials = frames["scram_credentials"]
    observed.client_quotas = frames["client_quotas"]
    observed.brokers = spark.createDataFrame(
        [(h.cluster, b[0], b[1], b[2], b[3]) for h in headers.values() for b in h.brokers],
        "cluster string, broker int, host string, port int, rack string")
    return observed
