"""`kafkaops dev-cluster`: run the fake multi-broker Kafka cluster (a TEST DOUBLE).

The first line on stdout is the bootstrap servers (flushed at once), so a
script or test can start the command, read one line and connect. It runs
until Ctrl-C or SIGTERM and then stops its listeners cleanly.
"""

from __future__ import annotations

import asyncio
import signal
import sys

from typing import TYPE_CHECKING

import click

from kafkaops.cli.extras import require_test_doubles

if TYPE_CHECKING:
    from kafkaops.testing.fake_cluster import FakeClusterDouble


def _racks(value: str | None) -> list[str] | None:
    if not value:
        return None
    racks = [r.strip() for r in value.split(",") if r.strip()]
    return racks or None


async def _serve(cluster: FakeClusterDouble) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    async with cluster:
        click.echo(cluster.bootstrap)
        sys.stdout.flush()
        state = cluster.state
        click.echo(
            f"fake Kafka cluster (test double): {len(cluster.brokers)} brokers, mode {state.mode}, "
            f"cluster id {cluster.cluster_id}, controller {cluster.controller_id}. Ctrl-C stops it.",
            err=True,
        )
        await stop.wait()
    click.echo("fake Kafka cluster stopped", err=True)


@click.command("dev-cluster")
@click.option("--brokers", type=click.IntRange(min=1), default=3, show_default=True, help="Number of brokers.")
@click.option(
    "--port",
    type=click.IntRange(min=0, max=65535),
    default=19092,
    show_default=True,
    help="First broker port; brokers use consecutive ports. 0: a free port per broker.",
)
@click.option("--racks", default=None, help="Comma list of rack names, assigned to brokers round-robin.")
@click.option("--first-broker-id", type=click.IntRange(min=0), default=1, show_default=True,
              help="Broker ids count up from this one (Strimzi clusters start at 0).")
@click.option("--mode", type=click.Choice(["kraft", "zk"]), default="kraft", show_default=True)
@click.option(
    "--tick-interval",
    type=click.FloatRange(min=0),
    default=0.1,
    show_default=True,
    help="Seconds per virtual tick (reassignment progress); 0 disables the ticker.",
)
@click.option("--no-acls", is_flag=True, help="Run without an authorizer (ACL calls answer SECURITY_DISABLED).")
def dev_cluster(brokers: int, port: int, racks: str | None, first_broker_id: int, mode: str, tick_interval: float,
                no_acls: bool) -> None:
    """Run a fake multi-broker Kafka cluster (a test double) on 127.0.0.1.

    Prints the bootstrap servers first, then runs until Ctrl-C or SIGTERM.
    """
    require_test_doubles("dev-cluster")
    from kafkaops.testing.fake_cluster import FakeClusterDouble

    cluster = FakeClusterDouble(
        brokers,
        racks=_racks(racks),
        first_broker_id=first_broker_id,
        mode=mode,  # type: ignore[arg-type]
        base_port=port,
        tick_interval=tick_interval or None,
        acls_enabled=not no_acls,
    )
    try:
        asyncio.run(_serve(cluster))
    except KeyboardInterrupt:
        pass
    except OSError as exc:
        raise click.ClickException(f"cannot listen: {exc}") from exc
