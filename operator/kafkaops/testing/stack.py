"""Processes for end-to-end runs (e2e tests, `make demo`, the operator benchmark): the Kubernetes
API emulator and the operator itself, each a child process started here and stopped by PID.

    with start_emulator(crds="crds/", namespaces=["kafka"]) as api:      # api.kubeconfig, api.url
        with start_operator(api.kubeconfig) as operator:                # `kafkaops run -A --standalone`
            ...
            operator.kill()   # SIGKILL: a crash, for restart tests
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass
class ChildProcess:
    name: str
    process: subprocess.Popen[bytes]
    directory: Path
    log_path: Path
    url: str = ""
    control_url: str = ""  # the fault hooks (--control-port), when asked for

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def kubeconfig(self) -> Path:
        return self.directory / "kubeconfig"

    def log(self, tail: int = 4000) -> str:
        return self.log_path.read_text(errors="replace")[-tail:] if self.log_path.exists() else ""

    def kill(self) -> None:
        """SIGKILL: the process gets no chance to clean up (a crash)."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self, remove: bool = True) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()
        if remove:
            shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> ChildProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_emulator(crds: str | Path | Sequence[str | Path] = "crds", namespaces: Sequence[str] = (),
                   timeout: float = 30.0, control: bool = False) -> ChildProcess:
    """The Kubernetes API emulator in its own process; its URL is the first line it prints
    (`control`: with its fault hooks on a free port, `control_url`)."""
    directory = Path(tempfile.mkdtemp(prefix="kafkaops-k8s-"))
    argv = [sys.executable, "-m", "kafkaops.testing.k8s_emulator", "--port", "0",
            "--kubeconfig", str(directory / "kubeconfig")]
    for path in [crds] if isinstance(crds, (str, Path)) else crds:
        argv += ["--crds", str(path)]
    for namespace in namespaces:
        argv += ["--namespace", namespace]
    if control:
        argv += ["--control-port", "0"]
    log_path = directory / "emulator.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL)
    child = ChildProcess("k8s-emulator", process, directory, log_path)
    assert process.stdout is not None
    deadline = time.monotonic() + timeout
    line = b""
    while time.monotonic() < deadline and not line:
        line = process.stdout.readline()
        if not line and process.poll() is not None:
            break
    if not line.strip():
        child.stop(remove=False)
        raise RuntimeError(f"the Kubernetes API emulator did not start:\n{child.log()}")
    child.url = line.decode().strip()
    if control:
        child.control_url = _control_line(child)
    return child


def _control_line(child: ChildProcess) -> str:
    assert child.process.stdout is not None
    line = child.process.stdout.readline()
    if not line.strip():
        child.stop(remove=False)
        raise RuntimeError(f"{child.name} printed no control URL:\n{child.log()}")
    return line.decode().strip()


def _start_kafkaops(name: str, args: list[str], directory: Path, env: dict[str, str] | None = None) -> ChildProcess:
    """`kafkaops NAME ARGS...` in its own process; `url` is the first line it prints on stdout."""
    log_path = directory / f"{name}.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen([sys.executable, "-m", "kafkaops", name, *args],
                                   stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL,
                                   env={**os.environ, **env} if env else None)
    child = ChildProcess(name, process, directory, log_path)
    assert process.stdout is not None
    line = process.stdout.readline() if process.poll() is None else b""
    if not line.strip():
        child.stop(remove=False)
        raise RuntimeError(f"kafkaops {name} did not start:\n{child.log()}")
    child.url = line.decode().strip()
    return child


def start_dev_cluster(*extra: str, timeout: float = 30.0, env: dict[str, str] | None = None) -> ChildProcess:
    """`kafkaops dev-cluster --port 0` (the fake cluster double, with ACLs) in its own process;
    `url` holds its bootstrap servers (the first line it prints); `env`: e.g.
    KAFKAOPS_DEV_SASL_USERS (SASL users, kept out of the command line)."""
    child = _start_kafkaops("dev-cluster", ["--port", "0", *extra],
                            Path(tempfile.mkdtemp(prefix="kafkaops-dev-cluster-")), env)
    if "--control-port" in extra:
        child.control_url = _control_line(child)
    return child


def start_dev_kube(directory: Path | None = None) -> ChildProcess:
    """`kafkaops dev-kube --port 0` (the API emulator for kubectl); `url` is the API URL, the
    kubeconfig is `directory/kubeconfig`."""
    directory = directory or Path(tempfile.mkdtemp(prefix="kafkaops-dev-kube-"))
    return _start_kafkaops("dev-kube", ["--port", "0", "--kubeconfig", str(directory / "kubeconfig")], directory)


def start_operator(kubeconfig: str | Path, *extra: str, log_path: Path | None = None,
                   env: dict[str, str] | None = None, peering: str | None = None,
                   priority: int | None = None, python: str | Path | None = None) -> ChildProcess:
    """`kafkaops run -A` against `kubeconfig`: standalone, or with kopf peering `peering` (HA, the
    highest `priority` leads); `extra`: more `kafkaops run` options; `python`: the interpreter
    (another venv's: the plain install), default this one."""
    directory = Path(tempfile.mkdtemp(prefix="kafkaops-operator-"))
    log_path = log_path or directory / "operator.log"
    scope = ["--peering", peering] if peering else ["--standalone"]
    if priority is not None:
        scope += ["--priority", str(priority)]
    argv = [str(python or sys.executable), "-m", "kafkaops", "run", "-A", *scope, "--metrics-port", "0", "--retry-delay", "1", *extra]
    environment = {**os.environ, "KUBECONFIG": str(kubeconfig), **(env or {})}
    with open(log_path, "ab") as log:
        process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   env=environment)
    return ChildProcess("operator", process, directory, log_path)
