"""take_snapshot: read a cluster in bulk into the rows of the snapshot tables.

The reads: one read_cluster() (reconcile/read.py) of every topic (one Metadata request for every
topic, batched DescribeConfigs for their configs), the cluster-wide default and every broker's
configs, one DescribeAcls of every binding (those manifests cannot express kept apart, to be
counted), one DescribeUserScramCredentials (mechanism and iterations of every credential: Kafka
describes no secret) and one DescribeClientQuotas. Leaders and ISRs come from the Metadata response read_cluster() read (cached by the
admin client); only when that was replaced meanwhile is Metadata asked again.

What could not be read is left out of the tables and said in the header's notes.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from kafkaops import kafka
from kafkaops.frozen import frozen
from kafkaops.kafka import AdminClient, Batcher, ClusterMetadata, ConfigSource
from kafkaops.kafka import AclBinding as WireAclBinding
from kafkaops.kafka.errors import ErrorCode
from kafkaops.reconcile.read import ObserveScope, read_cluster
from kafkaops.reconcile.observed import ObservedConfig, ObservedState
from kafkaops.snapshot.format import FORMAT, TABLES, VERSION, cluster_name_problem
from kafkaops.snapshot.principals import principal_rows

Row = dict[str, Any]

_TOPIC_SOURCE = ConfigSource.DYNAMIC_TOPIC_CONFIG
_BROKER_SOURCE = ConfigSource.DYNAMIC_BROKER_CONFIG
_DEFAULT_SOURCE = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG


@frozen
class Snapshot:
    """One cluster's snapshot: the header and each table's rows (dicts keyed by column name,
    in the order they are written). Treat the rows as read-only."""

    header: Mapping[str, Any]
    topics: tuple[Row, ...] = ()
    partitions: tuple[Row, ...] = ()
    topic_configs: tuple[Row, ...] = ()
    acls: tuple[Row, ...] = ()
    broker_configs: tuple[Row, ...] = ()
    scram_credentials: tuple[Row, ...] = ()
    client_quotas: tuple[Row, ...] = ()

    @property
    def cluster(self) -> str:
        return self.header["cluster"]

    @property
    def notes(self) -> tuple[str, ...]:
        return tuple(self.header["notes"])

    def rows(self, table: str) -> tuple[Row, ...]:
        if table not in TABLES:
            raise KeyError(f"no snapshot table {table!r}; the tables are {', '.join(TABLES)}")
        return getattr(self, table)


async def take_snapshot(admin: AdminClient, batcher: Batcher, cluster_name: str) -> Snapshot:
    """Read the cluster `admin` is connected to (through `batcher`, which must wrap `admin`).

    Raises KafkaOpsError (or OSError) when the cluster cannot be reached; a read that fails
    for one part only (ACLs without an authorizer, one broker's configs) becomes a note.
    """
    if problem := cluster_name_problem(cluster_name):
        raise ValueError(problem)
    taken_at = datetime.now(UTC)
    started = time.monotonic()
    meta = admin.cached_metadata or await admin.refresh_metadata()
    scope = ObserveScope(
        topics=None,  # every topic
        topic_configs=None,  # every key of every topic (the non-default ones are kept below)
        acls=True,
        broker_keys=frozenset({""} | {str(b) for b in meta.brokers}),
        reassignments=False,
        scram=True,  # every credential's mechanism and iterations (never a secret: Kafka describes no more)
        quotas=True,
    )
    read = await read_cluster(batcher, scope)
    observed = read.observed
    notes: list[str] = []
    partitions_meta = await _partition_metadata(admin, observed)

    c = cluster_name
    topics: list[Row] = []
    partitions: list[Row] = []
    topic_configs: list[Row] = []
    for name in sorted(observed.topics):
        topic = observed.topics[name]
        topics.append({"cluster": c, "topic": name, "topic_id": topic.topic_id, "partitions": topic.partitions,
                       "replication_factor": topic.replication_factor, "internal": topic.internal})
        info = partitions_meta.topics.get(name)
        if info is None:  # deleted between the two Metadata reads
            notes.append(f"topic {name}: gone before its leaders could be read; partitions.parquet has its "
                         "replicas with leader -1 and an empty ISR")
            for index, replicas in enumerate(topic.assignment):
                partitions.append({"cluster": c, "topic": name, "partition": index, "leader": -1,
                                   "replicas": list(replicas), "isr": []})
        else:
            for p in sorted(info.partitions, key=lambda p: p.partition):
                partitions.append({"cluster": c, "topic": name, "partition": p.partition, "leader": p.leader,
                                   "replicas": list(p.replicas), "isr": list(p.isr)})
        if topic.configs_error is not None:
            notes.append(f"topic {name}: configs not read ({topic.configs_error}); none in topic_configs.parquet")
        topic_configs.extend(_config_rows({"cluster": c, "topic": name}, topic.configs or {}, _TOPIC_SOURCE))
    for name in sorted(observed.topic_errors):
        notes.append(f"topic {name}: not read ({observed.topic_errors[name]}); left out of every table")

    acls, acl_notes = _acl_rows(c, observed, read.unmapped_acls)
    notes.extend(acl_notes)
    broker_configs, broker_notes = _broker_config_rows(c, observed)
    notes.extend(broker_notes)
    scram_credentials, client_quotas, principal_notes = principal_rows(c, observed)
    notes.extend(principal_notes)

    rows = {"topics": topics, "partitions": partitions, "topic_configs": topic_configs, "acls": acls,
            "broker_configs": broker_configs, "scram_credentials": scram_credentials, "client_quotas": client_quotas}
    header = {
        "format": FORMAT,
        "version": VERSION,
        "cluster": cluster_name,
        "clusterId": observed.cluster_id,
        "bootstrap": ",".join(f"{h}:{p}" for h, p in admin.settings.bootstrap),
        "controllerId": observed.controller_id,
        "brokers": [{"id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack}
                    for b in sorted(observed.brokers.values(), key=lambda b: b.node_id)],
        "takenAt": taken_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "seconds": round(time.monotonic() - started, 3),
        "counts": {table: len(rows[table]) for table in TABLES},
        "notes": notes,
    }
    return Snapshot(header, **{table: tuple(rows[table]) for table in TABLES})


async def _partition_metadata(admin: AdminClient, observed: ObservedState) -> ClusterMetadata:
    """The Metadata read_cluster() read (leaders, ISRs); read again if the cached one no longer has the topics."""
    meta = admin.cached_metadata
    if meta is not None and all(name in meta.topics for name in observed.topics):
        return meta
    return await admin.metadata(None)


def _acl_rows(cluster: str, observed: ObservedState, unmapped: tuple[WireAclBinding, ...]) -> tuple[list[Row], list[str]]:
    if observed.acls is None:
        error = observed.acls_error
        if error is not None and error.code == ErrorCode.security_disabled:
            why = "the cluster has no authorizer (DescribeAcls answered SECURITY_DISABLED)"
        else:
            why = f"DescribeAcls failed: {error}"
        return [], [f"no ACLs: {why}; acls.parquet is empty"]
    rows = sorted((b.principal, str(b.resource_type), b.resource_name, str(b.pattern_type), str(b.operation),
                   str(b.permission), b.host) for bindings in observed.acls.values() for b in bindings)
    skipped: dict[str, int] = {}
    for binding in unmapped:
        what = _wire_kind(binding)
        skipped[what] = skipped.get(what, 0) + 1
    notes = []
    if skipped:
        total = sum(skipped.values())
        kinds = ", ".join(f"{n} {what}" for what, n in sorted(skipped.items()))
        notes.append(f"{total} ACL binding{'s' if total != 1 else ''} not in acls.parquet: manifests cannot "
                     f"express them ({kinds})")
    columns = ("principal", "resource_type", "resource_name", "pattern_type", "operation", "permission", "host")
    return [{"cluster": cluster, **dict(zip(columns, row))} for row in rows], notes


def _wire_kind(binding: WireAclBinding) -> str:
    """What makes a binding inexpressible, e.g. "resource type USER"."""
    for label, enum_type, value in (("resource type", kafka.ResourceType, binding.resource_type),
                                    ("pattern type", kafka.PatternType, binding.pattern_type),
                                    ("operation", kafka.AclOperation, binding.operation),
                                    ("permission", kafka.AclPermission, binding.permission)):
        try:
            name = enum_type(value).name
        except ValueError:
            return f"{label} {value}"
        if name in ("UNKNOWN", "ANY", "MATCH", "USER"):
            return f"{label} {name}"
    return "other"


def _config_rows(where: Row, configs: Mapping[str, ObservedConfig], wanted: ConfigSource) -> list[Row]:
    """One row per config set at `wanted`'s level (the overrides), by key; sensitive values left out."""
    return [{**where, "key": key, "value": None if config.sensitive else config.value,
             "source": config.source.name, "sensitive": config.sensitive}
            for key, config in sorted(configs.items()) if config.source is wanted]


def _broker_sort_key(key: str) -> tuple[int, int, str]:
    return (0, 0, "") if key == "" else (1, int(key), key) if key.isdigit() else (2, 0, key)


def _broker_config_rows(cluster: str, observed: ObservedState) -> tuple[list[Row], list[str]]:
    rows: list[Row] = []
    notes: list[str] = []
    for broker in sorted(observed.broker_configs, key=_broker_sort_key):
        wanted = _DEFAULT_SOURCE if broker == "" else _BROKER_SOURCE
        rows.extend(_config_rows({"cluster": cluster, "broker": broker}, observed.broker_configs[broker], wanted))
    for broker in sorted(observed.broker_config_errors, key=_broker_sort_key):
        what = "the cluster-wide default broker configs" if broker == "" else f"broker {broker}'s configs"
        notes.append(f"{what}: not read ({observed.broker_config_errors[broker]}); none in broker_configs.parquet")
    return rows, notes
