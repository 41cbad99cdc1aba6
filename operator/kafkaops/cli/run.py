"""`kafkaops run`: the Kubernetes operator (kopf), with kopf's usual scope and peering options."""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from pathlib import Path

import click

from kafkaops.cli.options import seconds

SERVICE_ACCOUNT_TOKEN = Path("/var/run/secrets/kubernetes.io/serviceaccount/token")
# resources of a kind handled at once: bounds a storm's memory (10,000 KafkaTopics at once: 159-167
# MiB, Ready sooner than with none; docs/cli.md, docs/benchmarks.md "One Kubernetes client"); 0: none
WORKER_LIMIT = 1000


def kube_config_problem(env: Mapping[str, str], home: Path, token: Path = SERVICE_ACCOUNT_TOKEN) -> str | None:
    """Why the operator could not reach Kubernetes at all (no in-cluster service account, no kubeconfig
    file), checked before kopf starts: kopf would otherwise retry forever with tracebacks."""
    if env.get("KUBERNETES_SERVICE_HOST") and token.is_file():
        return None
    configured = [p for p in env.get("KUBECONFIG", "").split(os.pathsep) if p]
    candidates = [Path(p).expanduser() for p in configured] or [home / ".kube" / "config"]
    if any(path.is_file() for path in candidates):
        return None
    tried = ", ".join(str(p) for p in candidates)
    return f"no Kubernetes configuration: set KUBECONFIG or run in a cluster (no file at {tried})"


@click.command("run")
@click.option("-A", "--all-namespaces", "clusterwide", is_flag=True, help="Watch every namespace.")
@click.option("-n", "--namespace", "namespaces", multiple=True, metavar="NS",
              help="Watch this namespace (repeatable; globs).")
@click.option("--standalone", is_flag=True, help="No peering: no other replica runs.")
@click.option("--peering", "peering_name", default=None, metavar="NAME",
              help="kopf peering object (HA: one replica works).")
@click.option("--priority", type=int, default=None, metavar="N",
              help="Peering priority [random, never tied].")
@click.option("--liveness", "liveness_endpoint", default=None, metavar="URL",
              help="Liveness probe URL (e.g. :8080/healthz).")
@click.option("--metrics-port", type=int, default=9090, metavar="PORT",
              help="Prometheus /metrics port; 0 disables [9090].")
@click.option("--retry-delay", type=float, default=15.0, metavar="SEC",
              help="Retry throttled/timed-out work after [15s].")
@click.option("--peering-lifetime", type=float, default=60.0, metavar="SEC",
              help="A dead leader's takeover delay [60s].")
@click.option("--deletion-window", type=float, callback=seconds(positive=True), default=300.0, metavar="SEC",
              help="Window of the topic-deletion cap [300s].")
@click.option("--sharding", type=click.Choice(["leases"]), default=None, envvar="KAFKAOPS_SHARDING",
              help="Spread KafkaClusters over all replicas.")
# sharding's knobs and the worker limit, from the environment (docs/cli.md): hidden to keep the
# help on one screen
@click.option("--lease-duration", type=float, default=15.0, envvar="KAFKAOPS_LEASE_DURATION", hidden=True)
@click.option("--lease-namespace", default=None, envvar="KAFKAOPS_LEASE_NAMESPACE", hidden=True)
@click.option("--worker-limit", type=click.IntRange(min=0), default=WORKER_LIMIT, envvar="KAFKAOPS_WORKER_LIMIT",
              hidden=True)
@click.option("--log-format", type=click.Choice(["json", "full", "plain"]), envvar="KAFKAOPS_LOG_FORMAT",
              default="full", help="Log format [full].")
@click.option("-v", "--verbose", is_flag=True, help="Debug logging.")
def run(clusterwide: bool, namespaces: tuple[str, ...], standalone: bool, peering_name: str | None,
        priority: int | None, liveness_endpoint: str | None, metrics_port: int, retry_delay: float,
        peering_lifetime: float, deletion_window: float, sharding: str | None, lease_duration: float,
        lease_namespace: str | None, worker_limit: int, log_format: str, verbose: bool) -> None:
    """Run the Kubernetes operator (in-cluster service account, else KUBECONFIG).

    \b
    Examples:
      kafkaops run -A --peering kafkaops        # every namespace, HA with a second replica
      kafkaops run -n kafka --standalone --log-format json

    Status follows kstatus (Ready/Reconciling/Stalled). Details: docs/cli.md.
    """
    if problem := kube_config_problem(os.environ, Path.home()):
        click.echo(f"Error: {problem}", err=True)
        raise SystemExit(1)
    import kopf

    import kafkaops.k8s.handlers  # noqa: F401  (registers the handlers)
    from kafkaops.k8s.context import OperatorSettings
    from kafkaops.k8s.logs import install as install_log_policy

    if not clusterwide and not namespaces:
        raise click.UsageError("give -A/--all-namespaces or at least one -n/--namespace")
    if sharding and peering_name:
        source = click.get_current_context().get_parameter_source("sharding")
        if source is not click.core.ParameterSource.ENVIRONMENT:
            raise click.UsageError("--sharding and --peering exclude each other: with sharding every replica is active")
        peering_name = None  # KAFKAOPS_SHARDING (the sharding component) overrides the manifests' --peering
    if lease_duration < 3:
        raise click.UsageError(f"--lease-duration {lease_duration:g}: at least 3 seconds")
    kopf.configure(verbose=verbose, log_format=kopf.LogFormat[log_format.upper()])
    install_log_policy(verbose)
    if priority is None:
        priority = secrets.randbelow(2**31 - 2) + 1
    from kafkaops.cli import collector

    collector.tune()  # full collections were a third of a 10,000-object storm (collector.py)
    memo = kopf.Memo(operator_settings=OperatorSettings(
        retry_delay=retry_delay, metrics_port=metrics_port or None, peering_lifetime=peering_lifetime,
        deletion_window=deletion_window, sharding=sharding, lease_duration=lease_duration,
        lease_namespace=lease_namespace or os.environ.get("POD_NAMESPACE") or "default",
        worker_limit=worker_limit or None))
    kopf.run(
        clusterwide=clusterwide,
        namespaces=list(namespaces),
        standalone=standalone or bool(sharding),  # sharded: every replica is active, no kopf peering
        peering_name=peering_name,
        priority=priority,
        liveness_endpoint=liveness_endpoint,
        memo=memo,
    )
