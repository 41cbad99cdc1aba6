"""The `kafkaops` command line: a click group; each command lives in its own module."""

from __future__ import annotations

import click

from kafkaops import __version__
from kafkaops.cli.convert import convert
from kafkaops.cli.crds import crds
from kafkaops.cli.dev_cluster import dev_cluster
from kafkaops.cli.dev_kube import dev_kube
from kafkaops.cli.elect_leaders import elect_leaders
from kafkaops.cli.export import export
from kafkaops.cli.fleet import fleet
from kafkaops.cli.plan_apply import apply, plan
from kafkaops.cli.run import run
from kafkaops.cli.snapshot import snapshot
from kafkaops.cli.validate import validate


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="kafkaops")
def cli() -> None:
    """Declarative GitOps reconciler for Apache Kafka topics, ACLs and configs."""


for command in (validate, crds, plan, apply, export, snapshot, elect_leaders, fleet, run, dev_cluster, dev_kube, convert):
    cli.add_command(command)


def main() -> None:
    cli()
