"""`kafkaops fleet plan`: the whole fleet's desired state against snapshots of its clusters, on Spark.

PySpark is imported only when the command runs, so the rest of the CLI starts as fast as before.
"""

from __future__ import annotations

import click

from kafkaops.reconcile.plan import DEFAULT_PROTECTED_TOPICS

EXIT_OK, EXIT_ERROR, EXIT_CHANGES = 0, 1, 2

PLAN_HELP = """Plan the whole fleet on Spark: changes, drift, orphans, policy, access.

\b
  kafkaops fleet plan -f repo/ --observed snapshots/ --output-dir out/
  kafkaops fleet plan -f repo/ --observed s3a://b/snaps --output-dir s3a://b/fleet --master yarn

Writes Parquet datasets, report.html, summary.md. Exit 0: clean, 2: changes pending,
1: a problem (the error says which). See docs/fleet.md.
"""


def _conf(values: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--conf")
        out[key.strip()] = value
    return out


@click.group()
def fleet() -> None:
    """Fleet-wide planning over many clusters, on Spark (see `kafkaops fleet plan --help`)."""


def _deprecated(new: str):
    """The callback of an old spelling kept hidden: it still works and says what replaced it."""
    def callback(ctx: click.Context, param: click.Parameter, value: object) -> object:
        if value not in (None, ()):
            click.echo(f"Warning: {param.opts[0]} is deprecated; use {new}.", err=True)
        return value
    return callback


@fleet.command("plan", help=PLAN_HELP)
@click.option("-f", "--filename", "desired", multiple=True, metavar="PATH",
              help="Manifests (dir or file).  [required]")
@click.option("--desired", "desired_old", multiple=True, hidden=True, callback=_deprecated("-f/--filename"))
@click.option("--observed", required=True, metavar="PATH",
              help="The snapshots' directory.")
@click.option("--output-dir", "out", default=None, metavar="DIR",
              help="Where outputs go (replaced).  [required]")
@click.option("--out", "out_old", default=None, hidden=True, callback=_deprecated("--output-dir"))
@click.option("--master", default=None, metavar="URL",
              help="Spark master [default: local[*]].")
@click.option("--policy", default=None, metavar="FILE", help="Policy rules (YAML).")
@click.option("--prune", is_flag=True,
              help="Plan deleting undeclared topics.")
@click.option("--internal-topics", default=DEFAULT_PROTECTED_TOPICS, metavar="REGEX",
              help="Never orphans nor pruned.")
@click.option("--access-from", type=click.Choice(["observed", "desired"]), default="observed",
              metavar="observed|desired", help="ACLs of clusters or manifests.")
@click.option("--conf", "conf", multiple=True, metavar="KEY=VALUE", help="A Spark setting; repeatable.")
@click.option("--driver-memory", default=None, metavar="SIZE",
              help="Local mode's memory [default: 4g].")
@click.option("--spark-ui", is_flag=True, help="Keep Spark's web UI on.")
@click.option("-v", "--verbose", is_flag=True, help="Show Spark's and Java's own output.")
def plan(desired: tuple[str, ...], desired_old: tuple[str, ...], observed: str, out: str | None,
         out_old: str | None, master: str | None, policy: str | None, prune: bool, internal_topics: str,
         access_from: str, conf: tuple[str, ...], driver_memory: str | None, spark_ui: bool, verbose: bool) -> None:
    import re

    from kafkaops.fleet.errors import FleetError
    from kafkaops.fleet.pipeline import FleetOptions, run

    desired = desired + desired_old
    if not desired:
        raise click.UsageError("Missing option '-f' / '--filename': the manifests (a directory or file).")
    out = out or out_old
    if out is None:
        raise click.UsageError("Missing option '--output-dir': where the datasets and the report go.")
    try:
        re.compile(internal_topics)
    except re.error as exc:
        raise click.BadParameter(f"not a regular expression: {exc}", param_hint="--internal-topics") from exc
    options = FleetOptions(list(desired), observed, out, master, policy, prune, internal_topics, access_from,
                           _conf(conf), driver_memory, spark_ui, verbose)
    try:
        result = run(options, echo=lambda line: click.echo(line, err=True))
    except FleetError as exc:
        for line in str(exc).splitlines():
            click.echo(f"Error: {line}", err=True)
        raise SystemExit(EXIT_ERROR) from None
    click.echo(result.summary())
    click.echo(f"report: {result.out}/report.html")
    if result.has_input_errors or result.policy_errors or result.refused:
        raise SystemExit(EXIT_ERROR)
    raise SystemExit(EXIT_CHANGES if result.changes else EXIT_OK)
