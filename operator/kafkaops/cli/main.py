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
