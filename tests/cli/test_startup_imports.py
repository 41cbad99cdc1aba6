"""No test double (kafkaops.testing) and no pyspark/pyarrow on the startup path of `kafkaops plan`,
`apply` and `run`: the plain install does not ship them, and they cost start-up time. Checked with
`python -X importtime` on the real commands (plan/apply) and on the modules `run` imports. The SCRAM
library (scramp, which imports asn1crypto: ~30 ms) is imported only by a SCRAM login, so a plaintext
plan or apply does without it. jsonschema and referencing (~70 ms) are imported only when a
document has a schema error: valid documents pass the compiled predicate (resources/fastschema.py,
compiled from schemas whose $refs resources/schemas.py inlines itself) and never need them; an
invalid one still gets jsonschema's every error, named by field."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from clirun import EXAMPLES_DEV, isolated_env

FORBIDDEN = ("kafkaops.testing", "pyspark", "pyarrow")
ONLY_FOR_SCRAM = ("scramp", "asn1crypto")


def jsonschema_modules(names: set[str]) -> list[str]:
    return sorted(n for n in names if n.split(".")[0] in ("jsonschema", "jsonschema_specifications", "referencing"))


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
    assert not jsonschema_modules(names), jsonschema_modules(names)


def test_a_schema_error_imports_jsonschema_and_names_the_field(tmp_path: Path) -> None:
    manifest = tmp_path / "bad.yaml"
    manifest.write_text("apiVersion: kafkaops.io/v1alpha1\nkind: KafkaTopic\nmetadata: {name: orders}\n"
                        "spec: {clusterRef: {name: dev}, partitions: three, replicationFactr: 1}\n")
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "kafkaops", "plan", "-f", str(manifest),
                           "--bootstrap-server", "127.0.0.1:1", "--retry-budget", "0"], capture_output=True, text=True,
                          timeout=120, env=isolated_env(tmp_path), stdin=subprocess.DEVNULL)
    names = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    messages = "\n".join(line for line in (done.stdout + done.stderr).splitlines() if not line.startswith("import time:"))
    assert done.returncode != 0, messages
    assert "jsonschema" in names, sorted(names)
    assert "spec.partitions" in messages and "spec.replicationFactr" in messages, messages


def test_run_imports_no_test_double_nor_spark(tmp_path: Path) -> None:
    # what `kafkaops run` imports before kopf.run (the command itself needs a Kubernetes API to go on)
    names = imported(["-c", "import kafkaops.cli.main, kopf, kafkaops.k8s.handlers, kafkaops.k8s.context"], tmp_path)
    assert "kopf" in names
    assert not {n for n in names if n.startswith(FORBIDDEN)}, sorted(n for n in names if n.startswith(FORBIDDEN))
