"""`make fleet-demo`: `kafkaops snapshot` and `kafkaops fleet plan` on examples/, on one machine.

It plays a platform team's week with the two example clusters:

1. Two Kafka clusters start (`kafkaops dev-cluster`, the fake cluster double, because the
   examples include ACLs and broker configs): dev with 3 brokers, prod with 9 (ids 0-8) in racks
   a, a, a, b, b, b, c, c, c (what examples/clusters/prod's ledger placement assumes).
2. Last week's version of the repository is applied to each with `kafkaops apply`: examples/
   as it is, less a few edits the repository has had since (dev's orders.dlq did not exist yet,
   prod's payments.fraud-scores had 6 partitions and analytics.sessions.v1 replication factor 2).
3. People change the clusters behind kafkaops' back: a retention override on prod's
   payments.transactions.v1 and dev's orders.events.v1, a topic nobody declares on each, an ACL
   binding of an undeclared principal with a `*` resource on prod, a broker default on dev.
4. `kafkaops snapshot` reads both clusters; `kafkaops fleet plan` compares them with
   examples/clusters under examples/policy.yaml: OUT/snapshots/ holds the snapshots, OUT/report/
   the outputs (report.html, summary.md and the Parquet datasets).

    python -m kafkaops.fleet.demo [--out fleet-demo]

Everything it starts is stopped at the end. docs/fleet-report.png is this run's report.html.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import subprocess
import sys
import tempfile
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from kafkaops.fleet.pipeline import Echo, FleetOptions, FleetResult, run
from kafkaops.kafka import (
    AclBinding,
    AclOperation,
    AclPermission,
    AdminClient,
    AlterConfigOp,
    ClientSettings,
    ConfigResource,
    NewTopic,
    PatternType,
    ResourceType,
    Results,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"
CLUSTERS: dict[str, tuple[str, ...]] = {
    "dev": ("--brokers", "3"),
    "prod": ("--brokers", "9", "--first-broker-id", "0", "--racks", "a,a,a,b,b,b,c,c,c"),
}


@dataclass(frozen=True)
class Edit:
    """How last week's repository differed from examples/: `spec` replaces fields of the
    document (cluster, kind, metadata.name); `spec=None` means the document did not exist yet."""

    cluster: str
    kind: str
    name: str
    spec: dict[str, Any] | None


LAST_WEEK = (
    Edit("dev", "KafkaTopic", "orders.dlq", None),
    Edit("prod", "KafkaTopic", "payments.fraud-scores", {"partitions": 6}),
    Edit("prod", "KafkaTopic", "analytics.sessions.v1", {"replicationFactor": 2}),
)


def last_week(target: Path) -> Path:
    """examples/clusters as it was applied last week (LAST_WEEK's edits), written under target."""
    edits = {(e.cluster, e.kind, e.name): e for e in LAST_WEEK}
    source = EXAMPLES / "clusters"
    for path in sorted(source.rglob("*.yaml")):
        cluster = path.relative_to(source).parts[0]
        kept = []
        for doc in yaml.safe_load_all(path.read_text()):
            edit = edits.get((cluster, doc.get("kind"), doc.get("metadata", {}).get("name")))
            if edit is not None and edit.spec is None:
                continue
            if edit is not None:
                doc["spec"].update(edit.spec)
            kept.append(doc)
        out = target / path.relative_to(source)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(yaml.safe_dump_all(kept, sort_keys=False))
    return target


async def change_behind_kafkaops_back(bootstrap: dict[str, str]) -> list[str]:
    """What people do with kafka-configs.sh and kafka-acls.sh: the report must show all of it."""
    done = []
    dev = AdminClient(ClientSettings.create(bootstrap["dev"]))
    prod = AdminClient(ClientSettings.create(bootstrap["prod"]))
    await dev.start()
    await prod.start()
    try:
        for admin, cluster, topic, value in ((prod, "prod", "payments.transactions.v1", "604800000"),
                                             (dev, "dev", "orders.events.v1", "86400000")):
            _check(await admin.incremental_alter_configs(
                {ConfigResource.topic(topic): [AlterConfigOp("retention.ms", value)]}))
            done.append(f"{cluster}: retention.ms={value} on {topic}")
        _check(await dev.incremental_alter_configs(
            {ConfigResource.broker(): [AlterConfigOp("log.retention.ms", "3600000")]}))
        done.append("dev: broker default log.retention.ms=3600000")
        for admin, cluster, topic in ((prod, "prod", "payments.backfill-2026-10"), (dev, "dev", "scratch.load-test")):
            _check(await admin.create_topics([NewTopic(topic, 3, 1)]))
            done.append(f"{cluster}: topic {topic} (replication factor 1)")
        _check(await prod.create_acls([AclBinding(ResourceType.TOPIC, "*", PatternType.LITERAL,
                                                  "User:legacy-reporting", "*", AclOperation.READ,
                                                  AclPermission.ALLOW)]))
        done.append("prod: User:legacy-reporting may Read every topic (resource *)")
    finally:
        await dev.close()
        await prod.close()
    return done


def _check(results: Results[Any, Any]) -> None:
    if failed := results.failed():
        raise RuntimeError(f"the demo's own change failed: {failed}")


def _kafkaops(*args: str, echo: Echo) -> None:
    """Runs one kafkaops command; echoes it and its closing line (the full output on failure)."""
    echo("$ kafkaops " + " ".join(args))
    result = subprocess.run([sys.executable, "-m", "kafkaops", *args], capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"kafkaops {args[0]} failed (exit {result.returncode}):\n{result.stdout}{result.stderr}")
    lines = [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]
    if lines:
        echo(f"  {lines[-1]}")


def run_demo(out: Path, echo: Echo = print, spark: SparkSession | None = None) -> FleetResult:
    """The whole demo; answers `kafkaops fleet plan`'s result (its outputs are under out)."""
    # the test double (a source checkout's `dev` install), imported only when the demo runs
    from kafkaops.testing.stack import start_dev_cluster

    with ExitStack() as stack:
        work = Path(tempfile.mkdtemp(prefix="kafkaops-fleet-demo-"))
        stack.callback(shutil.rmtree, work, True)
        bootstrap = {}
        for name, options in CLUSTERS.items():
            server = start_dev_cluster(*options)
            stack.callback(server.stop)
            bootstrap[name] = server.url.split(",")[0]  # one is enough: the others are discovered
            echo(f"cluster {name}: {server.url} ({' '.join(options)})")
        deployed = last_week(work / "last-week")
        for name in CLUSTERS:
            _kafkaops("apply", "-f", str(deployed / name), "--bootstrap-server", bootstrap[name], "--yes",
                      "--no-state", echo=echo)
        echo("changed behind kafkaops' back:")
        for line in asyncio.run(change_behind_kafkaops_back(bootstrap)):
            echo(f"  {line}")
        snapshots = out / "snapshots"
        for name in CLUSTERS:
            _kafkaops("snapshot", "--bootstrap-server", bootstrap[name], "--cluster", name, "--output-dir", str(snapshots),
                      echo=echo)
    desired = EXAMPLES / "clusters"
    policy = EXAMPLES / "policy.yaml"
    report = out / "report"
    options = FleetOptions([_shown(desired)], _shown(snapshots), _shown(report), policy=_shown(policy))
    echo(f"$ kafkaops fleet plan -f {options.desired[0]} --observed {options.observed} --output-dir {options.out} "
         f"--policy {options.policy}")
    return run(options, echo=lambda line: echo(f"  {line}"), spark=spark)


def _shown(path: Path) -> str:
    """path relative to the working directory when it is under it (what a user would type)."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="fleet-demo", help="where the snapshots and the report go (replaced)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    result = run_demo(out)
    print(result.summary())
    print(f"report: {out / 'report' / 'report.html'}  summary: {out / 'report' / 'summary.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
