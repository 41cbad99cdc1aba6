"""The snapshot format (version 1): file names, the Parquet schemas, and reading the header.

This module is the contract between `kafkaops snapshot` (which writes) and whoever reads
snapshots (the fleet pipeline). README.md next to it documents the format for people.

    DIR/<cluster>/header.json            what, when, from where, row counts, notes
    DIR/<cluster>/topics.parquet         one row per topic
    DIR/<cluster>/partitions.parquet     one row per partition
    DIR/<cluster>/topic_configs.parquet  one row per non-default topic config
    DIR/<cluster>/acls.parquet           one row per ACL binding
    DIR/<cluster>/broker_configs.parquet one row per dynamic broker config
    DIR/<cluster>/scram_credentials.parquet one row per SCRAM credential (mechanism, iterations; no secret)
    DIR/<cluster>/client_quotas.parquet  one row per quota key of each quota entity

Every table is written even when empty, with exactly its schema in SCHEMAS.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pyarrow as pa

FORMAT = "kafkaops-snapshot"
VERSION = 1
HEADER_FILE = "header.json"
PARQUET_SUFFIX = ".parquet"

_STRING = pa.string()
_INT = pa.int32()


def _required(name: str, type_: pa.DataType) -> pa.Field:
    return pa.field(name, type_, nullable=False)


def _nullable(name: str, type_: pa.DataType) -> pa.Field:
    return pa.field(name, type_, nullable=True)


SCHEMAS: Mapping[str, pa.Schema] = MappingProxyType({
    "topics": pa.schema([
        _required("cluster", _STRING),
        _required("topic", _STRING),
        _nullable("topic_id", _STRING),  # the topic's UUID, 8-4-4-4-12 hex; null when the cluster has none
        _required("partitions", _INT),
        _required("replication_factor", _INT),
        _required("internal", pa.bool_()),
    ]),
    "partitions": pa.schema([
        _required("cluster", _STRING),
        _required("topic", _STRING),
        _required("partition", _INT),
        _required("leader", _INT),  # -1: no leader
        _required("replicas", pa.list_(_INT)),
        _required("isr", pa.list_(_INT)),
    ]),
    "topic_configs": pa.schema([
        _required("cluster", _STRING),
        _required("topic", _STRING),
        _required("key", _STRING),
        _nullable("value", _STRING),  # null when sensitive
        _required("source", _STRING),  # ConfigSource name: DYNAMIC_TOPIC_CONFIG
        _required("sensitive", pa.bool_()),
    ]),
    "acls": pa.schema([
        _required("cluster", _STRING),
        _required("principal", _STRING),
        _required("resource_type", _STRING),  # Topic | Group | Cluster | TransactionalId | DelegationToken
        _required("resource_name", _STRING),
        _required("pattern_type", _STRING),  # Literal | Prefixed
        _required("operation", _STRING),  # Read | Write | ... (manifest spellings)
        _required("permission", _STRING),  # Allow | Deny
        _required("host", _STRING),
    ]),
    "broker_configs": pa.schema([
        _required("cluster", _STRING),
        _required("broker", _STRING),  # "" for the cluster-wide default, else the broker id
        _required("key", _STRING),
        _nullable("value", _STRING),  # null when sensitive
        _required("source", _STRING),  # DYNAMIC_BROKER_CONFIG | DYNAMIC_DEFAULT_BROKER_CONFIG
        _required("sensitive", pa.bool_()),
    ]),
    "scram_credentials": pa.schema([
        _required("cluster", _STRING),
        _required("user", _STRING),  # the SCRAM user name (principal User:<user>)
        _required("mechanism", _STRING),  # SCRAM-SHA-256 | SCRAM-SHA-512
        _required("iterations", _INT),
    ]),
    "client_quotas": pa.schema([
        _required("cluster", _STRING),
        _required("entity", _STRING),  # user=alice | client-id=app | user=<default>,client-id=app | ip=10.0.0.1
        _nullable("user", _STRING),  # the entity's user name; null: no user component, or the default user
        _nullable("client_id", _STRING),  # likewise for client-id
        _nullable("ip", _STRING),  # likewise for ip
        _required("key", _STRING),  # producer_byte_rate, consumer_byte_rate, request_percentage, ...
        _required("value", pa.float64()),
    ]),
})

TABLES: tuple[str, ...] = tuple(SCHEMAS)

# The header's keys, every one always present.
HEADER_KEYS: tuple[str, ...] = (
    "format", "version", "cluster", "clusterId", "bootstrap", "controllerId", "brokers",
    "takenAt", "seconds", "counts", "notes",
)


class SnapshotFormatError(ValueError):
    """A snapshot that cannot be read: no or garbled header, another format, or an unsupported version."""

    def __init__(self, path: str | Path, reason: str) -> None:
        self.path = Path(path)
        self.reason = reason
        super().__init__(f"{self.path}: {reason}")


def table_file(table: str) -> str:
    """The file name of a table: ``topics`` -> ``topics.parquet``."""
    if table not in SCHEMAS:
        raise KeyError(f"no snapshot table {table!r}; the tables are {', '.join(TABLES)}")
    return table + PARQUET_SUFFIX


def cluster_name_problem(name: str) -> str | None:
    """Why `name` cannot name a snapshot directory (DIR/<name>/), or None."""
    if not name or not name.strip():
        return "the cluster name is empty"
    if name in (".", "..") or name.startswith("."):
        return f"{name!r} cannot name a directory: it starts with '.' (hidden, and kept for temporary files)"
    if any(c in name for c in "/\\\0") or any(ord(c) < 32 for c in name):
        return f"{name!r} cannot name a directory: no '/', '\\' or control characters"
    return None


def snapshot_dir(out_dir: str | Path, cluster: str) -> Path:
    """Where the snapshot of `cluster` lives under `out_dir`: ``out_dir/<cluster>/``."""
    if problem := cluster_name_problem(cluster):
        raise ValueError(problem)
    return Path(out_dir) / cluster


def snapshot_dirs(out_dir: str | Path) -> list[Path]:
    """The snapshot directories under `out_dir` (one per cluster), by name: those holding a
    header.json, skipping the hidden ones (``.NAME.tmp-…``, ``.NAME.old-…``) of a write in progress."""
    root = Path(out_dir)
    return sorted(p for p in root.iterdir()
                  if not p.name.startswith(".") and p.is_dir() and (p / HEADER_FILE).is_file())


def read_header(path: str | Path) -> dict[str, Any]:
    """The header of a snapshot: `path` is its header.json or the snapshot directory holding it.

    Raises SnapshotFormatError, naming the file, when the header is missing or not JSON, is of
    another format, has a version this module does not read, or lacks keys of the format.
    """
    path = Path(path)
    file = path / HEADER_FILE if path.is_dir() else path
    try:
        text = file.read_text("utf-8")
    except FileNotFoundError:
        raise SnapshotFormatError(file, "no snapshot header here (not a kafkaops snapshot directory, "
                                        "or its header.json is missing)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SnapshotFormatError(file, f"cannot read the snapshot header: {exc}") from None
    try:
        header = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SnapshotFormatError(file, f"the snapshot header is not valid JSON ({exc})") from None
    if not isinstance(header, dict):
        raise SnapshotFormatError(file, f"the snapshot header is a JSON {type(header).__name__}, not an object")
    if header.get("format") != FORMAT:
        raise SnapshotFormatError(file, f"format is {header.get('format')!r}, expected {FORMAT!r}")
    version = header.get("version")
    if type(version) is not int or version != VERSION:
        raise SnapshotFormatError(file, f"snapshot format version {version!r} is not supported "
                                        f"(this kafkaops reads version {VERSION})")
    if missing := [k for k in HEADER_KEYS if k not in header]:
        raise SnapshotFormatError(file, f"the snapshot header lacks {', '.join(missing)}")
    return header
