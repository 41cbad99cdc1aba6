"""`kafkaops elect-leaders` against the fake cluster double (noida has one broker: nothing to elect)."""

from __future__ import annotations

import asyncio
import json

from click.testing import CliRunner

from kafkaops.cli.main import cli
from kafkaops.kafka import AdminClient, NewTopic

from test_plan_apply_cli import fake_cluster


def run(*args: str):
    return CliRunner().invoke(cli, ["elect-leaders", *args])


def imbalance(double, bootstrap: str) -> None:
    """Broker 1 restarts: its partitions are led elsewhere and leadership stays put."""
    async def create() -> None:
        async with AdminClient.connect(bootstrap) as admin:
            await admin.create_topics([NewTopic("orders", 6, 3), NewTopic("other", 3, 3)])
    asyncio.run(create())
    asyncio.run_coroutine_threadsafe(_bounce(double), double_loop(double)).result(10)


async def _bounce(double) -> None:
    await double.stop_broker(1)
    await double.start_broker(1)


def double_loop(double):
    return double.loop_for_tests


def test_elects_imbalanced_partitions_then_finds_nothing_to_do() -> None:
    with fake_cluster(tick_interval=0.02) as double:
        imbalance(double, double.bootstrap)
        first = run("--bootstrap-server", double.bootstrap, "--topics", "^orders$", "-o", "json")
        assert first.exit_code == 0, first.output
        report = json.loads(first.stdout)["partitions"]
        assert report and all(p["topic"] == "orders" and p["preferred"] == 1 and p["outcome"] == "elected" for p in report)
        text = run("--bootstrap-server", double.bootstrap)
        assert text.exit_code == 0 and "elected" in text.stdout and "other-" in text.stdout
        again = run("--bootstrap-server", double.bootstrap)
        assert again.exit_code == 0 and "nothing to elect" in again.stdout


def test_a_cluster_without_elect_leaders_is_a_clear_error() -> None:
    with fake_cluster(tick_interval=0.02, disabled_apis={43}) as double:
        imbalance(double, double.bootstrap)
        result = run("--bootstrap-server", double.bootstrap)
        assert result.exit_code == 1 and "UnsupportedFeature" in result.stderr and "ElectLeaders" in result.stderr
