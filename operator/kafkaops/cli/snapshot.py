"""`kafkaops snapshot`: read a cluster in bulk and write it as Parquet tables plus a JSON header.

The reading is kafkaops.snapshot.take, the writing kafkaops.snapshot.write; the format is
documented in operator/kafkaops/snapshot/README.md.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kafkaops.cli.extras import require_extra
from kafkaops.cli.options import connection_option_list, connection_overrides, old_spelling, require
from kafkaops.cli.targets import client_settings
from kafkaops.kafka import AdminClient, Batcher, ClientSettings, KafkaOpsError

if TYPE_CHECKING:  # kafkaops.snapshot imports pyarrow (the 'fleet' extra): only when the command runs
    from kafkaops.snapshot.take import Snapshot


def _cluster_name(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    require_extra("snapshot", "fleet")  # the first callback to run; --help never gets here
    from kafkaops.snapshot.format import cluster_name_problem

    if value is not None and (problem := cluster_name_problem(value)):
        raise click.BadParameter(problem)
    return value


@click.command("snapshot")
@click.option("--bootstrap-server", "bootstrap", metavar="HOST:PORT", help="The cluster to read.")
@click.option("--command-config", type=click.Path(exists=True, dir_okay=False), metavar="FILE",
              help="Kafka client.properties (TLS, SASL).")
@click.option("--cluster", "cluster", metavar="NAME", callback=_cluster_name,
              help="The cluster's name: DIR/NAME/, column `cluster`.")
@click.option("--output-dir", "out", type=click.Path(file_okay=False), metavar="DIR",
              help="Snapshots live here (DIR/NAME/ is replaced).")
@old_spelling("--out", "--output-dir", "out", type=click.Path(file_okay=False))
@connection_option_list()
def snapshot(bootstrap: str | None, command_config: str | None, cluster: str | None, out: str | None,
             connect_timeout: float, retry_budget: float) -> None:
    """Read a cluster in bulk; write Parquet tables and a JSON header to DIR/NAME/.

    \b
    Examples:
      kafkaops snapshot --bootstrap-server kafka:9092 --cluster prod --output-dir snapshots/
      kafkaops snapshot --bootstrap-server kafka:9093 --command-config admin.properties \\
          --cluster staging --output-dir /data/kafka-snapshots

    Sensitive config values are never written. Tables and format (version 1):
    operator/kafkaops/snapshot/README.md; more in docs/cli.md.
    """
    bootstrap = require(bootstrap, "--bootstrap-server")
    cluster = require(cluster, "--cluster")
    out = require(out, "--output-dir")
    try:
        settings = client_settings(bootstrap, command_config, **connection_overrides(connect_timeout, retry_budget))
    except ValueError as exc:  # bad bootstrap list, unreadable or invalid client.properties
        raise click.UsageError(str(exc)) from None
    try:
        taken = asyncio.run(read(settings, cluster))
    except (KafkaOpsError, OSError) as exc:
        click.echo(f"error: cannot snapshot {bootstrap}: {exc}", err=True)
        raise SystemExit(1) from None
    try:
        from kafkaops.snapshot.write import write_snapshot

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
            f"{count('broker_configs', 'broker config', 'broker configs')}, "
            f"{count('scram_credentials', 'SCRAM credential', 'SCRAM credentials')}, "
            f"{count('client_quotas', 'quota value', 'quota values')} in {taken.header['seconds']:.2f}s "
            f"-> {path}" + (f" ({notes} note{'s' if notes != 1 else ''} in header.json)" if notes else ""))
