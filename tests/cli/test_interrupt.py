"""Ctrl-C and SIGTERM during `kafkaops apply` (a subprocess, signalled with os.kill) while a replica
change moves partitions on the fake cluster double (slowed down: ~4 s per partition): nothing new is
sent, the report says what was applied and what is still moving and how to follow it, the state
file keeps the throttle record, exit 130 (SIGTERM: 143); a second Ctrl-C exits at once. The same
apply run again finishes the moves and removes the throttle."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from clirun import isolated_env, kafkaops_command, run_kafkaops, served_double

from kafkaops.kafka import AdminClient
from kafkaops.testing.fake_cluster import FaultDouble

API = "kafkaops.io/v1alpha1"
THROTTLE = 10 * 1024 * 1024
BOUND = 10.0  # seconds from the signal to the exit (generous: requests in flight answer within ms here)


def manifests(path: Path, bootstrap: str, replication_factor: int) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    docs: list[dict[str, Any]] = [
        {"apiVersion": API, "kind": "KafkaCluster", "metadata": {"name": "main"},
         "spec": {"bootstrapServers": bootstrap.split(","), "replicationThrottle": THROTTLE}},
        {"apiVersion": API, "kind": "KafkaTopic", "metadata": {"name": "moving"},
         "spec": {"clusterRef": {"name": "main"}, "partitions": 6, "replicationFactor": replication_factor}},
    ]
    (path / "topics.yaml").write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return path


class Running:
    """`kafkaops apply` in the background; its stderr collected line by line."""

    def __init__(self, args: list[str], tmp: Path) -> None:
        self.proc = subprocess.Popen([*kafkaops_command(), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     stdin=subprocess.DEVNULL, text=True, env=isolated_env(tmp))
        self.stderr: list[str] = []
        self.moving = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line)
            if line.startswith("moving (main)") and line.rstrip().endswith(" moving"):  # partitions in flight
                self.moving.set()

    def finish(self) -> tuple[int, list[str], float]:
        started = time.monotonic()
        assert self.proc.stdout is not None
        stdout = self.proc.stdout.read()  # stderr belongs to the reader thread
        self.proc.wait(60)
        self._reader.join(10)
        return self.proc.returncode, stdout.splitlines(), time.monotonic() - started


def throttle_owners(state_file: Path) -> list[str]:
    if not state_file.exists():
        return []
    data = json.loads(state_file.read_text())
    return [owner for section in data.get("clusters", data).values() if isinstance(section, dict)
            for owner in (section.get("owners", section) or {}) if owner.startswith("reassignment/throttle")]


async def _replication_factor(bootstrap: str) -> set[int]:
    async with AdminClient.connect(bootstrap) as admin:
        meta = await admin.metadata(["moving"])
        return {len(p.replicas) for p in meta.topics["moving"].partitions}


@pytest.fixture
def slow_cluster():
    with served_double(brokers=3, tick_interval=0.05, reassignment_step_bytes=128 * 1024) as cluster:
        yield cluster


def start_move(tmp_path: Path, bootstrap: str) -> Running:
    first = run_kafkaops("apply", "-f", str(manifests(tmp_path / "rf1", bootstrap, 1)), "--yes", tmp=tmp_path)
    assert first.code == 0, first
    running = Running(["apply", "-f", str(manifests(tmp_path / "rf3", bootstrap, 3)), "--yes"], tmp_path)
    assert running.moving.wait(30), "".join(running.stderr)
    return running


def test_ctrl_c_during_a_replica_change(tmp_path: Path, slow_cluster) -> None:
    state_file = tmp_path / "state.json"
    running = start_move(tmp_path, slow_cluster.bootstrap)
    os.kill(running.proc.pid, signal.SIGINT)
    code, lines, seconds = running.finish()
    print(f"exit {code} {seconds:.2f}s after SIGINT")
    report = "\n".join(lines)
    assert code == 130, report + "".join(running.stderr)
    assert seconds < BOUND
    assert "FAILED    KafkaTopic moving" in report
    assert ("Interrupted: interrupted while moving partitions: 0/6 moved, 6 still moving in the cluster (throttled; "
            "the throttle is recorded in the state file), 0 not started; run the same `kafkaops apply` again to "
            "finish (it also removes the throttle)") in report
    assert lines[-1] == (f"Apply interrupted (Ctrl-C): 0 applied, 1 not applied or not finished, 1 topic(s) with "
                         f"partitions still moving in the cluster; what was applied is recorded in {state_file}. Run "
                         "the same `kafkaops apply` again to finish (`kafkaops plan` shows what is left).")
    assert any("interrupted (Ctrl-C): sending nothing new" in line for line in running.stderr)
    assert throttle_owners(state_file), state_file.read_text()  # the throttle record survives for the next run

    again = run_kafkaops("apply", "-f", str(tmp_path / "rf3"), "--yes", tmp=tmp_path)
    assert again.code == 0, again
    assert asyncio.run(_replication_factor(slow_cluster.bootstrap)) == {3}
    assert not throttle_owners(state_file), state_file.read_text()


def test_sigterm_exits_143(tmp_path: Path, slow_cluster) -> None:
    running = start_move(tmp_path, slow_cluster.bootstrap)
    os.kill(running.proc.pid, signal.SIGTERM)
    code, lines, seconds = running.finish()
    assert code == 143 and seconds < BOUND, "\n".join(lines) + "".join(running.stderr)
    assert lines[-1].startswith("Apply terminated (SIGTERM): 0 applied, 1 not applied or not finished")


def test_a_second_ctrl_c_exits_at_once(tmp_path: Path) -> None:
    create_topics = 19
    with served_double(brokers=1) as cluster:
        cluster.inject(FaultDouble.slow(60, api_keys={create_topics}))  # the CreateTopics in flight hangs
        running = Running(["apply", "-f", str(manifests(tmp_path / "m", cluster.bootstrap, 1)), "--yes"], tmp_path)
        deadline = time.monotonic() + 30
        while not any(r.api_key == create_topics for r in list(cluster.requests)) and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(running.proc.pid, signal.SIGINT)  # waits (up to 15 s) for the hung request...
        while not any("sending nothing new" in line for line in running.stderr) and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(running.proc.pid, signal.SIGINT)  # ...unless interrupted again
        code, _lines, seconds = running.finish()
    print(f"exit {code} {seconds:.2f}s after the second SIGINT")
    assert code == 130 and seconds < 5, "".join(running.stderr)
    assert any("second interrupt: exiting at once" in line for line in running.stderr), "".join(running.stderr)


def test_ctrl_c_while_planning_changes_nothing(tmp_path: Path) -> None:
    # A listener that accepts and never answers: the plan waits for ApiVersions when Ctrl-C comes.
    import socket

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        path = manifests(tmp_path / "m", f"127.0.0.1:{port}", 1)
        proc = subprocess.Popen([*kafkaops_command(), "apply", "-f", str(path), "--yes", "--connect-timeout", "30"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=isolated_env(tmp_path))
        conn, _ = server.accept()  # the apply is connecting: it is planning
        with conn:
            os.kill(proc.pid, signal.SIGINT)
            stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130, stdout + stderr
    assert "kafkaops apply: interrupted (Ctrl-C) before anything was changed" in stderr
    assert "Traceback" not in stderr and "Aborted" not in stderr
