"""`kafkaops dev-kube`: run the Kubernetes API emulator (a TEST DOUBLE) for kubectl and the operator.

Like `kafkaops dev-cluster` for Kafka: it serves plain HTTP on 127.0.0.1, writes a kubeconfig,
prints how to use it, and runs until Ctrl-C or SIGTERM. It starts with the built-in API groups
only (and the namespaces default, kube-system, kube-public, kube-node-lease): install the CRDs
as on a real cluster, `kubectl apply -f crds/`. The first line on stdout is the API URL.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

import click

from kafkaops.cli.extras import require_extra, require_test_doubles

DEFAULT_KUBECONFIG = Path(".kafkaops") / "dev-kube.kubeconfig"


async def _serve(port: int, kubeconfig: Path) -> None:
    from kafkaops.testing.k8s_emulator import KubernetesApiEmulator

    api = KubernetesApiEmulator(port=port, kopf_peering=False)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    async with api:
        path = api.write_kubeconfig(kubeconfig).resolve()
        click.echo(api.url)
        sys.stdout.flush()
        click.echo(
            f"Kubernetes API emulator (test double) on {api.url}, built-in API groups only; kubeconfig: {path}\n"
            f"  export KUBECONFIG={path}\n"
            f"  kubectl apply -f crds/        # then the kafkaops.io kinds are served\n"
            "Ctrl-C stops it (its objects live in memory and go with it).",
            err=True,
        )
        await stop.wait()
    click.echo("Kubernetes API emulator stopped", err=True)


@click.command("dev-kube")
@click.option("--port", type=click.IntRange(min=0, max=65535), default=18443, show_default=True,
              help="Port on 127.0.0.1; 0: a free port.")
@click.option("--kubeconfig", type=click.Path(dir_okay=False, path_type=Path), default=DEFAULT_KUBECONFIG,
              show_default=True, help="Where to write the kubeconfig pointing at the emulator.")
def dev_kube(port: int, kubeconfig: Path) -> None:
    """Run a Kubernetes API emulator (a TEST DOUBLE) on 127.0.0.1 until Ctrl-C.

    \b
    Examples:
      kafkaops dev-kube &                  # then: export KUBECONFIG=.kafkaops/dev-kube.kubeconfig
      kubectl apply -f crds/

    Prints the API URL first, then how to point kubectl at it. Built-in API groups only until
    CRDs are applied, as on a real server.
    """
    require_test_doubles("dev-kube")
    require_extra("dev-kube", "dev")
    try:
        asyncio.run(_serve(port, kubeconfig))
    except KeyboardInterrupt:
        pass
    except OSError as exc:
        raise click.ClickException(f"cannot listen on 127.0.0.1:{port}: {exc}") from exc
