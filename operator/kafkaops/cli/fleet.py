"""`kafkaops fleet plan`: the whole fleet's desired state against snapshots of its clusters, on Spark.

PySpark is imported only when the command runs, so the rest of the CLI starts as fast as before.

This module is also the script spark-submit runs, and `python -m kafkaops.cli.fleet plan ...`:

    spark-submit --master yarn --deploy-mode client \\
        "$(python -c 'import kafkaops.cli.fleet as m; print(m.__file__)')" \\
        plan -f hdfs:///gitops/repo --observed hdfs:///gitops/snapshots --out hdfs:///gitops/fleet/$(date +%F)

Under spark-submit the session takes spark-submit's master and settings (see fleet/session.py).
It lives here, not in `kafkaops/fleet/__main__.py`, so that the pipeline never imports a front end.
"""

from __future__ import annotations

import click

from kafkaops.cli.extras import require_extra
from kafkaops.cli.options import old_spelling, require
from kafkaops.fleet import PLAN_TASK_TOPICS
from kafkaops.reconcile.plan import DEFAULT_PROTECTED_TOPICS

EXIT_OK, EXIT_ERROR, EXIT_CHANGES = 0, 1, 2

PLAN_HELP = """Plan the whole fleet on Spark: changes, drift, orphans, policy, access.

\b
Examples:
  kafkaops fleet plan -f clusters/ --observed snapshots/ --output-dir fleet-out/
  kafkaops fleet plan -f s3a://git/clusters --observed s3a://snaps --output-dir s3a://out

report.html and datasets: docs/fleet.md. Exit 0 none, 2 changes, 1 error.
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
    """Fleet-wide planning over many clusters, on Spark.

    \b
    Examples:
      kafkaops snapshot --bootstrap-server kafka:9092 --cluster prod --output-dir snapshots/
      kafkaops fleet plan -f clusters/ --observed snapshots/ --output-dir fleet-out/
    """


def _positive(ctx: click.Context, param: click.Parameter, value: int) -> int:
    if value < 1:
        raise click.BadParameter(f"{value} is not a positive number of topics")
    return value


@fleet.command("plan", help=PLAN_HELP)
@click.option("-f", "--filename", "desired", multiple=True, metavar="PATH",
              help="Manifests (repeatable; Hadoop paths too).")
@old_spelling("--desired", "-f/--filename", "desired", multiple=True)
@click.option("--observed", metavar="PATH", help="Snapshots: PATH/<cluster>/header.json...")
@click.option("--output-dir", "out", metavar="DIR", help="Datasets and report go here (replaced).")
@old_spelling("--out", "--output-dir", "out")
@click.option("--master", default=None, metavar="URL", help="Spark master [local[*]].")
@click.option("--policy", default=None, metavar="FILE", help="Policy file (YAML, docs/fleet.md).")
@click.option("--prune", is_flag=True, help="Plan deleting undeclared topics.")
@click.option("--internal-topics", default=DEFAULT_PROTECTED_TOPICS, metavar="REGEX",
              help="Never orphans nor pruned [__*, ...].")
@click.option("--access-from", type=click.Choice(["observed", "desired"]), default="observed", metavar="FROM",
              help="observed (ACLs) or desired [observed].")
@click.option("--plan-task-topics", type=int, default=PLAN_TASK_TOPICS, metavar="N", callback=_positive,
              help=f"Topics per planning task [{PLAN_TASK_TOPICS}].")
@click.option("--conf", "conf", multiple=True, metavar="KEY=VALUE", help="A Spark setting (repeatable).")
@click.option("--driver-memory", default=None, metavar="SIZE", help="Driver memory in local mode [4g].")
@click.option("--spark-ui", is_flag=True, help="Keep Spark's web UI on.")
@click.option("-v", "--verbose", is_flag=True, help="Show Spark's and Java's own output.")
def plan(desired: tuple[str, ...], observed: str | None, out: str | None, master: str | None, policy: str | None,
         prune: bool, internal_topics: str, access_from: str, plan_task_topics: int, conf: tuple[str, ...],
         driver_memory: str | None, spark_ui: bool, verbose: bool) -> None:
    if not desired:
        raise click.UsageError("Missing option '-f' / '--filename'.")
    observed, out = require(observed, "--observed"), require(out, "--output-dir")
    import re

    require_extra("fleet", "fleet")
    from kafkaops.fleet.errors import FleetError
    from kafkaops.fleet.pipeline import FleetOptions, run

    try:
        re.compile(internal_topics)
    except re.error as exc:
        raise click.BadParameter(f"not a regular expression: {exc}", param_hint="--internal-topics") from exc
    options = FleetOptions(list(desired), observed, out, master, policy, prune, internal_topics, access_from,
                           _conf(conf), driver_memory, spark_ui, verbose, plan_task_topics)
    try:
        result = run(options, echo=lambda line: click.echo(line, err=True))
    except FleetError as exc:  # the arguments are checked before Spark starts: one line per mistake
        for line in str(exc).splitlines():
            click.echo(f"Error: {line}", err=True)
        raise SystemExit(EXIT_ERROR) from None
    click.echo(result.summary())
    click.echo(f"report: {result.out}/report.html")
    if result.has_input_errors or result.policy_errors or result.refused:
        raise SystemExit(EXIT_ERROR)
    raise SystemExit(EXIT_CHANGES if result.changes else EXIT_OK)


if __name__ == "__main__":
    fleet(prog_name="kafkaops fleet")
