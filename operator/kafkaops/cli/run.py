"""`kafkaops run`: the Kubernetes operator (kopf), with kopf's usual scope and peering options."""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from pathlib import Path

import click

SERVICE_ACCOUNT_TOKEN = Path("/var/run/secrets/kubernetes.io/serviceaccount/token")


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
@click.option("-n", "--namespace", "namespaces", multiple=True,
              help="Watch this namespace (repeatable; glob patterns as in kopf).")
@click.option("--standalone", is_flag=True, help="Do not use peering: assume no other operator runs.")
@click.option("--peering", "peering_name", default=None,
              help="The kopf peering object to coordinate replicas with (HA: only one replica reconciles).")
@click.option("--priority", type=int, default=None,
              help="This replica's peering priority (default: a random one per process, so replicas of one "
                   "Deployment never tie: kopf pauses replicas whose priority equals a live peer's).")
@click.option("--liveness", "liveness_endpoint", default=None,
              help="Serve a liveness probe, e.g. http://0.0.0.0:8080/healthz.")
@click.option("--metrics-port", type=int, default=9090, show_default=True,
              help="Serve Prometheus metrics on this port (/metrics); 0 disables.")
@click.option("--retry-delay", type=float, default=15.0, show_default=True,
              help="Seconds before a retriable failure (cluster down, throttled) is retried.")
@click.option("--log-format", type=click.Choice(["json", "full", "plain"]), envvar="KAFKAOPS_LOG_FORMAT",
              default="full", show_default=True, help="Log lines as JSON objects (for collectors), or text.")
@click.option("-v", "--verbose", is_flag=True, help="Debug logging.")
def run(clusterwide: bool, namespaces: tuple[str, ...], standalone: bool, peering_name: str | None,
        priority: int | None, liveness_endpoint: str | None, metrics_port: int, retry_delay: float, log_format: str,
        verbose: bool) -> None:
    """Run the operator: reconcile KafkaCluster, KafkaTopic, KafkaAcl and KafkaBrokerConfig resources.

    Connects to Kubernetes with the in-cluster service account, else KUBECONFIG. Give the scope
    with -A (all namespaces) or -n NAMESPACE. Two replicas with the same --peering name run
    highly available: one reconciles, the other waits. Status follows kstatus
    (Ready/Reconciling/Stalled), so `kubectl wait --for=condition=Ready kafkatopic/NAME` works.
    """
    if problem := kube_config_problem(os.environ, Path.home()):
        click.echo(f"Error: {problem}", err=True)
        raise SystemExit(1)
    import kopf

    import kafkaops.k8s.handlers  # noqa: F401  (registers the handlers)
    from kafkaops.k8s.context import OperatorSettings

    if not clusterwide and not namespaces:
        raise click.UsageError("give -A/--all-namespaces or at least one -n/--namespace")
    kopf.configure(verbose=verbose, log_format=kopf.LogFormat[log_format.upper()])
    if priority is None:
        priority = secrets.randbelow(2**31 - 2) + 1
    memo = kopf.Memo(operator_settings=OperatorSettings(retry_delay=retry_delay, metrics_port=metrics_port or None))
    kopf.run(
        clusterwide=clusterwide,
        namespaces=list(namespaces),
        standalone=standalone,
        peering_name=peering_name,
        priority=priority,
        liveness_endpoint=liveness_endpoint,
        memo=memo,
    )
