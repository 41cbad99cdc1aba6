"""No test double (kafkaops.testing) and no pyspark/pyarrow on the startup path of `kafkaops plan`,
`apply` and `run`: the plain install does not ship them, and they cost start-up time. Checked with
`python -X importtime` on the real commands (plan/apply) and on the modules `run` imports. The SCRAM
library (scramp, which imports asn1crypto: ~30 ms) is imported only by a SCRAM login, so a plaintext
plan or apply does without it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from clirun import EXAMPLES_DEV, isolated_env

FORBIDDEN = ("kafkaops.testing", "pyspark", "pyarrow")
ONLY_FOR_SCRAM = ("scramp", "asn1crypto")


def imported(args: list[str], tmp: Path) -> set[str]:
    done = subprocess.run([sys.executable, "-X", "importtime", *args], capture_output=True, text=True, timeout=120,
                          env=isolated_env(tmp), stdin=subprocess.DEVNULL)
    names = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "kafkaops.cli.main" in names or "kafkaops.k8s.handlers" in names, done.stderr[-2000:]
    return names


@pytest.mark.parametrize("command", ["plan", "apply"])
def test_plan_and_apply_import_no_test_double_nor_spark(command: str, tmp_path: Path) -> None:
    names = imported(["-m", "kafkaops", command, "-f", str(EXAMPLES_DEV), "--bootstrap-server", "127.0.0.1:1",
                      "--retry-budget", "0", "--yes"], tmp_path)
    assert "kafkaops.cli.plan_apply" in names and "kafkaops.kafka.admin" in names
    assert not {n for n in names if n.startswith(FORBIDDEN)}, sorted(n for n in names if n.startswith(FORBIDDEN))
    assert not {n for n in names if n.startswith(ONLY_FOR_SCRAM)}, sorted(n for n in names if n.startswith(ONLY_FOR_SCRAM))


def test_run_imports_no_test_double_nor_spark(tmp_path: Path) -> None:
    # what `kafkaops run` imports before kopf.run (the command itself needs a Kubernetes API to go on)
    names = imported(["-c", "import kafkaops.cli.main, kopf, kafkaops.k8s.handlers, kafkaops.k8s.context"], tmp_path)
    assert "kopf" in names
    assert not {n for n in names if n.startswith(FORBIDDEN)}, sorted(n for n in names if n.startswith(FORBIDDEN))
