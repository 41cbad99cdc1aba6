"""`kafkaops dev-cluster` gives each cluster its own cluster id (snapshots of two clusters must not
look like one): derived from the first port (the same command gives the same id again), random
with --port 0. Real subprocesses, stopped by PID."""

from __future__ import annotations

import asyncio
import subprocess
from contextlib import contextmanager
from collections.abc import Iterator

from clirun import kafkaops_command

from kafkaops.kafka import AdminClient
from kafkaops.testing.servers import free_port


@contextmanager
def dev_cluster(port: int) -> Iterator[str]:
    proc = subprocess.Popen([*kafkaops_command(), "dev-cluster", "--brokers", "1", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip()
    finally:
        proc.terminate()
        proc.wait(20)


async def _cluster_id(bootstrap: str) -> str:
    async with AdminClient.connect(bootstrap) as admin:
        return (await admin.describe_cluster()).cluster_id


def cluster_id(bootstrap: str) -> str:
    return asyncio.run(_cluster_id(bootstrap))


def test_each_dev_cluster_has_its_own_cluster_id() -> None:
    first, second = free_port(), free_port()
    with dev_cluster(first) as a, dev_cluster(second) as b, dev_cluster(0) as c, dev_cluster(0) as d:
        ids = [cluster_id(x) for x in (a, b, c, d)]
    assert len(set(ids)) == 4, ids
    with dev_cluster(first) as again:
        assert cluster_id(again) == ids[0]  # derived from the port: stable across restarts
