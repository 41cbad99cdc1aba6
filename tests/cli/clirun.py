"""Helpers for tests that run the real `kafkaops` entry point in a subprocess (as a user would)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafkaops.testing.fake_cluster import FakeClusterDouble

REPO = Path(__file__).resolve().parents[2]
EXAMPLES_DEV = REPO / "examples" / "clusters" / "dev"


def kafkaops_command() -> list[str]:
    script = Path(sys.executable).with_name("kafkaops")
    return [str(script)] if script.exists() else [sys.executable, "-m", "kafkaops"]


@dataclass(frozen=True)
class Ran:
    code: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def lines(self) -> list[str]:
        return self.stdout.splitlines()

    def __str__(self) -> str:  # for assertion messages
        return f"exit {self.code} after {self.seconds:.2f}s\n--- stdout\n{self.stdout}--- stderr\n{self.stderr}"


def isolated_env(tmp: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a run that touches neither .kafkaops/ here nor ~/.config/kafkaops."""
    env = dict(os.environ)
    env.update({"KAFKAOPS_STATE": str(tmp / "state.json"), "KAFKAOPS_CONFIG_DIR": str(tmp / "config"),
                "NO_COLOR": "1"})
    env.update(extra or {})
    return env


def run_kafkaops(*args: str, tmp: Path, env: Mapping[str, str] | None = None, timeout: float = 120) -> Ran:
    started = time.monotonic()
    done = subprocess.run([*kafkaops_command(), *args], capture_output=True, text=True, timeout=timeout,
                          env=isolated_env(tmp, env), stdin=subprocess.DEVNULL)
    ran = Ran(done.returncode, done.stdout, done.stderr, time.monotonic() - started)
    print(f"kafkaops {' '.join(args)}: exit {ran.code} in {ran.seconds:.2f}s")  # the measured figure (pytest -s)
    return ran


@contextlib.contextmanager
def served_double(**options: Any) -> Iterator[FakeClusterDouble]:
    """The fake cluster double served from a thread of its own, for a kafkaops subprocess to reach."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    double = FakeClusterDouble(**{"brokers": 1, "tick_interval": None, **options})
    asyncio.run_coroutine_threadsafe(double.start(), loop).result(10)
    double.loop_for_tests = loop  # tests drive the double (stop/start brokers) on its own loop
    try:
        yield double
    finally:
        asyncio.run_coroutine_threadsafe(double.stop(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
