"""`kafkaops elect-leaders`: a preferred leader election for the partitions led by another replica."""

from __future__ import annotations

import asyncio
import json
import re

import click

from kafkaops.cli.options import connection_option_list, connection_overrides, regex_option, require
from kafkaops.cli.targets import client_settings
from kafkaops.kafka import AdminClient
from kafkaops.kafka.errors import KafkaOpsError
from kafkaops.reconcile.leaders import Election, PartitionElection, elect_preferred


@click.command("elect-leaders")
@click.option("--bootstrap-server", metavar="HOST:PORT", help="The cluster.")
@click.option("--command-config", type=click.Path(exists=True, dir_okay=False), metavar="FILE",
              help="Kafka client.properties (TLS, SASL).")
@click.option("--topics", callback=regex_option, metavar="REGEX", help="Only topics matching REGEX.")
@click.option("--output", "-o", type=click.Choice(["text", "json"]), default="text", help="text or json [text].")
@connection_option_list()
def elect_leaders(bootstrap_server: str | None, command_config: str | None, topics: re.Pattern[str] | None,
                  output: str, connect_timeout: float, retry_budget: float) -> None:
    """Move leadership back to each partition's preferred replica (first in its assignment).

    \b
    Examples:
      kafkaops elect-leaders --bootstrap-server kafka:9092
      kafkaops elect-leaders --bootstrap-server kafka:9092 --topics '^orders\\.' -o json

    One ElectLeaders request for every partition led by another replica; each is reported
    (elected, not-needed, failed). Exit 1 when any failed or elections are unsupported.
    """
    bootstrap_server = require(bootstrap_server, "--bootstrap-server")
    overrides = connection_overrides(connect_timeout, retry_budget)
    try:
        elections, problem = asyncio.run(_run(bootstrap_server, command_config, topics, overrides))
    except (KafkaOpsError, OSError, ValueError) as exc:
        click.echo(f"error: {exc}", err=True)
        raise SystemExit(1) from None
    failed = [e for e in elections if e.outcome is Election.FAILED]
    if output == "json":
        click.echo(json.dumps({
            "partitions": [{"topic": e.partition.topic, "partition": e.partition.partition, "preferred": e.preferred,
                            "leaderBefore": e.leader_before, "outcome": e.outcome.value, "reason": e.reason}
                           for e in elections],
            "problem": None if problem is None else {"reason": problem.reason, "message": problem.message},
        }, indent=2))
    else:
        for e in elections:
            colour = {Election.ELECTED: "green", Election.NOT_NEEDED: None, Election.FAILED: "red"}[e.outcome]
            reason = f" ({e.reason})" if e.reason else ""
            click.echo(click.style(f"{e.outcome.value:11} {e.partition}  leader {e.leader_before} -> preferred "
                                   f"{e.preferred}{reason}", fg=colour))
        if problem is not None:
            click.echo(click.style(f"error: {problem.reason}: {problem.message}", fg="red"), err=True)
        elif not elections:
            click.echo("every partition is led by its preferred replica: nothing to elect")
        else:
            done = sum(e.outcome is not Election.FAILED for e in elections)
            click.echo(f"{len(elections)} partition(s) not on their preferred leader: {done} done, {len(failed)} failed")
    raise SystemExit(1 if failed or problem is not None else 0)


async def _run(bootstrap: str, command_config: str | None, topics: re.Pattern[str] | None,
               overrides: dict[str, object]) -> tuple[list[PartitionElection], object]:
    settings = client_settings(bootstrap, command_config, **overrides)
    async with AdminClient.connect(bootstrap, settings=settings) as admin:
        return await elect_preferred(admin, topics)
