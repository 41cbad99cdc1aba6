"""The `kafkaops` command line: a click group; each command lives in its own module."""

from __future__ import annotations

import click

from kafkaops import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="kafkaops")
def cli() -> None:
    """Declarative GitOps reconciler for Apache Kafka topics, ACLs and configs."""


def main() -> None:
    cli()
from kafkaops.cli.validate import validate
from kafkaops.cli.crds import crds
cli.add_command(validate)
cli.add_command(crds)


from kafkaops.cli.dev_cluster import dev_cluster  # noqa: E402

cli.add_command(dev_cluster)
from kafkaops.cli.export import export  # noqa: E402
cli.add_command(export)

from kafkaops.cli.plan_apply import apply, plan  # noqa: E402

cli.add_command(plan)
cli.add_command(apply)
from kafkaops.cli.run import run  # noqa: E402
cli.add_command(run)
from kafkaops.cli.elect_leaders import elect_leaders  # noqa: E402
cli.add_command(elect_leaders)
from kafkaops.cli.snapshot import snapshot  # noqa: E402
cli.add_command(snapshot)
