"""`make demo`: the operator end to end on one machine, on embedded defaults.

Without a Kubernetes context and a bootstrap server it starts everything itself: a Kafka cluster
(`kafkaops dev-cluster`, the fake 3-broker cluster double with an authorizer, because the examples
include ACLs and broker configs, which noida-db does not keep), the Kubernetes API emulator with
the CRDs installed, and the operator (`kafkaops run`). It applies examples/clusters/dev (the
KafkaCluster pointed at that Kafka), waits until every resource is Ready, prints them with
`kubectl get kafkaops -A` (the real kubectl when it is on the PATH, else a table like its output),
and shuts everything down.

Given KUBECONFIG (with the CRDs installed and the operator running there) and --bootstrap-server,
it uses those instead and starts nothing.

    python -m kafkaops.demo [--bootstrap-server HOST:PORT] [--timeout 120]
"""

from __future__ import annotations

import argparse
import copy
import os
import shutil
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from rich.table import Table

from kafkaops.resources.kinds import API_GROUP, API_VERSION, KAFKA_CLUSTER, PLURALS

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "clusters" / "dev"
GROUP, VERSION = API_GROUP, API_VERSION


def example_documents(bootstrap: str) -> list[dict[str, Any]]:
    docs = []
    for path in sorted(EXAMPLES.rglob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and doc.get("kind") in PLURALS:
                doc = copy.deepcopy(doc)
                if doc["kind"] == KAFKA_CLUSTER:
                    doc["spec"]["bootstrapServers"] = bootstrap.split(",")
                docs.append(doc)
    return docs


def _condition(obj: dict[str, Any], type_: str) -> dict[str, Any]:
    return next((c for c in (obj.get("status") or {}).get("conditions") or () if c.get("type") == type_), {})


def _age(timestamp: str | None) -> str:
    if not timestamp:
        return ""
    seconds = max(0, int(time.time() - time.mktime(time.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ")) + time.timezone))
    return f"{seconds}s" if seconds < 120 else f"{seconds // 60}m"


def run(kubeconfig: Path, bootstrap: str, timeout: float, console: Console) -> bool:
    from kubernetes import client, config

    api_client = config.new_client_from_config(config_file=str(kubeconfig))
    custom = client.CustomObjectsApi(api_client)
    core = client.CoreV1Api(api_client)
    docs = example_documents(bootstrap)
    for namespace in sorted({d["metadata"].get("namespace", "default") for d in docs}):
        if namespace not in {n.metadata.name for n in core.list_namespace().items}:
            core.create_namespace({"metadata": {"name": namespace}})
    for doc in docs:
        namespace = doc["metadata"].get("namespace", "default")
        custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURALS[doc["kind"]], doc)
    console.print(f"applied {len(docs)} resources from {EXAMPLES.relative_to(ROOT)} "
                  f"(KafkaCluster dev -> {bootstrap})")

    def current() -> list[dict[str, Any]]:
        return [item for doc_kind, plural in PLURALS.items()
                for item in custom.list_cluster_custom_object(GROUP, VERSION, plural)["items"]]

    deadline = time.monotonic() + timeout
    items = current()
    shown = -1
    while time.monotonic() < deadline:
        items = current()
        ready = sum(1 for i in items if _condition(i, "Ready").get("status") == "True")
        if ready != shown:
            console.print(f"  {ready}/{len(docs)} Ready")
            shown = ready
        if ready == len(docs):
            break
        time.sleep(0.5)
    if not _print_with_kubectl(kubeconfig, console):
        _print_table(items, console)
    all_ready = all(_condition(i, "Ready").get("status") == "True" for i in items) and len(items) == len(docs)
    console.print("[green]every example is Ready[/green]" if all_ready else "[red]not every example became Ready[/red]")
    return all_ready


def _print_with_kubectl(kubeconfig: Path, console: Console) -> bool:
    """`kubectl get kafkaops -A` with the real kubectl, if there is one; False if not (or it failed)."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        return False
    result = subprocess.run([kubectl, "get", "kafkaops", "-A"], capture_output=True, text=True, timeout=60,
                            env={**os.environ, "KUBECONFIG": str(kubeconfig)})
    if result.returncode != 0:
        console.print(f"kubectl get kafkaops -A failed: {result.stderr.strip()}")
        return False
    console.print("$ kubectl get kafkaops -A")
    console.print(result.stdout.rstrip(), markup=False, highlight=False)
    return True


def _print_table(items: list[dict[str, Any]], console: Console) -> None:
    """Without kubectl: the same resources in a table like `kubectl get kafkaops -A`."""
    table = Table(title="kubectl get kafkaops -A (no kubectl on the PATH: printed by the demo)",
                  title_justify="left")
    for column in ("NAMESPACE", "KIND", "NAME", "READY", "REASON", "PARTITIONS", "RF", "AGE"):
        table.add_column(column)
    for item in sorted(items, key=lambda i: (list(PLURALS).index(i["kind"]), i["metadata"]["name"])):
        ready = _condition(item, "Ready")
        status = item.get("status") or {}
        table.add_row(item["metadata"].get("namespace", ""), item["kind"], item["metadata"]["name"],
                      ready.get("status", "Unknown"), ready.get("reason", ""), str(status.get("partitions", "")),
                      str(status.get("replicationFactor", "")), _age(item["metadata"].get("creationTimestamp")))
    console.print(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap-server", default=os.environ.get("KAFKAOPS_DEMO_BOOTSTRAP"))
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args()
    console = Console() if sys.stdout.isatty() else Console(width=160)  # logs: no truncated columns
    kubeconfig = os.environ.get("KUBECONFIG")
    with ExitStack() as stack:
        if kubeconfig and args.bootstrap_server:
            console.print(f"using KUBECONFIG={kubeconfig} and Kafka at {args.bootstrap_server} "
                          "(the operator must run there)")
            bootstrap, config_path = args.bootstrap_server, Path(kubeconfig)
        else:
            # the test doubles (a source checkout's `dev` install), imported only when they start
            from kafkaops.testing.stack import start_dev_cluster, start_emulator, start_operator

            kafka = stack.enter_context(start_dev_cluster())
            console.print(f"Kafka: kafkaops dev-cluster (fake 3-broker cluster double) at {kafka.url}")
            api = stack.enter_context(start_emulator(ROOT / "crds"))
            console.print(f"Kubernetes: API emulator at {api.url}, CRDs from crds/ installed")
            operator = stack.enter_context(start_operator(api.kubeconfig))
            console.print(f"operator: kafkaops run -A (pid {operator.pid})")
            bootstrap, config_path = kafka.url, api.kubeconfig
        ok = run(config_path, bootstrap, args.timeout, console)
    console.print("stopped everything it started")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
