"""`make demo`: start an embedded noida-db, create example topics through the
Batcher (one request for all of them), and print what the cluster then holds."""

from __future__ import annotations

import asyncio

from rich.console import Console
from rich.table import Table

from kafkaops.kafka import AdminClient, Batcher, ConfigResource, NewTopic
from kafkaops.testing.servers import start_noida

EXAMPLE_TOPICS = (
    NewTopic("orders.created", partitions=6, replication_factor=1, configs={"retention.ms": "604800000"}),
    NewTopic("orders.shipped", partitions=6, replication_factor=1, configs={"cleanup.policy": "compact"}),
    NewTopic("payments.authorized", partitions=3, replication_factor=1, configs={"min.insync.replicas": "1"}),
    NewTopic("analytics.clickstream", partitions=12, replication_factor=1, configs={"retention.ms": "86400000", "compression.type": "zstd"}),
)


async def run(bootstrap: str, console: Console) -> None:
    async with AdminClient.connect(bootstrap) as admin:
        batcher = Batcher(admin)
        results = await asyncio.gather(*(batcher.create_topic(t) for t in EXAMPLE_TOPICS))
        for topic, result in zip(EXAMPLE_TOPICS, results):
            outcome = "created" if result.ok else str(result.error)
            console.print(f"  {topic.name}: {outcome}")
        console.print(f"[dim]admin requests sent: {admin.requests_by_api}[/dim]")

        meta = await admin.metadata()
        names = sorted(n for n, t in meta.topics.items() if not t.internal)
        configs = await admin.describe_configs([ConfigResource.topic(n) for n in names])
        table = Table(title=f"cluster {meta.cluster_id} (controller {meta.controller_id}, {len(meta.brokers)} broker)")
        for column in ("topic", "partitions", "RF", "all led", "non-default configs"):
            table.add_column(column)
        for name in names:
            info = meta.topics[name]
            entries = configs[ConfigResource.topic(name)].value or {}
            custom = ", ".join(f"{k}={v.value}" for k, v in sorted(entries.items()) if not v.is_default)
            table.add_row(name, str(len(info.partitions)), str(info.replication_factor), "yes" if info.all_led else "no", custom)
        console.print(table)


def main() -> None:
    console = Console()
    console.print("[bold]kafkaops demo[/bold]: starting an embedded noida-db Kafka server ...")
    with start_noida() as server:
        console.print(f"noida-db listening on {server.bootstrap} (pid {server.pid}); creating example topics:")
        asyncio.run(run(server.bootstrap, console))
    console.print("noida-db stopped.")


if __name__ == "__main__":
    main()
