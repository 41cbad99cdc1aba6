"""Helpers for the fleet tests: manifests, and snapshots (format version 1) written with pyarrow.

`kafkaops snapshot` is written by someone else; until it lands these tests write snapshots
directly with the contract's schemas (kafkaops.snapshot.format.SCHEMAS when it exists), either
from plain Python data (`write_snapshot`) or from a live cluster through the engine's own
`observe()` (`take_snapshot`).
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

API = "kafkaops.io/v1alpha1"


def _schemas() -> dict[str, pa.Schema]:
    try:  # the snapshot writer's own schemas, once it exists
        from kafkaops.snapshot.format import SCHEMAS  # type: ignore[import-not-found]

        return {name.removesuffix(".parquet"): schema for name, schema in dict(SCHEMAS).items()}
    except ImportError:
        pass
    s, i32, b = pa.string(), pa.int32(), pa.bool_()
    return {
        "topics": pa.schema([("cluster", s), ("topic", s), ("topic_id", s), ("partitions", i32),
                             ("replication_factor", i32), ("internal", b)]),
        "partitions": pa.schema([("cluster", s), ("topic", s), ("partition", i32), ("leader", i32),
                                 ("replicas", pa.list_(i32)), ("isr", pa.list_(i32))]),
        "topic_configs": pa.schema([("cluster", s), ("topic", s), ("key", s), ("value", s), ("source", s),
                                    ("sensitive", b)]),
        "acls": pa.schema([("cluster", s), ("principal", s), ("resource_type", s), ("resource_name", s),
                           ("pattern_type", s), ("operation", s), ("permission", s), ("host", s)]),
        "broker_configs": pa.schema([("cluster", s), ("broker", s), ("key", s), ("value", s), ("source", s),
                                     ("sensitive", b)]),
    }


SCHEMAS = _schemas()


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
                   header: Mapping[str, Any] | None = None, cluster_id: str | None = None) -> Path:
    """A snapshot directory root/cluster/ with the five tables and a header.

    acls: (principal, resource_type, resource_name, pattern_type, operation, permission, host);
    broker_configs: (broker, key, value, source)."""
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
    for name, rows in (("topics", topic_rows), ("partitions", part_rows), ("topic_configs", config_rows),
                       ("acls", acl_rows), ("broker_configs", broker_rows)):
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
    """Snapshot a live cluster into root/cluster/ (format version 1): with `kafkaops.snapshot`
    (take_snapshot + write_snapshot, what `kafkaops snapshot` runs) when it exists; else through
    the engine's observe() (every topic, every config key, every ACL, the cluster-default and
    per-broker configs), keeping the entries the format keeps."""
    try:
        from kafkaops.snapshot.take import take_snapshot as snapshot_take
        from kafkaops.snapshot.write import write_snapshot as snapshot_write
    except ImportError:  # pragma: no cover - before the writer landed
        snapshot_take = None
    if snapshot_take is not None:
        from kafkaops.kafka import AdminClient, Batcher, ClientSettings

        admin = AdminClient(ClientSettings.create(bootstrap))
        await admin.start()
        try:
            taken = await snapshot_take(admin, Batcher(admin), cluster)
        finally:
            await admin.close()
        return snapshot_write(taken, root)
    from kafkaops.kafka import AdminClient, Batcher, ClientSettings, ConfigSource
    from kafkaops.reconcile.observe import ObserveScope, observe

    admin = AdminClient(ClientSettings.create(bootstrap))
    await admin.start()
    try:
        batcher = Batcher(admin)
        await admin.refresh_metadata()
        meta = admin.cached_metadata
        broker_keys = frozenset({"", *(str(b) for b in meta.brokers)})
        seen = await observe(batcher, ObserveScope(topics=None, topic_configs=None, acls=True,
                                                   broker_keys=broker_keys, reassignments=False))
    finally:
        await admin.close()
    topics = []
    for name, t in seen.topics.items():
        configs = {k: c.value for k, c in (t.configs or {}).items() if c.source is ConfigSource.DYNAMIC_TOPIC_CONFIG}
        topics.append(SnapTopic(name, t.partitions, t.replication_factor, configs, t.internal,
                                [list(r) for r in t.assignment]))
    acls = [(b.principal, str(b.resource_type), b.resource_name, str(b.pattern_type), str(b.operation),
             str(b.permission), b.host) for bindings in (seen.acls or {}).values() for b in bindings]
    wanted = {"": ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG}
    broker_configs = [(key, k, c.value, c.source.name) for key, configs in seen.broker_configs.items()
                      for k, c in configs.items() if c.source is wanted.get(key, ConfigSource.DYNAMIC_BROKER_CONFIG)]
    base = write_snapshot(root, cluster, topics, acls, broker_configs, brokers=sorted(seen.brokers),
                          cluster_id=seen.cluster_id)
    data = json.loads((base / "header.json").read_text())
    data["bootstrap"] = bootstrap
    data["brokers"] = [{"id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack} for b in seen.brokers.values()]
    data["controllerId"] = seen.controller_id
    (base / "header.json").write_text(json.dumps(data))
    return base
