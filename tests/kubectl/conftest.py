"""The README's kubectl commands, run literally with the real `kubectl` binary against
`kafkaops dev-kube` (the Kubernetes API emulator), `kafkaops dev-cluster` (the fake Kafka cluster
double) and the operator (`kafkaops run`), each a child process stopped by PID.

The module runs once per kubectl binary: `kubectl` (1.32 here) and the oldest and newest
beside it, `kubectl.1.27` and `kubectl.1.33` (the machines' kubectl package carries 1.27-1.33).
Skipped, visibly, where there is no kubectl binary.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kafkaops.testing.stack import ChildProcess, start_dev_cluster, start_dev_kube, start_operator

ROOT = Path(__file__).resolve().parents[2]
KUBECTL = shutil.which("kubectl")
KUBECTL_DIR = Path(os.path.realpath(KUBECTL)).parent if KUBECTL else None
VERSIONS = ("kubectl", "kubectl.1.27", "kubectl.1.33")


@dataclass
class Kubectl:
    """Runs `kubectl ...` command lines (as written in the README) with one kubectl binary."""

    binary: Path
    kubeconfig: Path
    cache_dir: Path
    cwd: Path = ROOT
    ran: list[str] = field(default_factory=list)

    def env(self) -> dict[str, str]:
        return {**os.environ, "KUBECONFIG": str(self.kubeconfig), "KUBECACHEDIR": str(self.cache_dir),
                "HOME": str(self.cache_dir)}

    def argv(self, command: str) -> list[str]:
        argv = shlex.split(command)
        assert argv[0] == "kubectl", command
        return [str(self.binary), *argv[1:]]

    def __call__(self, command: str, *, ok: bool = True, cwd: Path | None = None,
                 timeout: float = 90) -> subprocess.CompletedProcess[str]:
        self.ran.append(command)
        result = subprocess.run(self.argv(command), capture_output=True, text=True, timeout=timeout,
                                cwd=cwd or self.cwd, env=self.env())
        if ok:
            assert result.returncode == 0, f"{command}\n{result.stdout}\n{result.stderr}"
        else:
            assert result.returncode != 0, f"{command} should fail\n{result.stdout}"
        return result

    def watch(self, command: str) -> subprocess.Popen[str]:
        self.ran.append(command)
        return subprocess.Popen(self.argv(command), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                cwd=self.cwd, env=self.env())


@dataclass
class Stack:
    kubectl: Kubectl
    api: ChildProcess
    kafka: ChildProcess
    directory: Path
    operator: ChildProcess | None = None

    def start_operator(self) -> None:
        if self.operator is None:
            self.operator = start_operator(self.api.directory / "kubeconfig")

    def wait_until(self, command: str, expected: str, timeout: float = 120.0) -> str:
        """Polls `command` (not a README command) until its output contains `expected`."""
        deadline = time.monotonic() + timeout
        out = ""
        while time.monotonic() < deadline:
            result = subprocess.run(self.kubectl.argv(command), capture_output=True, text=True, timeout=30,
                                    cwd=ROOT, env=self.kubectl.env())
            out = result.stdout + result.stderr
            if expected in out:
                return out
            time.sleep(0.3)
        log = self.operator.log() if self.operator else ""
        raise AssertionError(f"timed out waiting for {expected!r} in `{command}`: {out}\noperator log:\n{log}")


@pytest.fixture(scope="module", params=VERSIONS)
def stack(request: pytest.FixtureRequest) -> Iterator[Stack]:
    if KUBECTL_DIR is None:
        pytest.skip("no kubectl binary on PATH: the kubectl end-to-end tests need one")
    binary = KUBECTL_DIR / request.param
    if not binary.exists():
        pytest.skip(f"{binary} does not exist (the kubectl package here has no {request.param})")
    directory = Path(tempfile.mkdtemp(prefix="kafkaops-kubectl-"))
    api = start_dev_kube(directory)
    kafka = start_dev_cluster()
    kubectl = Kubectl(binary, directory / "kubeconfig", directory / "cache")
    built = Stack(kubectl, api, kafka, directory)
    try:
        yield built
    finally:
        if built.operator is not None:
            built.operator.stop()
        kafka.stop()
        api.stop()
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def k(stack: Stack) -> Kubectl:
    return stack.kubectl
