"""`kafkaops elect-leaders`: a preferred leader election for the partitions led by another replica."""

from __future__ import annotations

import asyncio
import json
import re

import click

from kafkaops.cli.options import regex_option
from kafkaops.cli.targets import client_settings
from kafkaops.kafka import AdminClient
from kafkaops.kafka.errors import KafkaOpsError
from kafkaops.reconcile.leaders import Election, PartitionElection, elect_preferred


@click.command("elect-leaders")
@click.option("--bootstrap-server", required=True, help="HOST:PORT[,HOST:PORT...] of the cluster.")
@click.option("--command-config", type=click.Path(exists=True, dir_okay=False),
              help="Kafka client properties (security.protocol, sasl.*, ssl.*).")
@click.option("--topics", callback=regex_option, help="Only topics whose name matches this regular expression.")
@click.option("--output", "-o", type=click.Choice(["text", "json"]), default="text", show_default=True)
def elect_leaders(bootstrap_server: str, command_config: str | None, topics: re.Pattern[str] | None, output: str) -> None:
    """Move leadership back to each partition's preferred replica (the first in its assignment).

    Reads the cluster's metadata once, elects every partition (of the matching topics) whose
    leader is not its preferred replica in one ElectLeaders request, and reports each one:
    elected, not-needed, or failed with Kafka's reason. Exit 1 when any election failed or the
    cluster cannot do elections (ElectLeaders, API key 43).
    """
    try:
        elections, problem = asyncio.run(_run(bootstrap_server, command_config, topics))
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


async def _run(bootstrap: str, command_config: str | None,
               topics: re.Pattern[str] | None) -> tuple[list[PartitionElection], object]:
    async with AdminClient.connect(bootstrap, settings=client_settings(bootstrap, command_config)) as admin:
        return await elect_preferred(admin, topics)
