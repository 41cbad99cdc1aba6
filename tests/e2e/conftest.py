"""End-to-end: the real operator process (`kafkaops run`) against the Kubernetes API emulator
and a Kafka backend (noida-db, or the fake cluster double where noida lacks a feature).

Against a real Kubernetes cluster and Kafka when KAFKAOPS_E2E_KUBECONFIG and
KAFKAOPS_E2E_BOOTSTRAP are set (the operator must then already run there, with the CRDs
installed); the emulator-only tests are then skipped and say so.
"""

from __future__ import annotations

import os
import re
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from kafkaops.testing.servers import ServerProcess, start_noida
from kafkaops.testing.stack import ChildProcess, start_emulator, start_operator

ROOT = Path(__file__).resolve().parents[2]
GROUP, VERSION = "kafkaops.io", "v1alpha1"
REAL_KUBECONFIG = os.environ.get("KAFKAOPS_E2E_KUBECONFIG")
REAL_BOOTSTRAP = os.environ.get("KAFKAOPS_E2E_BOOTSTRAP")


class Kube:
    """A thin helper over the official client for the tests' own reads and writes."""

    def __init__(self, kubeconfig: str | Path, namespace: str) -> None:
        from kubernetes import client, config

        self.api_client = config.new_client_from_config(config_file=str(kubeconfig))
        self.custom = client.CustomObjectsApi(self.api_client)
        self.core = client.CoreV1Api(self.api_client)
        self.namespace = namespace

    def create(self, plural: str, body: dict[str, Any]) -> dict[str, Any]:
        return self.custom.create_namespaced_custom_object(GROUP, VERSION, self.namespace, plural, body)

    def get(self, plural: str, name: str) -> dict[str, Any] | None:
        from kubernetes.client.exceptions import ApiException

        try:
            return self.custom.get_namespaced_custom_object(GROUP, VERSION, self.namespace, plural, name)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def patch(self, plural: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        return self.custom.patch_namespaced_custom_object(GROUP, VERSION, self.namespace, plural, name, body)

    def delete(self, plural: str, name: str) -> None:
        self.custom.delete_namespaced_custom_object(GROUP, VERSION, self.namespace, plural, name)

    def list(self, plural: str) -> list[dict[str, Any]]:
        return self.custom.list_namespaced_custom_object(GROUP, VERSION, self.namespace, plural)["items"]

    def events(self) -> list[Any]:
        return self.core.list_namespaced_event(self.namespace).items


def condition(obj: dict[str, Any] | None, type_: str) -> dict[str, Any]:
    for item in ((obj or {}).get("status") or {}).get("conditions") or ():
        if item.get("type") == type_:
            return item
    return {}


def wait_until(check: Callable[[], Any], timeout: float = 30.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}; last: {last!r}")


def peers_settled(leader_candidates: list[ChildProcess], everyone: list[ChildProcess]) -> None:
    """kopf peering: every replica is up and one of `leader_candidates` works; a replica that sees a
    higher priority from its start stays paused silently, so the absence of a log line is the sign."""
    wait_until(lambda: all("Initial authentication has finished" in r.log(10**8) for r in everyone), timeout=120,
               what="every replica started")
    wait_until(lambda: any("Resuming operations after the pause" in r.log(10**8) for r in leader_candidates),
               timeout=60, what="a replica working")
    time.sleep(2)  # a peer's record is seen within a second of its start (kopf's peering keepalive)


def ready(kube: Kube, plural: str, name: str, reason: str | None = None) -> Callable[[], Any]:
    def check() -> Any:
        obj = kube.get(plural, name)
        cond = condition(obj, "Ready")
        generation = ((obj or {}).get("metadata") or {}).get("generation")
        ok = cond.get("status") == "True" and (obj or {}).get("status", {}).get("observedGeneration") == generation
        return obj if ok and (reason is None or cond.get("reason") == reason) else None
    return check


def admin_requests_by_api(metrics_port: int) -> dict[str, int]:
    """Admin requests the operator has sent, by Kafka API, summed over clusters: its own
    Prometheus counter (kafkaops_admin_requests_total) on 127.0.0.1:`metrics_port`."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5).read().decode()
    found: dict[str, int] = {}
    for api, value in re.findall(r'kafkaops_admin_requests_total\{api="([^"]+)",cluster="[^"]*"\} ([0-9.e+]+)', text):
        found[api] = found.get(api, 0) + int(float(value))
    return found


@contextmanager
def emulator_and_noida(needs_own_operator: str) -> Iterator[tuple[ChildProcess, ServerProcess]]:
    """The API emulator and noida-db for a test that starts (and kills) its own operator; such a
    test is skipped against a real cluster, saying why (`needs_own_operator`)."""
    if REAL_KUBECONFIG:
        pytest.skip(f"KAFKAOPS_E2E_KUBECONFIG is set: {needs_own_operator}")
    with start_noida() as noida, start_emulator(ROOT / "crds", namespaces=["kafka"]) as api:
        yield api, noida


@pytest.fixture(scope="module")
def emulator() -> Iterator[ChildProcess]:
    if REAL_KUBECONFIG:
        pytest.skip("KAFKAOPS_E2E_KUBECONFIG is set: the emulator-based e2e tests give way to the real cluster")
    with start_emulator(ROOT / "crds", namespaces=["kafka"]) as api:
        yield api


@pytest.fixture(scope="module")
def operator(emulator: ChildProcess) -> Iterator[ChildProcess]:
    process = start_operator(emulator.kubeconfig)
    yield process
    process.stop()
    if process.process.returncode not in (0, -15, None):
        print(process.log())


@pytest.fixture
def kube(emulator: ChildProcess) -> Kube:
    return Kube(emulator.kubeconfig, "kafka")


@pytest.fixture
def name() -> str:
    return f"e2e-{uuid.uuid4().hex[:8]}"
