"""The `kafkaops` command line: a click group; each command lives in its own module.

Exit statuses, the same for every command (README.md has the table):
  0    ok
  1    an error, including a usage error (click's own 2 is remapped, so that 2 only ever means
       "changes pending" from `plan` and `fleet plan`)
  2    `plan` / `fleet plan`: changes are pending
  130  interrupted (Ctrl-C); 143 terminated (SIGTERM)
"""

from __future__ import annotations

import sys
from typing import Any

import click

from kafkaops import __version__
from kafkaops.cli.convert import convert
from kafkaops.cli.crds import crds
from kafkaops.cli.dev_cluster import dev_cluster
from kafkaops.cli.dev_kube import dev_kube
from kafkaops.cli.elect_leaders import elect_leaders
from kafkaops.cli.export import export
from kafkaops.cli.fleet import fleet
from kafkaops.cli.interrupt import EXIT_SIGINT
from kafkaops.cli.plan_apply import apply, plan
from kafkaops.cli.run import run
from kafkaops.cli.snapshot import snapshot
from kafkaops.cli.validate import validate
from kafkaops.kafka.security import install_redaction

EXIT_OK, EXIT_ERROR = 0, 1


class KafkaopsGroup(click.Group):
    """click's group with kafkaops' exit statuses: usage errors exit 1, Ctrl-C 130 (not 2 and 1)."""

    def main(self, args: Any = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, **extra: Any) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.ClickException as exc:  # UsageError, BadParameter, ... and ClickException itself
            exc.show()
            sys.exit(EXIT_ERROR)
        except (click.Abort, KeyboardInterrupt):
            click.echo("kafkaops: interrupted", err=True)
            sys.exit(EXIT_SIGINT)
        sys.exit(code if isinstance(code, int) else EXIT_OK)


CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@click.group(cls=KafkaopsGroup, context_settings=CONTEXT)
@click.version_option(__version__, prog_name="kafkaops")
def cli() -> None:
    """\b
    Declarative GitOps reconciler for Apache Kafka topics, ACLs and configs.
    Examples: (each command: kafkaops COMMAND --help; all of it: docs/cli.md)
      kafkaops validate clusters/
      kafkaops plan -f clusters/prod            # exit 2: changes pending
      kafkaops apply -f clusters/prod
    """


for command in (validate, crds, plan, apply, export, snapshot, elect_leaders, fleet, run, dev_cluster, dev_kube, convert):
    cli.add_command(command)


def main() -> None:
    install_redaction()  # before anything logs: no secret in any log line of the CLI or the operator
    cli()
