"""`kafkaops fleet plan`: the whole fleet's desired state against snapshots of its clusters, on Spark.

PySpark is imported only when the command runs, so the rest of the CLI starts as fast as before.
"""

from __future__ import annotations

import click

from kafkaops.cli.extras import require_extra
from kafkaops.reconcile.plan import DEFAULT_PROTECTED_TOPICS

EXIT_OK, EXIT_ERROR, EXIT_CHANGES = 0, 1, 2

PLAN_HELP = """Plan the whole fleet: what an apply would change, drift, orphans, policy, access.

Reads every kafkaops manifest under --desired (directories searched recursively for *.yaml and
*.yml, parsed and validated inside Spark) and the snapshots `kafkaops snapshot` wrote under
--observed (one directory per cluster, format version 1), and writes under --out:

\b
  plan/     per cluster and resource, what `kafkaops apply` would do (the engine's own planner)
  drift/    declared values that differ in the cluster
  orphans/  topics and ACL bindings present in a cluster and declared nowhere
  policy/   violations of the --policy rules
  access/   for every principal, the topics it can read and write, and the granting bindings
  issues/   invalid manifests and skipped snapshots, each naming its file
  report.html, summary.md

Each resource goes to the cluster its spec.clusterRef names; a document without clusterRef under a
clusters/<name>/ directory goes to <name>. A bad manifest or a snapshot of an unknown format is
reported with its file and skipped; the rest of the fleet goes on.

Runs in Spark local mode on every core by default; --master URL (or spark-submit) runs the same
job on a cluster. Paths may be any Hadoop-compatible URI (hdfs://, s3a://, abfss://, gs://).

\b
Exit status:
  0  nothing to change, no problem
  2  changes are pending (the plan is not empty)
  1  an input problem (invalid manifest, skipped snapshot), a policy error, a refused change,
     or the run could not happen (the error says why)
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


@fleet.command("plan", help=PLAN_HELP)
@click.option("--desired", "desired", multiple=True, required=True, metavar="PATH",
              help="A directory (or file) of manifests; repeatable. Any Hadoop-compatible path.")
@click.option("--observed", required=True, metavar="PATH",
              help="The snapshots: PATH/<cluster>/header.json and its Parquet tables.")
@click.option("--out", "out", required=True, metavar="DIR", help="Where the datasets and the report go (replaced).")
@click.option("--master", default=None, metavar="URL",
              help="Spark master (spark://..., yarn, k8s://..., local[N]) [default: spark-submit's, else local[*]].")
@click.option("--policy", default=None, metavar="FILE", help="A policy file (YAML, see docs/fleet.md).")
@click.option("--prune", is_flag=True,
              help="Plan deleting undeclared topics where the KafkaCluster's topicDeletion.policy is Delete "
                   "(as `kafkaops plan --prune`).")
@click.option("--internal-topics", default=DEFAULT_PROTECTED_TOPICS, show_default=True, metavar="REGEX",
              help="Topic names that are never orphans nor pruned (matched at the start of the name).")
@click.option("--access-from", type=click.Choice(["observed", "desired"]), default="observed", show_default=True,
              help="Compute access from the clusters' ACLs (observed) or from the manifests (desired).")
@click.option("--conf", "conf", multiple=True, metavar="KEY=VALUE", help="A Spark setting; repeatable.")
@click.option("--driver-memory", default=None, metavar="SIZE",
              help="Spark driver memory in local mode [default: 4g] (where everything runs in local mode).")
@click.option("--spark-ui", is_flag=True, help="Keep Spark's web UI on (local mode turns it off).")
def plan(desired: tuple[str, ...], observed: str, out: str, master: str | None, policy: str | None, prune: bool,
         internal_topics: str, access_from: str, conf: tuple[str, ...], driver_memory: str | None,
         spark_ui: bool) -> None:
    import re

    require_extra("fleet", "fleet")
    from kafkaops.fleet.errors import FleetError
    from kafkaops.fleet.pipeline import FleetOptions, run

    try:
        re.compile(internal_topics)
    except re.error as exc:
        raise click.BadParameter(f"not a regular expression: {exc}", param_hint="--internal-topics") from exc
    options = FleetOptions(list(desired), observed, out, master, policy, prune, internal_topics, access_from,
                           _conf(conf), driver_memory, spark_ui)
    try:
        result = run(options, echo=lambda line: click.echo(line, err=True))
    except FleetError as exc:
        click.echo(f"Error: {exc}", err=True)
        raise SystemExit(EXIT_ERROR) from None
    click.echo(result.summary())
    click.echo(f"report: {result.out}/report.html")
    if result.has_input_errors or result.policy_errors or result.refused:
        raise SystemExit(EXIT_ERROR)
    raise SystemExit(EXIT_CHANGES if result.changes else EXIT_OK)
