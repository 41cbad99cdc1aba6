"""`kafkaops dev-cluster`: run the fake multi-broker Kafka cluster (a TEST DOUBLE).

The first line on stdout is the bootstrap servers (flushed at once), so a
script or test can start the command, read one line and connect. It runs
until Ctrl-C or SIGTERM and then stops its listeners cleanly.
"""

from __future__ import annotations

import asyncio
import secrets
import signal
import sys
from typing import TYPE_CHECKING, Any

import click

from kafkaops.cli.extras import require_test_doubles

if TYPE_CHECKING:  # the test double is imported only when the command runs (the `dev` extra)
    from kafkaops.testing.fake_cluster import FakeClusterDouble


def at_least(low: float) -> Any:
    """A bound check (an IntRange/FloatRange would print its range in --help)."""

    def check(_ctx: click.Context, param: click.Parameter, value: float) -> float:
        if value < low:
            raise click.BadParameter(f"{value} is below {low}", param=param)
        return value

    return check


def _racks(value: str | None) -> list[str] | None:
    if not value:
        return None
    racks = [r.strip() for r in value.split(",") if r.strip()]
    return racks or None


async def _serve(cluster: FakeClusterDouble, control_port: int | None) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    async with cluster:
        control = None
        if control_port is not None:
            from kafkaops.testing.fake.control import control_server

            control = await control_server(cluster, control_port).start()
        click.echo(cluster.bootstrap)
        if control is not None:
            click.echo(control.url)  # the second line: the fault-injection endpoint (docs/reliability.md)
        if cluster.sasl_listener is not None:
            click.echo(cluster.sasl_bootstrap)  # then the SASL_PLAINTEXT listeners
        sys.stdout.flush()
        state = cluster.state
        click.echo(
            f"fake Kafka cluster (test double): {len(cluster.brokers)} brokers, mode {state.mode}, "
            f"cluster id {cluster.cluster_id}, controller {cluster.controller_id}. Ctrl-C stops it.",
            err=True,
        )
        await stop.wait()
        if control is not None:
            await control.stop()
    click.echo("fake Kafka cluster stopped", err=True)


def _sasl_users(param: click.Parameter, values: tuple[str, ...]) -> dict[str, str]:
    users: dict[str, str] = {}
    for value in values:
        name, colon, password = value.partition(":")
        if not name or not colon or not password:
            raise click.BadParameter("expected NAME:PASSWORD (both non-empty)", param=param)
        users[name] = password
    return users


def cluster_seed(port: int) -> int:
    """Each dev cluster gets its own cluster id (and placement): derived from its first port, so the
    same command gives the same id again; random with --port 0. Snapshots of two clusters then
    never look like one."""
    return port if port else secrets.randbelow(2**31)


@click.command("dev-cluster")
@click.option("--brokers", type=int, callback=at_least(1), default=3, metavar="N", help="Number of brokers [3].")
@click.option("--port", type=int, callback=at_least(0), default=19092, metavar="PORT",
              help="First broker port, then +1 each; 0: free ports [19092].")
@click.option("--racks", default=None, metavar="LIST", help="Rack names, assigned round-robin (a,b,c).")
@click.option("--first-broker-id", type=int, callback=at_least(0), default=1, metavar="N",
              help="The first broker id (Strimzi: 0) [1].")
@click.option("--mode", type=click.Choice(["kraft", "zk"]), default="kraft", help="Metadata mode [kraft].")
@click.option("--tick-interval", type=float, callback=at_least(0), default=0.1, metavar="SEC",
              help="Seconds per virtual tick (moves); 0: none [0.1].")
@click.option("--no-acls", is_flag=True, help="No authorizer (ACL calls: SECURITY_DISABLED).")
@click.option("--control-port", type=int, callback=lambda c, p, v: v if v is None else at_least(0)(c, p, v),
              default=None, metavar="PORT", help="Serve fault hooks over HTTP (docs/reliability.md); 0: free port.")
@click.option("--sasl-port", type=int, callback=lambda c, p, v: v if v is None else at_least(0)(c, p, v),
              default=None, metavar="PORT", help="Add SASL_PLAINTEXT listeners from PORT; 0: free.")
@click.option("--sasl-user", "sasl_users", multiple=True, callback=lambda c, p, v: _sasl_users(p, v),
              envvar="KAFKAOPS_DEV_SASL_USERS", metavar="USER:PW",
              help="SASL on every listener; or $KAFKAOPS_DEV_SASL_USERS.")
def dev_cluster(brokers: int, port: int, racks: str | None, first_broker_id: int, mode: str, tick_interval: float,
                no_acls: bool, control_port: int | None, sasl_port: int | None, sasl_users: dict[str, str]) -> None:
    """Run a fake multi-broker Kafka cluster (a TEST DOUBLE) until Ctrl-C.

    \b
    Examples:
      kafkaops dev-cluster &                    # 3 brokers on 127.0.0.1:19092-19094
      kafkaops dev-cluster --brokers 9 --port 0 --racks a,b,c --first-broker-id 0
      KAFKAOPS_DEV_SASL_USERS=ops:s3cret kafkaops dev-cluster   # SASL on every listener
      kafkaops dev-cluster --sasl-port 19192    # + SASL_PLAINTEXT on 19192-19194

    Prints the bootstrap, then the control URL and SASL bootstrap if asked.
    """
    require_test_doubles("dev-cluster")
    from kafkaops.testing.fake_cluster import FakeClusterDouble
    from kafkaops.testing.sasl_double import SaslServerDouble

    cluster = FakeClusterDouble(
        brokers,
        racks=_racks(racks),
        first_broker_id=first_broker_id,
        mode=mode,  # type: ignore[arg-type]
        base_port=port,
        seed=cluster_seed(port),
        tick_interval=tick_interval or None,
        acls_enabled=not no_acls,
        sasl=SaslServerDouble(sasl_users, mechanisms=("SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN")) if sasl_users else None,
        sasl_port=sasl_port,
    )
    try:
        asyncio.run(_serve(cluster, control_port))
    except KeyboardInterrupt:
        pass
    except OSError as exc:
        raise click.ClickException(f"cannot listen: {exc}") from exc
