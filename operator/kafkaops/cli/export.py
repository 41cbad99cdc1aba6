"""`kafkaops export`: write manifests for what a cluster holds, to adopt an existing cluster.

The reading happens here (one connection, one read_cluster); what to write is
decided by the pure reconcile/export.py.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import click

from kafkaops.cli.options import (
    connection_option_list,
    connection_overrides,
    old_spelling,
    regex_option,
    require,
)
from kafkaops.cli.targets import client_settings
from kafkaops.kafka import AdminClient, Batcher, ClientSettings, KafkaOpsError
from kafkaops.reconcile.export import (
    ACLS,
    BROKER_CONFIGS,
    INCLUDABLE,
    KIND_FILES,
    TOPICS,
    ClusterAccess,
    ExportResult,
    cluster_problem,
    export_documents,
    files_by_kind,
    is_k8s_name,
    to_yaml,
)
from kafkaops.reconcile.read import ClusterRead, ObserveScope, read_cluster
from kafkaops.resources.kinds import KAFKA_ACL, KAFKA_BROKER_CONFIG, KAFKA_TOPIC

_INCLUDE_ORDER = (TOPICS, ACLS, BROKER_CONFIGS)


def _include(_ctx: click.Context, _param: click.Parameter, value: str) -> frozenset[str]:
    parts = [part.strip().lower() for part in value.split(",") if part.strip()]
    if not parts:
        raise click.BadParameter(f"give a comma list of {', '.join(_INCLUDE_ORDER)}")
    unknown = sorted(set(parts) - INCLUDABLE)
    if unknown:
        raise click.BadParameter(f"{', '.join(unknown)}: choose from {', '.join(_INCLUDE_ORDER)}")
    return frozenset(parts)


def _cluster_name(_ctx: click.Context, _param: click.Parameter, value: str) -> str:
    if not is_k8s_name(value):
        raise click.BadParameter(f"{value!r} is not a valid Kubernetes name (lowercase letters, digits, '-' and '.')")
    return value


@click.command("export")
@click.option("--bootstrap-server", "bootstrap", metavar="HOST:PORT", help="The cluster to export from.")
@click.option("--command-config", type=click.Path(exists=True, dir_okay=False), metavar="FILE",
              help="Kafka client.properties (TLS, SASL).")
@click.option("--cluster", "cluster_name", default="exported", callback=_cluster_name, metavar="NAME",
              help="The KafkaCluster's name [exported].")
@old_spelling("--cluster-name", "--cluster", "cluster_name", callback_check=_cluster_name)
@click.option("--output-dir", "output_dir", type=click.Path(file_okay=False), metavar="DIR",
              help="One file per kind here [default: stdout].")
@click.option("--out", "out", hidden=True, type=click.Path(), default=None)  # old spelling, warned below
@click.option("--topics", "topics", metavar="REGEX", callback=regex_option, help="Only topics matching REGEX.")
@click.option("--include", "include", default=",".join(_INCLUDE_ORDER), callback=_include, metavar="LIST",
              help="topics,acls,broker-configs [all].")
@click.option("--include-internal", is_flag=True, help="Also internal topics (__consumer_offsets...).")
@connection_option_list()
def export(bootstrap: str | None, command_config: str | None, cluster_name: str, output_dir: str | None,
           out: str | None, topics: re.Pattern[str] | None, include: frozenset[str], include_internal: bool,
           connect_timeout: float, retry_budget: float) -> None:
    """Write manifests for what a cluster holds, to adopt it (then plan: no changes).

    \b
    Examples:
      kafkaops export --bootstrap-server kafka:9092 --cluster prod --output-dir clusters/prod/
      kafkaops export --bootstrap-server kafka:9093 --command-config admin.properties \\
          --topics '^orders\\.' --include topics > orders.yaml

    Topic configs set on topics only; secrets and internal topics are left out, with a
    note on stderr. Details: docs/cli.md.
    """
    bootstrap = require(bootstrap, "--bootstrap-server")
    if out is not None:
        click.echo("kafkaops: --out is deprecated; use --output-dir DIR, or > FILE for one file (the old spelling "
                   "still works for now)", err=True)
    if output_dir is not None:
        out = output_dir.rstrip("/\\") + "/"  # always a directory: one file per kind
    servers = [s.strip() for s in bootstrap.split(",") if s.strip()]
    try:
        settings = client_settings(bootstrap, command_config, **connection_overrides(connect_timeout, retry_budget))
    except ValueError as exc:  # bad bootstrap list, unreadable or invalid client.properties
        raise click.UsageError(str(exc)) from None
    access = ClusterAccess.of(settings.security)
    if problem := cluster_problem(cluster_name, servers, access):
        raise click.UsageError(problem)
    try:
        read = asyncio.run(read_for_export(settings, topics, include))
    except (KafkaOpsError, OSError) as exc:
        click.echo(f"error: cannot export from {bootstrap}: {exc}", err=True)
        raise SystemExit(1) from None
    result = export_documents(read.observed, cluster_name=cluster_name, bootstrap_servers=servers, topics=topics,
                              include=include, include_internal=include_internal, access=access,
                              unmapped_acls=read.unmapped_acls)
    for note in result.notes:
        click.echo(f"note: {note}", err=True)
    where = _write(result, include, out)
    click.echo(f"{_summary(result)} from {result.origin}{where}", err=True)


async def read_for_export(settings: ClientSettings, topics: re.Pattern[str] | None = None,
                          include: frozenset[str] = INCLUDABLE) -> ClusterRead:
    """Everything an export of `include` needs, in one read_cluster(): the topics `topics` selects
    with all their configs, broker configs (the cluster default and every broker), and every ACL
    binding. Raises KafkaOpsError (or OSError) when the cluster cannot be reached."""
    async with AdminClient.connect(",".join(f"{h}:{p}" for h, p in settings.bootstrap), settings=settings) as admin:
        meta = admin.cached_metadata or await admin.refresh_metadata()
        if TOPICS not in include:
            names: frozenset[str] | None = frozenset()
        elif topics is None:
            names = None
        else:  # list first, so that only the selected topics' configs are read
            listed = await admin.metadata(None)
            names = frozenset(n for n in listed.topics if topics.search(n))
        keys = frozenset({""} | {str(b) for b in meta.brokers}) if BROKER_CONFIGS in include else frozenset()
        scope = ObserveScope(topics=names, topic_configs=None if names is None else dict.fromkeys(names),
                             acls=ACLS in include, broker_keys=keys, reassignments=False)  # every key of every topic
        return await read_cluster(Batcher(admin), scope)


def _write(result: ExportResult, include: frozenset[str], out: str | None) -> str:
    """Write the YAML; answer where to, for the summary line."""
    if out is None:
        click.echo(to_yaml(result.documents, origin=result.origin), nl=False)
        return ""
    path = Path(out)
    try:
        if out.endswith(("/", "\\")) or path.is_dir():
            path.mkdir(parents=True, exist_ok=True)
            files = files_by_kind(result, include)
            for name, text in files.items():
                (path / name).write_text(text, "utf-8")
            return f" to {path}/ ({', '.join(n for n in KIND_FILES.values() if n in files)})"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(to_yaml(result.documents, origin=result.origin), "utf-8")
    except OSError as exc:
        click.echo(f"error: cannot write {out}: {exc.strerror or exc}", err=True)
        raise SystemExit(1) from None
    return f" to {path}"


def _summary(result: ExportResult) -> str:
    def count(kind: str, one: str, many: str) -> str:
        n = len(result.of_kind(kind))
        return f"{n} {one if n == 1 else many}"

    return (f"exported {count(KAFKA_TOPIC, 'topic', 'topics')}, "
            f"{count(KAFKA_ACL, 'ACL principal', 'ACL principals')}, "
            f"{count(KAFKA_BROKER_CONFIG, 'broker config', 'broker configs')}"
            + (f" ({len(result.notes)} note{'s' if len(result.notes) != 1 else ''} above)" if result.notes else ""))
