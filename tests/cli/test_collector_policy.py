"""`kafkaops apply` and `validate` keep what they loaded out of full garbage collections
(cli/collector.py): a real run of the command, in its own process, counts none while it loads,
plans and applies 5,000 new topics. With CPython's default policy the same run makes five, over
every loaded manifest (0.2 s of a 0.6 s apply: docs/benchmarks.md)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import yaml

from tests.cli.clirun import isolated_env

# the command, as the `kafkaops` script runs it, with the collector's full collections counted
# (not the policy's own: `tune()` collects once, on purpose, before it freezes)
COUNTING = """
import atexit, gc, sys
full = []
def count(phase, info):
    if phase == "start" and info["generation"] == 2:
        frame = sys._getframe(1)
        while frame is not None and not (frame.f_code.co_name == "tune" and frame.f_code.co_filename.endswith("collector.py")):
            frame = frame.f_back
        if frame is None:
            full.append(1)
gc.callbacks.append(count)
atexit.register(lambda: print(f"full collections: {len(full)}", file=sys.stderr))
from kafkaops.cli.main import main
sys.argv[0] = "kafkaops"
main()
"""


def write_topics(root: Path, prefix: str, count: int = 5000, files: int = 10) -> None:
    per_file = count // files
    for f in range(files):
        docs = [{"apiVersion": "kafkaops.io/v1alpha1", "kind": "KafkaTopic", "metadata": {"name": f"{prefix}.{i}"},
                 "spec": {"clusterRef": {"name": "c"}, "partitions": 1, "replicationFactor": 1,
                          "config": {"retention.ms": str(86_400_000 + i)}}}
                for i in range(f * per_file, (f + 1) * per_file)]
        (root / f"topics{f}.yaml").write_text(yaml.dump_all(docs, Dumper=yaml.CSafeDumper, sort_keys=False))


def full_collections(tmp: Path, *args: str) -> tuple[int, str]:
    done = subprocess.run([sys.executable, "-c", COUNTING, *args], capture_output=True, text=True, timeout=300,
                          env=isolated_env(tmp), stdin=subprocess.DEVNULL)
    found = re.search(r"full collections: (\d+)", done.stderr)
    assert found, done.stderr
    return int(found.group(1)), f"exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"


def test_apply_of_5000_topics_runs_no_full_collection(tmp_path: Path, noida, unique) -> None:
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    write_topics(manifests, unique)
    count, ran = full_collections(tmp_path, "apply", "--bootstrap-server", noida.bootstrap, "--yes", "-f",
                                  str(manifests))
    assert "5000 applied" in ran or "5,000 applied" in ran, ran
    assert count == 0, ran


def test_validate_of_5000_manifests_runs_no_full_collection(tmp_path: Path) -> None:
    write_topics(tmp_path, "v")
    count, ran = full_collections(tmp_path, "validate", str(tmp_path))
    assert count == 0, ran
