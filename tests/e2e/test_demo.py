"""`make demo` keeps working: it starts its own Kafka, API emulator and operator, and every
example becomes Ready."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest


def test_demo_ends_with_every_example_ready() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KAFKAOPS_DEMO_BOOTSTRAP")}
    result = subprocess.run([sys.executable, "-m", "kafkaops.demo", "--timeout", "90"], capture_output=True,
                            text=True, timeout=180, env=env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "every example is Ready" in result.stdout
    assert "14/14 Ready" in result.stdout and "stopped everything it started" in result.stdout
    if shutil.which("kubectl") is None:
        assert "printed by the demo" in result.stdout
        pytest.skip("no kubectl on the PATH: the demo printed its own table (checked); kubectl's is not")
    # The final table is kubectl's own: `kubectl get kafkaops -A`, one block per kind with its columns.
    assert "$ kubectl get kafkaops -A" in result.stdout
    for header in ("NAMESPACE   NAME", "PARTITIONS", "PRINCIPAL", "BOOTSTRAP"):
        assert header in result.stdout
    for name in ("kafkacluster.kafkaops.io/dev", "kafkatopic.kafkaops.io/orders.events.v1",
                 "kafkaacl.kafkaops.io/orders-service", "kafkabrokerconfig.kafkaops.io/dev-defaults"):
        assert name in result.stdout
