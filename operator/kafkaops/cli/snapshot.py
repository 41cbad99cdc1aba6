"""`kafkaops snapshot`: read a cluster in bulk and write it as Parquet tables plus a JSON header.

The reading is kafkaops.snapshot.take, the writing kafkaops.snapshot.write; the format is
documented in operator/kafkaops/snapshot/README.md.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import click

from typing import TYPE_CHECKING

from kafkaops.cli.extras import require_extra
from kafkaops.cli.targets import client_settings
from kafkaops.kafka import AdminClient, Batcher, ClientSettings, KafkaOpsError

if TYPE_CHECKING:  # pyarrow (the 'fleet' extra) is imported only when the command runs
    from kafkaops.snapshot.take import Snapshot


def _cluster_name(_ctx: click.Context, _param: click.Parameter, value: str) -> str:
    require_extra("snapshot", "fleet")  # the first callback to run; --help never gets here
    from kafkaops.snapshot.format import cluster_name_problem

    if problem := cluster_name_problem(value):
        raise click.BadParameter(problem)
    return value


@click.command("snapshot")
@click.option("--bootstrap-server", "bootstrap", required=True, metavar="HOST:PORT[,HOST:PORT...]",
              help="The cluster to read.")
@click.option("--command-config", type=click.Path(exists=True, dir_okay=False), metavar="FILE",
              help="Kafka client.properties for TLS/SASL (as for the Kafka CLI tools).")
@click.option("--cluster", "cluster", required=True, callback=_cluster_name, metavar="NAME",
              help="The cluster's name in the snapshot: its directory under --out and the `cluster` "
                   "column of every table.")
@click.option("--out", "out", required=True, type=click.Path(file_okay=False), metavar="DIR",
              help="Where snapshots live: this one is written to DIR/NAME/ (created if needed; an older "
                   "snapshot of NAME there is replaced). Snapshots of many clusters can share one DIR.")
def snapshot(bootstrap: str, command_config: str | None, cluster: str, out: str) -> None:
    """Read a cluster in bulk and write its observed state as Parquet tables.

    \b
    Writes DIR/NAME/:
      header.json             format, version, cluster name and id, bootstrap, controller,
                              brokers, when (takenAt, UTC) and how long it took, row counts,
                              and notes on what could not be read
      topics.parquet          one row per topic: id, partitions, replication factor, internal
      partitions.parquet      one row per partition: leader, replicas, ISR
      topic_configs.parquet   the configs set on topics (not defaults)
      acls.parquet            every ACL binding, in the manifests' spellings (empty, with a
                              note, on a cluster without an authorizer)
      broker_configs.parquet  dynamic broker configs: the cluster-wide default (broker "")
                              and per broker

    Sensitive config values (passwords, JAAS) are never written: their value is null.
    Every table is written even when empty, with its full schema; the new snapshot
    replaces an older one of NAME whole. The reads are in bulk: one Metadata request,
    batched DescribeConfigs, one DescribeAcls. The format (version 1) is documented
    in operator/kafkaops/snapshot/README.md.

    \b
    Examples:
      kafkaops snapshot --bootstrap-server kafka:9092 --cluster prod --out snapshots/
      kafkaops snapshot --bootstrap-server kafka:9093 --command-config admin.properties \\
          --cluster staging --out /data/kafka-snapshots
    """
    from kafkaops.snapshot.write import write_snapshot

    try:
        settings = client_settings(bootstrap, command_config)
    except ValueError as exc:  # bad bootstrap list, unreadable or invalid client.properties
        raise click.UsageError(str(exc)) from None
    try:
        taken = asyncio.run(read(settings, cluster))
    except (KafkaOpsError, OSError) as exc:
        click.echo(f"error: cannot snapshot {bootstrap}: {exc}", err=True)
        raise SystemExit(1) from None
    try:
        path = write_snapshot(taken, out)
    except OSError as exc:
        click.echo(f"error: cannot write the snapshot to {Path(out) / cluster}: {exc.strerror or exc}", err=True)
        raise SystemExit(1) from None
    click.echo(summary(taken, path), err=True)


async def read(settings: ClientSettings, cluster: str) -> Snapshot:
    """Connect with `settings` and take the snapshot. Raises KafkaOpsError or OSError when the
    cluster cannot be reached."""
    from kafkaops.snapshot.take import take_snapshot

    bootstrap = ",".join(f"{h}:{p}" for h, p in settings.bootstrap)
    async with AdminClient.connect(bootstrap, settings=settings) as admin:
        return await take_snapshot(admin, Batcher(admin), cluster)


def summary(taken: Snapshot, path: Path) -> str:
    counts = taken.header["counts"]

    def count(table: str, one: str, many: str) -> str:
        n = counts[table]
        return f"{n} {one if n == 1 else many}"

    notes = len(taken.notes)
    return (f"snapshot of {taken.cluster}: {count('topics', 'topic', 'topics')}, "
            f"{count('partitions', 'partition', 'partitions')}, "
            f"{count('topic_configs', 'topic config', 'topic configs')}, {count('acls', 'ACL', 'ACLs')}, "
            f"{count('broker_configs', 'broker config', 'broker configs')} in {taken.header['seconds']:.2f}s "
            f"-> {path}" + (f" ({notes} note{'s' if notes != 1 else ''} in header.json)" if notes else ""))
