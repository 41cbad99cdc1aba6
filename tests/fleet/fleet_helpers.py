"""Helpers for the fleet tests: manifests, and snapshots (format version 1).

Snapshots come from plain Python data, written with pyarrow in the format's own schemas
(`write_snapshot`: hand-made clusters, injected differences, bad headers), or from a live
cluster with `kafkaops.snapshot` itself (`take_snapshot`).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from kafkaops.snapshot.format import SCHEMAS as FORMAT_SCHEMAS

API = "kafkaops.io/v1alpha1"


# the snapshot writer's own table schemas, keyed without the .parquet suffix
SCHEMAS: dict[str, pa.Schema] = {name.removesuffix(".parquet"): schema for name, schema in FORMAT_SCHEMAS.items()}


# --- manifests -------------------------------------------------------------------------------------------------


def doc(kind: str, name: str, spec: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    return {"apiVersion": API, "kind": kind, "metadata": metadata, "spec": copy.deepcopy(spec)}


def kcluster(name: str, bootstrap: str = "127.0.0.1:9092", namespace: str | None = None, **spec: Any) -> dict[str, Any]:
    return doc("KafkaCluster", name, {"bootstrapServers": bootstrap.split(","), **spec}, namespace)


def topic(name: str, cluster: str | None = "c1", partitions: int | None = 3, rf: int | None = 1,
          config: dict[str, Any] | None = None, namespace: str | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {}
    if cluster is not None:
        body["clusterRef"] = {"name": cluster}
    if partitions is not None:
        body["partitions"] = partitions
    if rf is not None:
        body["replicationFactor"] = rf
    if config:
        body["config"] = config
    body.update(spec)
    return doc("KafkaTopic", name, body, namespace)


def acl(name: str, principal: str, entries: list[dict[str, Any]], cluster: str | None = "c1") -> dict[str, Any]:
    body: dict[str, Any] = {"principal": principal, "acls": entries}
    if cluster is not None:
        body["clusterRef"] = {"name": cluster}
    return doc("KafkaAcl", name, body)


def entry(rtype: str, name: str, ops: Sequence[str], pattern: str = "Literal", permission: str = "Allow",
          host: str = "*") -> dict[str, Any]:
    return {"resource": {"type": rtype, "name": name, "patternType": pattern}, "operations": list(ops),
            "permission": permission, "host": host}


def write_yaml(path: Path, *docs: Mapping[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all([dict(d) for d in docs], sort_keys=False))
    return path


# --- snapshots ---------------------------------------------------------------------------------------------------


@dataclass
class SnapTopic:
    name: str
    partitions: int = 3
    rf: int = 1
    configs: dict[str, str] = field(default_factory=dict)  # DYNAMIC_TOPIC_CONFIG overrides
    internal: bool = False
    assignment: list[list[int]] | None = None
    other_configs: list[tuple[str, str, str]] = field(default_factory=list)  # (key, value, source)
    sensitive: set[str] = field(default_factory=set)  # keys the cluster flags sensitive (value null)


def _table(name: str, rows: list[dict[str, Any]]) -> pa.Table:
    schema = SCHEMAS[name]
    return pa.Table.from_pylist(rows, schema=schema)


def write_snapshot(root: Path, cluster: str, topics: Iterable[SnapTopic] = (), acls: Iterable[tuple] = (),
                   broker_configs: Iterable[tuple[str, str, str, str]] = (), brokers: Sequence[int] = (0,),
                   header: Mapping[str, Any] | None = None, cluster_id: str | None = None,
                   scram: Iterable[tuple[str, str, int]] = (), quotas: Iterable[tuple] = (),
                   principal_tables: bool = True) -> Path:
    """A snapshot directory root/cluster/ with the seven tables and a header (the five of a
    snapshot taken before users and quotas when `principal_tables` is false).

    acls: (principal, resource_type, resource_name, pattern_type, operation, permission, host);
    broker_configs: (broker, key, value, source); scram: (user, mechanism, iterations);
    quotas: (entity, user, client_id, ip, key, value)."""
    base = root / cluster
    base.mkdir(parents=True, exist_ok=True)
    topic_rows, part_rows, config_rows = [], [], []
    for t in topics:
        topic_rows.append({"cluster": cluster, "topic": t.name, "topic_id": None, "partitions": t.partitions,
                           "replication_factor": t.rf, "internal": t.internal})
        assignment = t.assignment or [[brokers[(p + r) % len(brokers)] for r in range(t.rf)] for p in range(t.partitions)]
        for p, replicas in enumerate(assignment):
            part_rows.append({"cluster": cluster, "topic": t.name, "partition": p, "leader": replicas[0],
                              "replicas": replicas, "isr": replicas})
        for key, value in t.configs.items():
            hidden = key in t.sensitive
            config_rows.append({"cluster": cluster, "topic": t.name, "key": key, "value": None if hidden else value,
                                "source": "DYNAMIC_TOPIC_CONFIG", "sensitive": hidden})
        for key, value, source in t.other_configs:
            config_rows.append({"cluster": cluster, "topic": t.name, "key": key, "value": value, "source": source,
                                "sensitive": False})
    acl_rows = [dict(zip(("principal", "resource_type", "resource_name", "pattern_type", "operation", "permission",
                          "host"), a), cluster=cluster) for a in acls]
    broker_rows = [{"cluster": cluster, "broker": b, "key": k, "value": v, "source": s, "sensitive": False}
                   for b, k, v, s in broker_configs]
    tables = [("topics", topic_rows), ("partitions", part_rows), ("topic_configs", config_rows),
              ("acls", acl_rows), ("broker_configs", broker_rows)]
    if principal_tables:
        tables.append(("scram_credentials", [{"cluster": cluster, "user": u, "mechanism": m, "iterations": i}
                                             for u, m, i in scram]))
        tables.append(("client_quotas", [dict(zip(("entity", "user", "client_id", "ip", "key", "value"), q),
                                              cluster=cluster) for q in quotas]))
    for name, rows in tables:
        pq.write_table(_table(name, rows), base / f"{name}.parquet")
    data = {"format": "kafkaops-snapshot", "version": 1, "cluster": cluster, "clusterId": cluster_id,
            "bootstrap": "127.0.0.1:9092", "controllerId": brokers[0] if brokers else -1,
            "brokers": [{"id": b, "host": "127.0.0.1", "port": 9092 + b, "rack": None} for b in brokers],
            "takenAt": "2026-01-01T00:00:00Z", "seconds": 0.1,
            "counts": {"topics": len(topic_rows), "acls": len(acl_rows)}, "notes": []}
    data.update(header or {})
    (base / "header.json").write_text(json.dumps(data))
    return base


async def take_snapshot(bootstrap: str, cluster: str, root: Path) -> Path:
    """Snapshot a live cluster into root/cluster/ with `kafkaops.snapshot` (take_snapshot +
    write_snapshot: what `kafkaops snapshot` runs)."""
    from kafkaops.kafka import AdminClient, Batcher, ClientSettings
    from kafkaops.snapshot.take import take_snapshot as snapshot_take
    from kafkaops.snapshot.write import write_snapshot as snapshot_write

    admin = AdminClient(ClientSettings.create(bootstrap))
    await admin.start()
    try:
        taken = await snapshot_take(admin, Batcher(admin), cluster)
    finally:
        await admin.close()
    return snapshot_write(taken, root)


def user(name: str, cluster: str | None = "c1", mechanism: str | None = "scram-sha-512",
         namespace: str | None = None, **spec: Any) -> dict[str, Any]:
    """A KafkaUser; `mechanism` None: no credential (quotas / ACLs only)."""
    body: dict[str, Any] = {}
    if cluster is not None:
        body["clusterRef"] = {"name": cluster}
    if mechanism is not None:
        body["authentication"] = {"type": mechanism, **spec.pop("authentication", {})}
    body.update(spec)
    return doc("KafkaUser", name, body, namespace)


def client_quota(name: str, entity: dict[str, Any], quotas: dict[str, Any], cluster: str | None = "c1",
                 namespace: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"entity": entity, "quotas": quotas}
    if cluster is not None:
        body["clusterRef"] = {"name": cluster}
    return doc("KafkaClientQuota", name, body, namespace)
