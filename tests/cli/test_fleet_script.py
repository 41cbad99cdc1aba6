"""The script spark-submit runs (docs/fleet.md) is `kafkaops/cli/fleet.py` itself: it must run as a
file (spark-submit's way) and as `python -m kafkaops.cli.fleet`."""

from __future__ import annotations

import subprocess
import sys

import kafkaops.cli.fleet as fleet_cli


def test_runs_as_a_file_the_way_spark_submit_runs_it(tmp_path) -> None:
    done = subprocess.run([sys.executable, fleet_cli.__file__, "plan", "--help"], capture_output=True,
                          text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Usage: kafkaops fleet plan")


def test_runs_as_a_module(tmp_path) -> None:
    done = subprocess.run([sys.executable, "-m", "kafkaops.cli.fleet", "--help"], capture_output=True,
                          text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "plan" in done.stdout
